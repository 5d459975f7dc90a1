//! The figures of a PB run and how they are printed: one JSON object, or a
//! two-column table for people. Latencies are recorded in nanoseconds and
//! reported in microseconds; rates count successful requests only.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

pub use eddy_bench::baseline::Latency;

use super::worker::WorkerStats;
use crate::bench::report::{new_histogram, table, value_name};
use crate::cli::PbArgs;

/// The figures of one kind of request.
#[derive(Clone, Debug, Serialize)]
pub struct OpFigures {
    pub ops: u64,
    pub ops_per_s: f64,
    #[serde(flatten)]
    pub latency: Latency,
}

impl OpFigures {
    fn of(h: &Histogram<u64>, secs: f64) -> Self {
        OpFigures {
            ops: h.len(),
            ops_per_s: h.len() as f64 / secs,
            latency: Latency::of(h),
        }
    }
}

/// The options a run used, echoed in its report.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    pub addr: String,
    pub connections: usize,
    pub duration_s: f64,
    pub value_size: usize,
    pub keys: u64,
    pub read_percent: u8,
    pub bucket: String,
    pub bucket_type: Option<String>,
    pub w: Option<String>,
    pub dw: Option<String>,
    pub r: Option<String>,
    pub timeout_ms: u64,
    pub threads: usize,
}

/// Everything a run reports: all requests together at top level, gets and
/// puts apart under `get` and `put`.
#[derive(Clone, Debug, Serialize)]
pub struct PbReport {
    pub workload: String,
    pub params: Params,
    pub ops: u64,
    pub elapsed_s: f64,
    pub ops_per_s: f64,
    #[serde(flatten)]
    pub latency: Latency,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub get: Option<OpFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub put: Option<OpFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preload_s: Option<f64>,
    /// The loopback echo run before the load ([`super::baseline`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<super::baseline::Baseline>,
}

impl PbReport {
    /// The report of `stats`, gathered over `elapsed_s` of load.
    pub fn new(args: &PbArgs, threads: usize, stats: &WorkerStats, elapsed_s: f64) -> Self {
        let secs = elapsed_s.max(f64::MIN_POSITIVE);
        let mut all = new_histogram();
        all.add(&stats.get_ns).expect("same bounds");
        all.add(&stats.put_ns).expect("same bounds");
        let part = |h: &Histogram<u64>| (!h.is_empty()).then(|| OpFigures::of(h, secs));
        PbReport {
            workload: value_name(args.workload),
            params: params(args, threads),
            ops: all.len(),
            elapsed_s,
            ops_per_s: all.len() as f64 / secs,
            latency: Latency::of(&all),
            errors: stats.errors.values().sum(),
            errors_by_kind: stats
                .errors
                .iter()
                .map(|(k, n)| (k.to_string(), *n))
                .collect(),
            get: part(&stats.get_ns),
            put: part(&stats.put_ns),
            preload_s: None,
            baseline: None,
        }
    }

    /// The report as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a report always serializes")
    }

    /// The report as an aligned two-column table.
    pub fn to_table(&self) -> String {
        let p = &self.params;
        let quorum = |q: &Option<String>| q.clone().unwrap_or_else(|| "bucket's".into());
        let mut rows: Vec<(String, String)> = vec![
            ("workload".into(), self.workload.clone()),
            ("node".into(), p.addr.clone()),
            ("value size".into(), format!("{} B", p.value_size)),
            (
                "keys / connections".into(),
                format!("{} / {}", p.keys, p.connections),
            ),
            (
                "r / w / dw".into(),
                format!("{} / {} / {}", quorum(&p.r), quorum(&p.w), quorum(&p.dw)),
            ),
            ("elapsed".into(), format!("{:.3} s", self.elapsed_s)),
        ];
        rows.extend(figure_rows("", self.ops, self.ops_per_s, &self.latency));
        for (name, part) in [("get ", &self.get), ("put ", &self.put)] {
            if let (Some(f), true) = (part, self.get.is_some() && self.put.is_some()) {
                rows.extend(figure_rows(name, f.ops, f.ops_per_s, &f.latency));
            }
        }
        rows.push(("errors".into(), self.errors_text()));
        if let Some(b) = &self.baseline {
            rows.extend(self.baseline_rows(b));
        }
        table(&rows)
    }

    /// The baseline's figures, and the run's as a share of them.
    fn baseline_rows(&self, b: &super::baseline::Baseline) -> Vec<(String, String)> {
        vec![
            ("echo ops/s".into(), format!("{:.0}", b.ops_per_s)),
            (
                "echo p50 / p99".into(),
                format!("{:.1} / {:.1} µs", b.latency.p50_us, b.latency.p99_us),
            ),
            (
                "ops/s of echo".into(),
                format!("{:.1} %", b.share_of(self.ops_per_s)),
            ),
            (
                "p99 / echo p99".into(),
                format!("{:.2}", b.p99_ratio(self.latency.p99_us)),
            ),
        ]
    }

    fn errors_text(&self) -> String {
        if self.errors == 0 {
            return "0".into();
        }
        let kinds: Vec<String> = self
            .errors_by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        format!("{} ({})", self.errors, kinds.join(", "))
    }
}

