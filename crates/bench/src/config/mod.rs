//! A run's configuration: the TOML file `eddy bench run` reads.
//!
//! Owns the file's shape ([`BenchConfig`] and its sections), loading, the
//! command-line overrides, and validation ([`validate`]). Invariant: every
//! struct denies unknown keys and [`load`] validates, so a config that loads
//! is one the run can execute; every error names the setting at fault.
//! docs/bench.md describes each key.

mod duration;
mod validate;

use std::collections::BTreeMap;
use std::path::Path;

use eddy_wire::Quorum;
use serde::{Deserialize, Serialize};

pub use duration::{Span, SpanError};
pub use validate::check;

use crate::error::BenchError;

/// The whole file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    /// `max`: each worker issues requests back to back; `rate`: each worker
    /// issues `rate` requests per second.
    #[serde(default)]
    pub mode: Mode,
    /// Requests per second per worker, with `mode = "rate"`.
    pub rate: Option<f64>,
    /// How long the measured phase lasts (a cap, with `ops`).
    pub duration: Span,
    /// The measured phase ends after this many requests in all, split
    /// evenly over the workers (worker `i` of `w` issues `ops·(i+1)/w −
    /// ops·i/w`); absent: it runs for `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<u64>,
    /// Workers, each with its own connection.
    #[serde(default = "default_concurrent")]
    pub concurrent: usize,
    /// Length of one row of the CSV files.
    #[serde(default = "default_report_interval")]
    pub report_interval: Span,
    /// Longest a request (or a connect) may take before it counts as a
    /// timeout.
    #[serde(default = "default_request_timeout")]
    pub request_timeout: Span,
    /// The run ends early once no request has succeeded for this long.
    #[serde(default = "default_give_up_after")]
    pub give_up_after: Span,
    /// Seed of every generator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Length of the loopback echo run before the measured phase
    /// ([`crate::baseline`]); `0s` skips it.
    #[serde(default = "default_baseline")]
    pub baseline: Span,
    pub driver: DriverConfig,
    /// Bucket properties set once before the run.
    pub bucket_props: Option<BucketProps>,
    #[serde(default)]
    pub request: RequestOptions,
    pub operations: BTreeMap<String, u32>,
    pub keys: KeysConfig,
    pub values: ValuesConfig,
    pub index: Option<IndexConfig>,
    pub multi_get: Option<MultiGetConfig>,
    pub multi_put: Option<MultiPutConfig>,
    pub mapreduce: Option<MapReduceConfig>,
    pub preload: Option<PreloadConfig>,
}

fn default_concurrent() -> usize {
    8
}

/// The report interval a file gets when it names none.
pub(crate) fn default_report_interval() -> Span {
    Span(std::time::Duration::from_secs(1))
}

fn default_request_timeout() -> Span {
    Span(std::time::Duration::from_secs(5))
}

fn default_give_up_after() -> Span {
    Span(std::time::Duration::from_secs(10))
}

fn default_seed() -> u64 {
    42
}

fn default_baseline() -> Span {
    Span(std::time::Duration::from_secs(5))
}

/// How workers pace their requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Max,
    Rate,
}

/// Which protocol, which servers, which bucket.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DriverConfig {
    pub protocol: Protocol,
    /// `host:port` of each server; worker `i` uses endpoint `i mod len`.
    pub endpoints: Vec<String>,
    /// The bucket type; absent: the `default` type.
    pub bucket_type: Option<String>,
    pub bucket: String,
}

/// A wire protocol, or none: a storage engine called in process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Pb,
    Http,
    /// A storage engine opened by the caller and handed to the run
    /// ([`crate::RunOptions::storage`]: `eddy bench storage`); the
    /// endpoints only name it. A workload file cannot open one.
    Storage,
}

/// Bucket properties (Riak's names); only those given are set.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BucketProps {
    pub n_val: Option<u32>,
    pub allow_mult: Option<bool>,
    pub last_write_wins: Option<bool>,
    pub r: Option<Quorum>,
    pub pr: Option<Quorum>,
    pub w: Option<Quorum>,
    pub dw: Option<Quorum>,
    pub pw: Option<Quorum>,
    pub rw: Option<Quorum>,
    pub backend: Option<String>,
}

