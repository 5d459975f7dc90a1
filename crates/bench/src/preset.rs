//! Presets: workloads described by a few flags instead of a file. [`pb`]
//! is `eddy bench pb`'s (design note 013): uniform gets and blind puts of
//! one bucket over PB, on plain decimal keys, with every preloaded key
//! expected to be found. [`storage`] holds `eddy bench storage`'s phases
//! (design note 023).
//!
//! Invariant: a preset's config is a config like any other; it passes the
//! same check as a file ([`crate::config::check`]) and runs on the same
//! workers, drivers and collector.

use std::collections::BTreeMap;

use eddy_wire::Quorum;

use crate::config::{
    self, BenchConfig, DriverConfig, KeyFormat, KeyGenerator, KeysConfig, Mode, NotFound,
    PreloadConfig, Protocol, RequestOptions, Span, ValueGenerator, ValuesConfig,
};
use crate::error::BenchError;

pub mod storage;

/// What `eddy bench pb` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PbWorkload {
    /// Gets of preloaded keys.
    Get,
    /// Blind puts.
    Put,
    /// Gets and puts, `read_percent` of them gets, on preloaded keys.
    Mixed,
}

/// `eddy bench pb`'s flags, without the command line.
#[derive(Clone, Debug)]
pub struct PbPreset {
    /// The node's PB listener, `host:port`.
    pub addr: String,
    pub connections: usize,
    pub duration: Span,
    pub value_size: usize,
    /// Keys are the numbers `0..keys`.
    pub keys: u64,
    pub workload: PbWorkload,
    /// Share of gets in `mixed`, 0 to 100.
    pub read_percent: u8,
    /// Do not preload (an earlier run did).
    pub skip_preload: bool,
    pub bucket: String,
    pub bucket_type: Option<String>,
    pub w: Option<Quorum>,
    pub dw: Option<Quorum>,
    pub r: Option<Quorum>,
    pub request_timeout: Span,
    pub baseline: Span,
    pub seed: u64,
}

/// Each config setting the preset fills from a flag, with that flag.
const PB_FLAGS: [(&str, &str); 9] = [
    ("concurrent", "--connections"),
    ("duration", "--duration"),
    ("give_up_after", "--duration"),
    ("request_timeout", "--timeout-ms"),
    ("driver.endpoints", "--addr"),
    ("driver.bucket", "--bucket"),
    ("driver.bucket_type", "--bucket-type"),
    ("keys.max", "--keys"),
    ("values.size", "--value-size"),
];

/// The config of `p`: `connections` workers, each issuing requests back
/// to back; `get`/`put` weighted 100/0, 0/100 or `read_percent`/rest;
/// uniform plain keys `0..keys`, all preloaded for `get` and `mixed`
/// unless `skip_preload`; a missed get is the error `not_found`; the run
/// never gives up before its duration.
pub fn pb(p: &PbPreset) -> BenchConfig {
    let gets = match p.workload {
        PbWorkload::Get => 100,
        PbWorkload::Put => 0,
        PbWorkload::Mixed => u32::from(p.read_percent.min(100)),
    };
    let reads = p.workload != PbWorkload::Put;
    BenchConfig {
        mode: Mode::Max,
        rate: None,
        duration: p.duration,
        ops: None,
        concurrent: p.connections,
        report_interval: config::default_report_interval(),
        request_timeout: p.request_timeout,
        give_up_after: p.duration,
        seed: p.seed,
        baseline: p.baseline,
        driver: DriverConfig {
            protocol: Protocol::Pb,
            endpoints: vec![p.addr.clone()],
            bucket_type: p.bucket_type.clone(),
            bucket: p.bucket.clone(),
        },
        bucket_props: None,
        request: request_options(p),
        operations: BTreeMap::from([("get".into(), gets), ("put".into(), 100 - gets)]),
        keys: KeysConfig {
            generator: KeyGenerator::UniformInt,
            max: Some(p.keys),
            order: None,
            prefix: String::new(),
            format: KeyFormat::Plain,
            once: false,
        },
        values: ValuesConfig {
            generator: ValueGenerator::FixedBin,
            size: Some(p.value_size),
            size_min: None,
            size_max: None,
            compression_ratio: None,
            int_fields: BTreeMap::new(),
        },
        index: None,
        multi_get: None,
        multi_put: None,
        mapreduce: None,
        preload: (reads && !p.skip_preload).then_some(PreloadConfig { keys: p.keys }),
    }
}

fn request_options(p: &PbPreset) -> RequestOptions {
    RequestOptions {
        r: p.r,
        w: p.w,
        dw: p.dw,
        not_found: NotFound::Error,
        ..RequestOptions::default()
    }
}

/// [`pb`], checked as a file is; a setting it refuses is named by the
/// flag that set it.
pub fn pb_checked(p: &PbPreset) -> Result<BenchConfig, BenchError> {
    let config = pb(p);
    config::check(&config).map_err(name_flag)?;
    Ok(config)
}

fn name_flag(e: BenchError) -> BenchError {
    let BenchError::Setting { setting, problem } = e else {
        return e;
    };
    let flag = PB_FLAGS.iter().find(|(s, _)| *s == setting);
    BenchError::Setting {
        setting: flag.map_or(setting, |(_, f)| (*f).to_string()),
        problem,
    }
}

#[cfg(test)]
mod tests;
