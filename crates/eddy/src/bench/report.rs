//! Results of a benchmark and how they are printed: one JSON object, or a
//! two-column table for people.
//!
//! Throughput uses decimal megabytes (10^6 bytes) of value payload, the unit
//! fio's `bw_bytes` converts to. Latencies are recorded in nanoseconds (the
//! runner's histograms) and reported in microseconds.

use std::collections::BTreeMap;
use std::time::Duration;

use clap::ValueEnum;
use eddy_bench::RunOutcome;
use hdrhistogram::Histogram;
use serde::Serialize;

use super::error::BenchError;
use crate::cli::StorageArgs;

pub use eddy_bench::window::histogram as new_histogram;

/// What one timed phase did.
#[derive(Clone, Debug)]
pub struct PhaseResult {
    /// Operations completed (entries, for scans).
    pub ops: u64,
    /// Value bytes moved.
    pub bytes: u64,
    /// Wall time of the phase.
    pub elapsed: Duration,
    /// Latency of each operation, in nanoseconds.
    pub latency_ns: Histogram<u64>,
}

impl PhaseResult {
    /// The figures of a phase the runner ran, each request having moved
    /// `bytes_per_op` bytes; a phase with failed requests is an error
    /// naming them.
    pub fn of_run(outcome: &RunOutcome, bytes_per_op: u64) -> Result<Self, BenchError> {
        let errors = outcome.summary.errors_by_kind();
        if !errors.is_empty() {
            let kinds: Vec<String> = errors.iter().map(|(k, n)| format!("{n} × {k}")).collect();
            return Err(BenchError::Failed(kinds.join(", ")));
        }
        let mut latency_ns = new_histogram();
        for w in outcome.totals.values() {
            latency_ns.add(&w.latency_ns).expect("same bounds");
        }
        let ops = latency_ns.len();
        Ok(PhaseResult {
            ops,
            bytes: ops * bytes_per_op,
            elapsed: Duration::from_secs_f64(outcome.summary.elapsed_s.max(0.0)),
            latency_ns,
        })
    }
}

pub use eddy_bench::latency::Latency;

/// The options a run used, echoed in its report.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    pub value_size: usize,
    pub keys: u64,
    pub ops: u64,
    pub threads: usize,
    pub key_order: String,
    pub sync: String,
    pub compression: bool,
    pub compressibility: f64,
    pub read_percent: u8,
}

impl Params {
    /// The parameters of `args`.
    pub fn of(args: &StorageArgs) -> Self {
        Params {
            value_size: args.value_size,
            keys: args.keys,
            ops: args.ops,
            threads: args.threads,
            key_order: value_name(args.key_order),
            sync: value_name(args.sync),
            compression: args.compression,
            compressibility: args.compressibility,
            read_percent: args.read_percent,
        }
    }
}

/// The name clap accepts for an option value.
pub fn value_name(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// Everything a run reports: the measured phase's figures at top level and
/// workload-specific figures under `extra`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub backend: String,
    pub workload: String,
    pub params: Params,
    pub ops: u64,
    pub elapsed_s: f64,
    pub ops_per_s: f64,
    pub mb_per_s: f64,
    #[serde(flatten)]
    pub latency: Latency,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, f64>,
}

impl Report {
    /// A report whose headline figures are those of `phase`.
    pub fn new(args: &StorageArgs, phase: &PhaseResult) -> Self {
        let secs = phase.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        Report {
            backend: value_name(args.backend),
            workload: value_name(args.workload),
            params: Params::of(args),
            ops: phase.ops,
            elapsed_s: phase.elapsed.as_secs_f64(),
            ops_per_s: phase.ops as f64 / secs,
            mb_per_s: phase.bytes as f64 / secs / 1e6,
            latency: Latency::of(&phase.latency_ns),
            extra: BTreeMap::new(),
        }
    }

    /// Adds a workload-specific figure.
    pub fn with(mut self, name: &str, value: f64) -> Self {
        self.extra.insert(name.to_string(), value);
        self
    }