/// Options sent with each request; absent ones are left to the bucket.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RequestOptions {
    pub r: Option<Quorum>,
    pub pr: Option<Quorum>,
    pub w: Option<Quorum>,
    pub dw: Option<Quorum>,
    pub pw: Option<Quorum>,
    /// Ask puts to return the stored object.
    #[serde(default)]
    pub returnbody: bool,
    /// Content type of stored values; default from the value generator.
    pub content_type: Option<String>,
    /// How a get that finds nothing is counted.
    #[serde(default)]
    pub not_found: NotFound,
}

/// How a get that finds nothing is counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotFound {
    /// A success, also counted in the operation's `not_found`.
    #[default]
    Success,
    /// The failure `not_found`: every key read was meant to exist (it
    /// was preloaded), as `eddy bench pb` counts it.
    Error,
}

/// How keys are chosen (see [`crate::keygen`]).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KeysConfig {
    pub generator: KeyGenerator,
    /// Size of the key space (every generator but `unique`).
    pub max: Option<u64>,
    /// Insertion order of `unique` keys; with `skew_order`,
    /// `sequential_int` and `partitioned_sequential_int` visit their
    /// numbers in a fixed pseudo-random permutation instead of ascending.
    pub order: Option<UniqueOrder>,
    /// Text put before every key.
    #[serde(default)]
    pub prefix: String,
    #[serde(default)]
    pub format: KeyFormat,
    /// Hand out each key number once (`sequential_int`,
    /// `partitioned_sequential_int`): a worker stops when its keys are
    /// used up, and the run when every worker has.
    #[serde(default)]
    pub once: bool,
}

/// A key generator's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyGenerator {
    SequentialInt,
    PartitionedSequentialInt,
    UniformInt,
    ParetoInt,
    EightytwentyInt,
    Unique,
}

/// Order in which `unique` keys are inserted (and sequential ones
/// visited).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UniqueOrder {
    /// Ascending: each put appends after the previous key.
    KeyOrder,
    /// A fixed pseudo-random permutation of the insertion sequence.
    SkewOrder,
}

/// How a key number becomes key bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyFormat {
    /// Zero-padded decimal text (byte order = number order).
    #[default]
    Decimal,
    /// 8 bytes, big-endian (basho_bench's `int_to_bin_bigendian`).
    Binary,
    /// Unpadded decimal text, as people write numbers (`4711`); the keys
    /// of `eddy bench pb`. Byte order is not number order.
    Plain,
}

/// How values are made (see [`crate::valuegen`]).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ValuesConfig {
    pub generator: ValueGenerator,
    /// Exact size (`fixed_bin`, `json`), or both bounds of the others.
    pub size: Option<usize>,
    pub size_min: Option<usize>,
    pub size_max: Option<usize>,
    /// `semi_compressible`: original size over lz4-compressed size.
    pub compression_ratio: Option<f64>,
    /// `json`: integer fields, each uniform in `0..bound`.
    #[serde(default)]
    pub int_fields: BTreeMap<String, u64>,
}

/// A value generator's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueGenerator {
    FixedBin,
    RandomBin,
    SemiCompressible,
    Json,
}

/// Secondary-index entries written with each put, and what `index_query`
/// asks. Two forms: `field` and `terms` alone (one entry), or
/// `[[index.entries]]` (one or more), with `field` then naming the entry
/// `index_query` asks (default: the first).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IndexConfig {
    /// Riak index name, ending in `_int` or `_bin`: the one entry, or the
    /// entry of `entries` that `index_query` asks.
    pub field: Option<String>,
    /// The one entry's term is uniform in `0..terms` (or, for `json`
    /// values, the document's integer field of the same name without the
    /// suffix). Not used with `entries`.
    pub terms: Option<u64>,
    /// Several entries per put, each with its own term.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<IndexEntryConfig>,
    #[serde(default)]
    pub query: IndexQuery,
    /// Terms a `range` query spans.
    #[serde(default = "default_range_width")]
    pub range_width: u64,
    /// The first term of every `range` query (the same query each time, as
    /// a report or a dashboard asks it); absent: drawn like a put's term.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_start: Option<u64>,
}

