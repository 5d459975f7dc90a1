//! `eddy bench storage`'s phases as configs of the runner (design note
//! 023): a storage engine in this process, driven by the same workers,
//! keys, values and collector as a run against a node.
//!
//! A phase is counted in requests (`ops`), split evenly over `workers`
//! workers, one runtime thread each. Keys are the numbers `0..keys` as
//! 8-byte big-endian bytes (byte order is number order) in one bucket:
//! - writes-only phases walk each worker's slice of the keys
//!   (`partitioned_sequential_int`), ascending or, with
//!   [`KeyOrder::Random`], through a fixed permutation (`skew_order`), so
//!   every key is written once per pass;
//! - phases that read walk the slices ascending, or draw keys uniformly
//!   with [`KeyOrder::Random`]; a read that finds nothing is an error.
//!
//! Values are `value_size` bytes; `compressibility` (the share lz4 can
//! squeeze out) becomes `semi_compressible`'s ratio `1 / (1 − c)`, up to
//! its maximum of 100, and 0 is incompressible `fixed_bin`.

use std::collections::BTreeMap;
use std::time::Duration;

use eddy_wire::Quorum;

use crate::config::{
    self, BenchConfig, DriverConfig, IndexConfig, IndexQuery, KeyFormat, KeyGenerator, KeysConfig,
    Mode, NotFound, Protocol, RequestOptions, Span, UniqueOrder, ValueGenerator, ValuesConfig,
};

/// The bucket every phase works on.
pub const BUCKET: &str = "bench";
/// The index field of indexed writes and scans.
pub const INDEX_FIELD: &str = "bench_bin";
/// Bytes of one index entry's term (a zero-padded `_bin` term).
pub const TERM_BYTES: usize = 10;
/// Longest a phase may run: a cap far beyond any storage phase, which
/// ends when its requests are done (or when its caller says).
const PHASE_CAP: Duration = Duration::from_secs(24 * 3600);
/// Largest ratio `semi_compressible` makes.
const RATIO_MAX: f64 = 100.0;

/// Order of keys within a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrder {
    /// Ascending key numbers.
    Sequential,
    /// Writes in a pseudo-random permutation; reads uniform.
    Random,
}

/// What a phase does with each request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requests {
    /// Puts; with `indexed`, each with one entry under [`INDEX_FIELD`].
    Write { indexed: bool },
    /// Gets and puts, `read_percent` of them gets.
    Mixed { read_percent: u8 },
    /// Full scans of [`INDEX_FIELD`] (a range over every term).
    Scan,
}

/// One phase of `eddy bench storage`.
#[derive(Clone, Debug)]
pub struct StoragePhase {
    /// The engine's name (the run's only endpoint).
    pub engine: String,
    pub requests: Requests,
    /// Requests in all; `None`: until the caller ends the phase.
    pub ops: Option<u64>,
    pub workers: usize,
    /// Keys are the numbers `0..keys`.
    pub keys: u64,
    pub key_order: KeyOrder,
    pub value_size: usize,
    /// Share of a value lz4 can squeeze out, `0.0..=1.0`.
    pub compressibility: f64,
    /// Each put waits until it is durable.
    pub sync: bool,
    pub seed: u64,
}

/// The config of phase `p` (checked as a file is when it runs).
pub fn storage(p: &StoragePhase) -> BenchConfig {
    let (gets, puts) = match p.requests {
        Requests::Write { .. } => (0, 1),
        Requests::Mixed { read_percent } => {
            let r = u32::from(read_percent.min(100));
            (r, 100 - r)
        }
        Requests::Scan => (0, 0),
    };
    let mut operations = BTreeMap::from([("get".into(), gets), ("put".into(), puts)]);
    if p.requests == Requests::Scan {
        operations.insert("index_query".into(), 1);
    }
    BenchConfig {
        mode: Mode::Max,
        rate: None,
        duration: Span(PHASE_CAP),
        ops: p.ops,
        concurrent: p.workers,
        report_interval: config::default_report_interval(),
        request_timeout: Span(Duration::from_secs(60)),
        give_up_after: Span(PHASE_CAP),
        seed: p.seed,
        baseline: Span(Duration::ZERO),
        driver: DriverConfig {
            protocol: Protocol::Storage,
            endpoints: vec![p.engine.clone()],
            bucket_type: None,
            bucket: BUCKET.into(),
        },
        bucket_props: None,
        request: RequestOptions {
            dw: p.sync.then_some(Quorum::All),
            not_found: NotFound::Error,
            ..RequestOptions::default()
        },
        operations,
        keys: keys(p),
        values: values(p),
        index: indexed(p).then(|| index(p.keys)),
        multi_get: None,
        multi_put: None,
        mapreduce: None,
        preload: None,
    }
}

