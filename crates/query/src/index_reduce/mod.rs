//! Riak 3's index reduce functions (`riak_kv_mapreduce:reduce_index_*`),
//! implemented natively over Eddy's JSON (design note 017, "Index
//! functions"). They work on 2i results with terms — entries
//! `[bucket, key, {attribute: value}]` ([`item`]) — extracting new
//! attributes ([`extract`]), filtering on them ([`filter`]) and
//! collecting across entries ([`collect`]).
//!
//! A phase's `arg` is read when the job is resolved ([`Reducer::new`]):
//! a bad one fails the phase before anything runs, with a message naming
//! the function and the parameter. Every function accepts its own output
//! again, as the executor's re-reduce gives it.

pub mod args;
pub mod collect;
pub mod extract;
pub mod filter;
pub mod hash;
pub mod item;

use serde_json::Value;

use args::Args;
use collect::{Collate, SortBy, ValueKind};
use extract::Extract;
use filter::Filter;

/// An index reduce function, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexFn {
    Identity,
    Sort,
    Max,
    Min,
    Union,
    CountBy,
    CollateResults,
    ExtractInteger,
    ExtractBinary,
    ExtractRegex,
    ExtractMask,
    ExtractHamming,
    ExtractHash,
    ExtractEncoded,
    ExtractBuckets,
    ExtractCoalesce,
    ApplyRange,
    ApplyRegex,
    ApplyMask,
}

/// Each function's name and its parameters, in Riak's tuple order.
const TABLE: &[(IndexFn, &str, &[&str])] = &[
    (IndexFn::Identity, "reduce_index_identity", &["attribute"]),
    (IndexFn::Sort, "reduce_index_sort", &["attribute"]),
    (IndexFn::Max, "reduce_index_max", &["attribute", "count"]),
    (IndexFn::Min, "reduce_index_min", &["attribute", "count"]),
    (IndexFn::Union, "reduce_index_union", &["attribute", "type"]),
    (
        IndexFn::CountBy,
        "reduce_index_countby",
        &["attribute", "type"],
    ),
    (
        IndexFn::CollateResults,
        "reduce_index_collateresults",
        &[
            "sort_attribute",
            "facet_attribute",
            "keep",
            "order",
            "count",
        ],
    ),
    (
        IndexFn::ExtractInteger,
        "reduce_index_extractinteger",
        &["input", "output", "keep", "pre_bytes", "int_size"],
    ),
    (
        IndexFn::ExtractBinary,
        "reduce_index_extractbinary",
        &["input", "output", "keep", "pre_bytes", "bin_size"],
    ),
    (
        IndexFn::ExtractRegex,
        "reduce_index_extractregex",
        &["input", "outputs", "keep", "regex"],
    ),
    (
        IndexFn::ExtractMask,
        "reduce_index_extractmask",
        &["input", "output", "keep", "mask"],
    ),
    (
        IndexFn::ExtractHamming,
        "reduce_index_extracthamming",
        &["input", "output", "keep", "comparator"],
    ),
    (
        IndexFn::ExtractHash,
        "reduce_index_extracthash",
        &["input", "output", "keep", "algorithm"],
    ),
    (
        IndexFn::ExtractEncoded,
        "reduce_index_extractencoded",
        &["input", "output", "keep"],
    ),
    (
        IndexFn::ExtractBuckets,
        "reduce_index_extractbuckets",
        &["input", "output", "keep", "buckets", "max_output"],
    ),
    (
        IndexFn::ExtractCoalesce,
        "reduce_index_extractcoalesce",
        &["inputs", "output", "keep", "delimiter"],
    ),
    (
        IndexFn::ApplyRange,
        "reduce_index_applyrange",
        &["input", "keep", "low", "high"],
    ),
    (
        IndexFn::ApplyRegex,
        "reduce_index_applyregex",
        &["input", "keep", "regex"],
    ),
    (
        IndexFn::ApplyMask,
        "reduce_index_applymask",
        &["input", "keep", "mask"],
    ),
];

/// The most entries `max`, `min` and `collateresults` may keep.
const COUNT_MAX: u64 = 1_000_000;