/// One entry of `[[index.entries]]`: its name and where its term comes
/// from (exactly one of `from` and `terms`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEntryConfig {
    /// Riak index name, ending in `_int` or `_bin`.
    pub field: String,
    /// The term is the value of this integer field of the `json` document
    /// (`values.int_fields`), so that index answers can be checked
    /// against the data.
    pub from: Option<String>,
    /// The term is uniform in `0..terms` (a `_bin` term zero-padded to 10
    /// digits, so that byte order is number order).
    pub terms: Option<u64>,
    /// `_bin` only: text before the number (`affiliate-` makes
    /// `affiliate-17`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

fn default_range_width() -> u64 {
    10
}

/// An index query's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexQuery {
    #[default]
    Eq,
    Range,
}

/// How `multi_get` fetches several keys.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MultiGetConfig {
    /// Keys per request.
    pub keys: usize,
    /// `native` (default): Eddy's multi-get request; `mapreduce`: a
    /// MapReduce job over the key list with
    /// `riak_kv_mapreduce:map_object_value`, for Riak, which has none.
    #[serde(default)]
    pub via: MultiGetVia,
}

/// A transport for multi-get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MultiGetVia {
    /// Eddy's multi-get (PB code 160, `POST …/multi/get`).
    #[default]
    Native,
    Mapreduce,
}

/// What `multi_put` writes per request.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MultiPutConfig {
    /// Objects per request, each a fresh value under a key drawn for
    /// writing (Eddy's multi-put: PB code 162, `POST …/multi/put`).
    pub keys: usize,
}

/// The MapReduce job of the `mapreduce` operation.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MapReduceConfig {
    /// The job as JSON; `{bucket}` and `{type}` are replaced by the run's
    /// bucket and type. Default: count the bucket's objects.
    pub job: Option<String>,
}

/// Keys written before the measured phase.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PreloadConfig {
    /// Key numbers `0..keys` are put once, untimed.
    pub keys: u64,
}

/// Settings the command line may override.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub duration: Option<Span>,
    pub endpoints: Vec<String>,
    pub baseline: Option<Span>,
}

/// Reads, parses, overrides and validates `path`; returns the config and
/// the file's text (copied into the results).
pub fn load(path: &Path, overrides: &Overrides) -> Result<(BenchConfig, String), BenchError> {
    let text = std::fs::read_to_string(path).map_err(|source| BenchError::ReadConfig {
        path: path.to_path_buf(),
        source,
    })?;
    let mut config = parse(&text).map_err(|message| BenchError::ParseConfig {
        path: path.to_path_buf(),
        message,
    })?;
    config.apply(overrides);
    validate::check(&config)?;
    Ok((config, text))
}

/// Parses TOML text (no validation).
pub fn parse(text: &str) -> Result<BenchConfig, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

/// Parses and validates TOML text.
pub fn parse_valid(text: &str) -> Result<BenchConfig, BenchError> {
    let config = parse(text).map_err(|message| BenchError::ParseConfig {
        path: "<text>".into(),
        message,
    })?;
    validate::check(&config)?;
    Ok(config)
}

impl BenchConfig {
    /// Replaces the settings `o` overrides.
    pub(crate) fn apply(&mut self, o: &Overrides) {
        if let Some(d) = o.duration {
            self.duration = d;
        }
        if !o.endpoints.is_empty() {
            self.driver.endpoints = o.endpoints.clone();
        }
        if let Some(b) = o.baseline {
            self.baseline = b;
        }
    }

    /// The weighted operations, in a fixed order, with their weights.
    pub fn weighted_ops(&self) -> Vec<(crate::ops::OpKind, u32)> {
        crate::ops::OpKind::ALL
            .iter()
            .filter_map(|op| match self.operations.get(op.name()) {
                Some(&w) if w > 0 => Some((*op, w)),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