fn indexed(p: &StoragePhase) -> bool {
    matches!(
        p.requests,
        Requests::Write { indexed: true } | Requests::Scan
    )
}

fn keys(p: &StoragePhase) -> KeysConfig {
    let writes_only = matches!(p.requests, Requests::Write { .. });
    let (generator, order) = match (writes_only, p.key_order) {
        (_, KeyOrder::Sequential) => (KeyGenerator::PartitionedSequentialInt, None),
        (true, KeyOrder::Random) => (
            KeyGenerator::PartitionedSequentialInt,
            Some(UniqueOrder::SkewOrder),
        ),
        (false, KeyOrder::Random) => (KeyGenerator::UniformInt, None),
    };
    KeysConfig {
        generator,
        max: Some(p.keys),
        order,
        prefix: String::new(),
        format: KeyFormat::Binary,
        once: false,
    }
}

fn values(p: &StoragePhase) -> ValuesConfig {
    let c = p.compressibility.clamp(0.0, 1.0);
    let ratio = (c > 0.0).then(|| (1.0 / (1.0 - c)).min(RATIO_MAX));
    ValuesConfig {
        generator: match ratio {
            Some(_) => ValueGenerator::SemiCompressible,
            None => ValueGenerator::FixedBin,
        },
        size: Some(p.value_size),
        size_min: None,
        size_max: None,
        compression_ratio: ratio,
        int_fields: BTreeMap::new(),
    }
}

/// One entry per put, its term drawn from `0..keys` (so terms are spread
/// like keys, in an order that is not key order), and a query of the range
/// of every term: each scan reads the whole field.
fn index(keys: u64) -> IndexConfig {
    IndexConfig {
        field: Some(INDEX_FIELD.into()),
        terms: Some(keys),
        entries: Vec::new(),
        query: IndexQuery::Range,
        range_width: keys,
        range_start: Some(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(requests: Requests, key_order: KeyOrder) -> StoragePhase {
        StoragePhase {
            engine: "memory".into(),
            requests,
            ops: Some(1000),
            workers: 2,
            keys: 500,
            key_order,
            value_size: 100,
            compressibility: 0.5,
            sync: false,
            seed: 42,
        }
    }

    #[test]
    fn every_phase_is_a_valid_storage_config() {
        for requests in [
            Requests::Write { indexed: false },
            Requests::Write { indexed: true },
            Requests::Mixed { read_percent: 30 },
            Requests::Scan,
        ] {
            for order in [KeyOrder::Sequential, KeyOrder::Random] {
                let c = storage(&phase(requests, order));
                config::check(&c).unwrap_or_else(|e| panic!("{requests:?} {order:?}: {e}"));
                assert_eq!(c.driver.protocol, Protocol::Storage);
                assert_eq!((c.ops, c.concurrent), (Some(1000), 2));
            }
        }
    }

    #[test]
    fn writes_walk_every_key_and_reads_draw_them() {
        let w = storage(&phase(Requests::Write { indexed: false }, KeyOrder::Random));
        assert_eq!(w.keys.generator, KeyGenerator::PartitionedSequentialInt);
        assert_eq!(w.keys.order, Some(UniqueOrder::SkewOrder));
        assert_eq!(w.keys.format, KeyFormat::Binary);
        let r = storage(&phase(
            Requests::Mixed { read_percent: 100 },
            KeyOrder::Random,
        ));
        assert_eq!(r.keys.generator, KeyGenerator::UniformInt);
        assert_eq!(r.operations["get"], 100);
        assert_eq!(r.request.not_found, NotFound::Error);
        let s = storage(&phase(Requests::Scan, KeyOrder::Sequential));
        assert_eq!(s.weighted_ops(), vec![(crate::ops::OpKind::IndexQuery, 1)]);
        let index = s.index.unwrap();
        assert_eq!((index.terms, index.range_start), (Some(500), Some(0)));
        assert_eq!((index.query, index.range_width), (IndexQuery::Range, 500));
    }

    #[test]
    fn compressibility_becomes_a_ratio_and_sync_a_durable_write() {
        let mut p = phase(Requests::Write { indexed: false }, KeyOrder::Sequential);
        assert_eq!(storage(&p).values.compression_ratio, Some(2.0));
        p.compressibility = 0.0;
        assert_eq!(storage(&p).values.generator, ValueGenerator::FixedBin);
        p.compressibility = 1.0;
        assert_eq!(storage(&p).values.compression_ratio, Some(RATIO_MAX));
        assert_eq!(storage(&p).request.dw, None);
        p.sync = true;
        assert_eq!(storage(&p).request.dw, Some(Quorum::All));
    }
}