fn params(args: &PbArgs, threads: usize) -> Params {
    let text = |q: Option<eddy_wire::Quorum>| q.map(|q| q.to_string());
    Params {
        addr: args.addr.clone(),
        connections: args.connections,
        duration_s: args.duration,
        value_size: args.value_size,
        keys: args.keys,
        read_percent: args.read_percent,
        bucket: args.bucket.clone(),
        bucket_type: args.bucket_type.clone(),
        w: text(args.w),
        dw: text(args.dw),
        r: text(args.r),
        timeout_ms: args.timeout_ms,
        threads,
    }
}

fn figure_rows(prefix: &str, ops: u64, rate: f64, l: &Latency) -> Vec<(String, String)> {
    vec![
        (format!("{prefix}ops"), ops.to_string()),
        (format!("{prefix}ops/s"), format!("{rate:.0}")),
        (
            format!("{prefix}p50 / p95 / p99"),
            format!("{:.1} / {:.1} / {:.1} µs", l.p50_us, l.p95_us, l.p99_us),
        ),
        (
            format!("{prefix}p99.9 / max"),
            format!("{:.1} / {:.1} µs", l.p999_us, l.max_us),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> PbArgs {
        crate::bench::pb::test_args(&["--workload=mixed"])
    }

    fn stats() -> WorkerStats {
        let mut s = WorkerStats::new();
        for i in 1..=100 {
            s.get_ns.record(i * 1000).unwrap();
        }
        s.put_ns.record(500_000).unwrap();
        s
    }

    #[test]
    fn json_has_the_headline_fields() {
        let mut s = stats();
        s.merge(&WorkerStats::new());
        let v: serde_json::Value =
            serde_json::from_str(&PbReport::new(&args(), 2, &s, 2.0).to_json()).unwrap();
        assert_eq!(v["ops"], 101);
        assert_eq!(v["ops_per_s"], 50.5);
        assert_eq!(v["errors"], 0);
        assert_eq!(v["get"]["ops"], 100);
        assert_eq!(v["put"]["ops"], 1);
        assert!((v["get"]["p50_us"].as_f64().unwrap() - 50.0).abs() < 0.1);
        assert!((v["get"]["p95_us"].as_f64().unwrap() - 95.0).abs() < 0.1);
        assert!(v["p999_us"].as_f64().unwrap() > 499.0);
        assert_eq!(v["workload"], "mixed");
        assert_eq!(v["params"]["connections"], 32);
        assert!(v["params"]["w"].is_null());
    }

    #[test]
    fn errors_are_counted_by_kind() {
        let mut s = stats();
        let mut other = WorkerStats::new();
        other.errors.insert("timeout", 3);
        s.errors.insert("timeout", 1);
        s.errors.insert("server", 2);
        s.merge(&other);
        let r = PbReport::new(&args(), 1, &s, 1.0);
        assert_eq!(r.errors, 6);
        assert_eq!(r.errors_by_kind["timeout"], 4);
        assert!(r.to_table().contains("6 (server 2, timeout 4)"));
    }

    #[test]
    fn table_reads_the_run_against_its_baseline() {
        let mut r = PbReport::new(&args(), 1, &stats(), 1.0);
        assert!(!r.to_table().contains("echo"));
        r.baseline = Some(crate::bench::pb::baseline::Baseline {
            duration_s: 1.0,
            ops: 404,
            ops_per_s: 404.0,
            latency: Latency {
                p99_us: 250.0,
                ..Latency::default()
            },
        });
        let t = r.to_table();
        // 101 ops/s against 404; p99 100 µs against 250.
        assert!(t.contains("25.0 %"), "{t}");
        assert!(t.contains("0.40"), "{t}");
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["baseline"]["ops_per_s"], 404.0);
    }

    #[test]
    fn table_splits_mixed_runs() {
        let t = PbReport::new(&args(), 1, &stats(), 1.0).to_table();
        for label in [
            "ops/s",
            "get p50 / p95 / p99",
            "put ops",
            "errors",
            "bucket's",
        ] {
            assert!(t.contains(label), "{label} missing from\n{t}");
        }
    }
}
