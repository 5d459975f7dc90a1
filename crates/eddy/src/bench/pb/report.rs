//! The figures of a PB run and how they are printed: one JSON object, or a
//! two-column table for people, drawn from the runner's outcome. Latencies
//! are reported in microseconds; rates count successful requests only.
//! The JSON's fields and their meanings are what the scripts in `bench/`
//! read (`ops`, `ops_per_s`, `p50_us` … `max_us`, `errors`,
//! `errors_by_kind`, `get`, `put`, `preload_s`, `baseline`, `params`).

use std::collections::BTreeMap;

use eddy_bench::RunOutcome;
use eddy_bench::baseline::Baseline;
use eddy_bench::ops::OpKind;
use eddy_bench::window::{OpWindow, histogram};
use hdrhistogram::Histogram;
use serde::Serialize;

pub use eddy_bench::baseline::Latency;

use crate::bench::report::{table, value_name};
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
    /// The loopback echo run before the load ([`eddy_bench::baseline`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
}

impl PbReport {
    /// The report of a finished run.
    pub fn new(args: &PbArgs, threads: usize, outcome: &RunOutcome) -> Self {
        let elapsed_s = outcome.summary.elapsed_s;
        PbReport {
            preload_s: outcome.summary.preload_s,
            baseline: outcome.summary.baseline.clone(),
            ..PbReport::of_totals(args, threads, &outcome.totals, elapsed_s)
        }
    }

    /// The report of each operation's `totals` over `elapsed_s` of load.
    pub fn of_totals(
        args: &PbArgs,
        threads: usize,
        totals: &BTreeMap<OpKind, OpWindow>,
        elapsed_s: f64,
    ) -> Self {
        let secs = elapsed_s.max(f64::MIN_POSITIVE);
        let mut all = histogram();
        let mut errors_by_kind = BTreeMap::new();
        for w in totals.values() {
            all.add(&w.latency_ns).expect("same bounds");
            for (kind, n) in &w.errors {
                *errors_by_kind.entry(kind.clone()).or_default() += n;
            }
        }
        let part = |op| {
            let w = totals.get(&op).filter(|w| !w.latency_ns.is_empty());
            w.map(|w| OpFigures::of(&w.latency_ns, secs))
        };
        PbReport {
            workload: value_name(args.workload),
            params: params(args, threads),
            ops: all.len(),
            elapsed_s,
            ops_per_s: all.len() as f64 / secs,
            latency: Latency::of(&all),
            errors: errors_by_kind.values().sum(),
            errors_by_kind,
            get: part(OpKind::Get),
            put: part(OpKind::Put),
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
    fn baseline_rows(&self, b: &Baseline) -> Vec<(String, String)> {
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

    /// 100 gets of 1 … 100 µs and one put of 500 µs.
    fn totals() -> BTreeMap<OpKind, OpWindow> {
        let mut get = OpWindow::default();
        for i in 1..=100 {
            get.latency_ns.record(i * 1000).unwrap();
        }
        let mut put = OpWindow::default();
        put.latency_ns.record(500_000).unwrap();
        BTreeMap::from([(OpKind::Get, get), (OpKind::Put, put)])
    }

    fn report(totals: &BTreeMap<OpKind, OpWindow>, secs: f64) -> PbReport {
        PbReport::of_totals(&args(), 2, totals, secs)
    }

    #[test]
    fn json_has_the_headline_fields() {
        let v: serde_json::Value = serde_json::from_str(&report(&totals(), 2.0).to_json()).unwrap();
        assert_eq!(v["ops"], 101);
        assert_eq!(v["ops_per_s"], 50.5);
        assert_eq!(v["errors"], 0);
        assert_eq!(v["get"]["ops"], 100);
        assert_eq!(v["put"]["ops"], 1);
        assert!((v["get"]["p50_us"].as_f64().unwrap() - 50.0).abs() < 0.1);
        assert!((v["get"]["p95_us"].as_f64().unwrap() - 95.0).abs() < 0.1);
        assert!(v["p999_us"].as_f64().unwrap() > 499.0);
        assert!((v["max_us"].as_f64().unwrap() - 500.0).abs() < 1.0);
        assert_eq!(v["workload"], "mixed");
        assert_eq!(v["params"]["connections"], 32);
        assert_eq!(v["params"]["threads"], 2);
        assert!(v["params"]["w"].is_null());
        assert!(v.get("preload_s").is_none() && v.get("baseline").is_none());
    }

    #[test]
    fn errors_are_counted_by_kind() {
        let mut t = totals();
        let get = t.get_mut(&OpKind::Get).unwrap();
        get.errors.insert("timeout".into(), 3);
        get.errors.insert("not_found".into(), 2);
        t.get_mut(&OpKind::Put)
            .unwrap()
            .errors
            .insert("timeout".into(), 1);
        let r = report(&t, 1.0);
        assert_eq!(r.errors, 6);
        assert_eq!(r.errors_by_kind["timeout"], 4);
        assert!(r.to_table().contains("6 (not_found 2, timeout 4)"));
    }

    #[test]
    fn an_operation_without_successes_has_no_figures() {
        let mut t = totals();
        t.insert(OpKind::Put, OpWindow::default());
        let v: serde_json::Value = serde_json::from_str(&report(&t, 1.0).to_json()).unwrap();
        assert_eq!(v["ops"], 100);
        assert!(v.get("put").is_none(), "{v}");
    }

    #[test]
    fn table_reads_the_run_against_its_baseline() {
        let mut r = report(&totals(), 1.0);
        assert!(!r.to_table().contains("echo"));
        r.baseline = Some(Baseline {
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
        let t = report(&totals(), 1.0).to_table();
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