impl IndexFn {
    /// The function `name` names, if it is an index function.
    pub fn named(name: &str) -> Option<IndexFn> {
        TABLE
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(f, _, _)| *f)
    }

    pub fn name(self) -> &'static str {
        self.row().1
    }

    fn params(self) -> &'static [&'static str] {
        self.row().2
    }

    fn row(self) -> &'static (IndexFn, &'static str, &'static [&'static str]) {
        TABLE
            .iter()
            .find(|(f, _, _)| *f == self)
            .expect("every IndexFn has a row in TABLE")
    }
}

/// What a reduce call does, its arg read.
#[derive(Debug)]
enum Op {
    Identity(Option<String>),
    Sort(SortBy),
    Max(String, usize),
    Min(String, usize),
    Union(String, ValueKind),
    CountBy(String, ValueKind),
    Collate(Collate),
    Extract(Extract),
    Filter(Filter),
}

/// An index function with its arg read, ready to reduce.
#[derive(Debug)]
pub struct Reducer {
    op: Op,
    /// `reduce_phase_batch_size` from the arg, if given.
    pub batch: Option<usize>,
}

impl Reducer {
    /// Reads `arg` for `f`, or says what is wrong with it.
    pub fn new(f: IndexFn, arg: &Value) -> Result<Reducer, String> {
        let a = Args::parse(f.name(), f.params(), arg)?;
        let op = match f {
            IndexFn::Identity => Op::Identity(a.opt_attr(0)?),
            IndexFn::Sort => Op::Sort(SortBy::of(&a.attr(0)?)),
            IndexFn::Max => Op::Max(a.attr(0)?, a.count(1, 1, COUNT_MAX)? as usize),
            IndexFn::Min => Op::Min(a.attr(0)?, a.count(1, 1, COUNT_MAX)? as usize),
            IndexFn::Union => Op::Union(a.attr(0)?, kind(&a)?),
            IndexFn::CountBy => Op::CountBy(a.attr(0)?, kind(&a)?),
            IndexFn::CollateResults => Op::Collate(Collate {
                sort: a.attr(0)?,
                facet: a.attr(1)?,
                keep: a.keep(2)?,
                highest: a.choice(3, &["max", "min"])? == "max",
                count: a.count(4, 1, COUNT_MAX)? as usize,
            }),
            IndexFn::ExtractInteger => Op::Extract(Extract::integer(&a)?),
            IndexFn::ExtractBinary => Op::Extract(Extract::binary(&a)?),
            IndexFn::ExtractRegex => Op::Extract(Extract::regex(&a)?),
            IndexFn::ExtractMask => Op::Extract(Extract::mask(&a)?),
            IndexFn::ExtractHamming => Op::Extract(Extract::hamming(&a)?),
            IndexFn::ExtractHash => Op::Extract(Extract::hash(&a)?),
            IndexFn::ExtractEncoded => Op::Extract(Extract::encoded(&a)?),
            IndexFn::ExtractBuckets => Op::Extract(Extract::buckets(&a)?),
            IndexFn::ExtractCoalesce => Op::Extract(Extract::coalesce(&a)?),
            IndexFn::ApplyRange => Op::Filter(Filter::range(&a)?),
            IndexFn::ApplyRegex => Op::Filter(Filter::regex(&a)?),
            IndexFn::ApplyMask => Op::Filter(Filter::mask(&a)?),
        };
        Ok(Reducer { op, batch: a.batch })
    }

    /// One reduce call over `values` (earlier output first, then inputs).
    pub fn reduce(&self, values: Vec<Value>) -> Result<Vec<Value>, String> {
        Ok(match &self.op {
            Op::Identity(attr) => collect::identity(values, attr.as_deref()),
            Op::Sort(by) => collect::sort(values, by),
            Op::Max(attr, n) => collect::max(values, attr, *n),
            Op::Min(attr, n) => collect::min(values, attr, *n),
            Op::Union(attr, k) => collect::union(values, attr, *k)?,
            Op::CountBy(attr, k) => collect::countby(values, attr, *k)?,
            Op::Collate(c) => collect::collate(values, c)?,
            Op::Extract(e) => values.iter().filter_map(|v| e.apply(v)).collect(),
            Op::Filter(f) => values.iter().filter_map(|v| f.apply(v)).collect(),
        })
    }
}

fn kind(a: &Args) -> Result<ValueKind, String> {
    Ok(match a.choice(1, &["binary", "integer"])? {
        "binary" => ValueKind::Binary,
        _ => ValueKind::Integer,
    })
}

#[cfg(test)]
mod tests;