    /// The report as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a report always serializes")
    }

    /// The report as an aligned two-column table.
    pub fn to_table(&self) -> String {
        let p = &self.params;
        let l = &self.latency;
        let mut rows: Vec<(String, String)> = vec![
            ("backend".into(), self.backend.clone()),
            ("workload".into(), self.workload.clone()),
            ("value size".into(), format!("{} B", p.value_size)),
            (
                "keys / ops / threads".into(),
                format!("{} / {} / {}", p.keys, p.ops, p.threads),
            ),
            (
                "key order / sync".into(),
                format!("{} / {}", p.key_order, p.sync),
            ),
            ("compression".into(), p.compression.to_string()),
            ("elapsed".into(), format!("{:.3} s", self.elapsed_s)),
            ("ops/s".into(), format!("{:.0}", self.ops_per_s)),
            ("MB/s".into(), format!("{:.1}", self.mb_per_s)),
            (
                "p50 / p99 / p99.9".into(),
                format!("{:.1} / {:.1} / {:.1} µs", l.p50_us, l.p99_us, l.p999_us),
            ),
            (
                "mean / max".into(),
                format!("{:.1} / {:.1} µs", l.mean_us, l.max_us),
            ),
        ];
        rows.extend(
            self.extra
                .iter()
                .map(|(k, v)| (k.clone(), format!("{v:.3}"))),
        );
        table(&rows)
    }
}

/// Two aligned columns: each name padded to the longest, then its value.
pub(crate) fn table(rows: &[(String, String)]) -> String {
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args() -> StorageArgs {
        let cli = crate::cli::Cli::parse_from(["eddy", "bench", "storage", "--ops=10"]);
        let crate::cli::Command::Bench(b) = cli.command else {
            panic!("not a bench command");
        };
        let crate::cli::BenchTarget::Storage(s) = b.target else {
            panic!("not a storage bench command");
        };
        s
    }

    fn phase(latencies_ns: &[u64], bytes: u64, secs: f64) -> PhaseResult {
        let mut h = new_histogram();
        for &ns in latencies_ns {
            h.record(ns).unwrap();
        }
        PhaseResult {
            ops: latencies_ns.len() as u64,
            bytes,
            elapsed: Duration::from_secs_f64(secs),
            latency_ns: h,
        }
    }

    #[test]
    fn summary_reads_percentiles_in_microseconds() {
        let ns: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        let s = Latency::of(&phase(&ns, 0, 1.0).latency_ns);
        assert!((s.p50_us - 50.0).abs() < 0.1, "{s:?}");
        assert!((s.p99_us - 99.0).abs() < 0.1, "{s:?}");
        assert!((s.max_us - 100.0).abs() < 0.1, "{s:?}");
        assert!((s.mean_us - 50.5).abs() < 0.1, "{s:?}");
    }

    #[test]
    fn empty_histogram_gives_zeros() {
        assert_eq!(Latency::of(&new_histogram()), Latency::default());
    }

    #[test]
    fn json_has_the_headline_fields() {
        let r = Report::new(&args(), &phase(&[2000, 4000], 2_000_000, 0.5)).with("merge_s", 1.5);
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["ops_per_s"], 4.0);
        assert_eq!(v["mb_per_s"], 4.0);
        assert!(v["p50_us"].as_f64().unwrap() > 1.9);
        assert!(v["p99_us"].as_f64().unwrap() > 3.9);
        assert_eq!(v["backend"], "memory");
        assert_eq!(v["workload"], "put");
        assert_eq!(v["params"]["ops"], 10);
        assert_eq!(v["params"]["key_order"], "sequential");
        assert_eq!(v["extra"]["merge_s"], 1.5);
    }

    #[test]
    fn table_lists_every_figure() {
        let r = Report::new(&args(), &phase(&[1000], 100, 1.0)).with("open_ms", 2.0);
        let t = r.to_table();
        for label in ["ops/s", "MB/s", "p50 / p99", "open_ms", "memory"] {
            assert!(t.contains(label), "{label} missing from\n{t}");
        }
    }
}
