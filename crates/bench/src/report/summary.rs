//! The run's summary: `summary.json` (read back by `compare`) and
//! `summary.txt` (also printed at the end of a run).
//!
//! Invariant: per operation, `n` and `errors` equal the sums of its CSV
//! rows, and `errors` equals the sum of `errors_by_kind`.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::machine::MachineFacts;
use crate::baseline::Baseline;
#[cfg(test)]
use crate::baseline::Latency;
use crate::window::OpWindow;

/// Why the measured phase ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum Ending {
    /// It ran its whole duration.
    Completed,
    /// No request succeeded for `give_up_after`.
    GaveUp(String),
    /// Interrupted (Ctrl-C).
    Interrupted,
    /// Every worker used up its keys before the duration (`keys.once`):
    /// the elapsed time is that of the whole key space.
    KeysUsedUp,
    /// Every worker issued its share of `ops` before the duration.
    OpsDone,
    /// Its caller ended it (a phase measured while something else ran).
    Told,
}

/// One operation over the whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    pub op: String,
    pub n: u64,
    pub errors: u64,
    pub not_found: u64,
    pub ops_per_s: f64,
    pub min_us: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub p99_9_us: u64,
    pub max_us: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
}

impl OpSummary {
    /// The summary of `op` from its merged windows over `elapsed_s`.
    pub fn new(op: &str, w: &OpWindow, elapsed_s: f64) -> OpSummary {
        let row = super::csv::Row::new(elapsed_s, elapsed_s, w);
        OpSummary {
            op: op.to_string(),
            n: row.n,
            errors: row.errors,
            not_found: w.not_found,
            ops_per_s: row.ops_per_s(),
            min_us: row.min,
            mean_us: row.mean,
            p50_us: row.p50,
            p95_us: row.p95,
            p99_us: row.p99,
            p99_9_us: row.p99_9,
            max_us: row.max,
            errors_by_kind: w.errors.clone(),
        }
    }
}

/// Everything `summary.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub config: String,
    pub started_at: String,
    pub duration_s: f64,
    pub elapsed_s: f64,
    pub ending: Ending,
    pub protocol: String,
    pub endpoints: Vec<String>,
    pub concurrent: usize,
    pub mode: String,
    pub server: Option<String>,
    pub preload_keys: Option<u64>,
    pub preload_s: Option<f64>,
    /// Workers still running at the hard stop, aborted (should be 0).
    pub workers_aborted: usize,
    pub ops: Vec<OpSummary>,
    pub machine: MachineFacts,
    /// The loopback echo run before the measured phase; absent when the
    /// run skipped it (and in results written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
}

impl Summary {
    /// Successful requests per second, all operations.
    pub fn total_ops_per_s(&self) -> f64 {
        self.ops.iter().map(|o| o.ops_per_s).sum()
    }

    /// Errors of every operation, by kind.
    pub fn errors_by_kind(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for o in &self.ops {
            for (k, n) in &o.errors_by_kind {
                *all.entry(k.clone()).or_default() += n;
            }
        }
        all
    }

    /// The text report.
    pub fn to_text(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "eddy bench run {}", self.config);
        let _ = writeln!(
            t,
            "started {} · {} {} · {} workers ({}) · {:.1} s of {:.1} s · {}",
            self.started_at,
            self.protocol,
            self.endpoints.join(","),
            self.concurrent,
            self.mode,
            self.elapsed_s,
            self.duration_s,
            ending_text(&self.ending)
        );
        if let Some(s) = &self.server {
            let _ = writeln!(t, "server: {s}");
        }
        if let (Some(k), Some(s)) = (self.preload_keys, self.preload_s) {
            let _ = writeln!(t, "preload: {k} keys in {s:.1} s");
        }
        let _ = writeln!(t, "{}", self.machine.one_line());
        if let Some(b) = &self.baseline {
            let _ = writeln!(t, "{}", b.one_line(self.total_ops_per_s()));
        }
        t.push('\n');
        t.push_str(&op_table(&self.ops));
        let _ = writeln!(t, "total: {:.0} ops/s", self.total_ops_per_s());
        errors_text(&mut t, &self.errors_by_kind());
        if self.workers_aborted > 0 {
            let _ = writeln!(
                t,
                "warning: {} workers did not stop in time and were aborted",
                self.workers_aborted
            );
        }
        t
    }
}

fn ending_text(e: &Ending) -> String {
    match e {
        Ending::Completed => "completed".into(),
        Ending::GaveUp(why) => format!("STOPPED EARLY: {why}"),
        Ending::Interrupted => "interrupted".into(),
        Ending::KeysUsedUp => "every key used once".into(),
        Ending::OpsDone => "every request done".into(),
        Ending::Told => "ended by its caller".into(),
    }
}

/// The per-operation table (latencies in µs).
pub fn op_table(ops: &[OpSummary]) -> String {
    let mut t = format!(
        "{:<12} {:>10} {:>9} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9}\n",
        "op", "ok", "ops/s", "errors", "mean", "p50", "p95", "p99", "p99.9", "max"
    );
    for o in ops {
        let _ = writeln!(
            t,
            "{:<12} {:>10} {:>9.0} {:>8} {:>9.0} {:>8} {:>8} {:>8} {:>8} {:>9}",
            o.op,
            o.n,
            o.ops_per_s,
            o.errors,
            o.mean_us,
            o.p50_us,
            o.p95_us,
            o.p99_us,
            o.p99_9_us,
            o.max_us
        );
    }
    t
}

fn errors_text(t: &mut String, errors: &BTreeMap<String, u64>) {
    if errors.is_empty() {
        t.push_str("errors: none\n");
        return;
    }
    t.push_str("errors by kind:\n");
    let mut sorted: Vec<_> = errors.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (kind, n) in sorted {
        let _ = writeln!(t, "  {n:>10}  {kind}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Summary {
        let mut w = OpWindow::default();
        for us in [100, 200, 300] {
            w.latency_ns.record(us * 1000).unwrap();
        }
        w.errors.insert("connection_refused".into(), 5);
        w.errors.insert("server: overload".into(), 1);
        Summary {
            config: "bench/x.toml".into(),
            started_at: "2026-11-21T15:00:00Z".into(),
            duration_s: 3.0,
            elapsed_s: 3.0,
            ending: Ending::GaveUp("no request succeeded for 10 s".into()),
            protocol: "pb".into(),
            endpoints: vec!["127.0.0.1:8087".into()],
            concurrent: 4,
            mode: "max".into(),
            server: Some("eddy@127.0.0.1 3.2.0".into()),
            preload_keys: None,
            preload_s: None,
            workers_aborted: 0,
            ops: vec![OpSummary::new("get", &w, 3.0)],
            machine: MachineFacts::default(),
            baseline: Some(Baseline {
                duration_s: 1.0,
                ops: 12,
                ops_per_s: 12.0,
                latency: Latency {
                    p50_us: 50.0,
                    p99_us: 70.0,
                    ..Latency::default()
                },
            }),
        }
    }

    #[test]
    fn summary_counts_and_round_trips() {
        let s = sample();
        let get = &s.ops[0];
        assert_eq!((get.n, get.errors), (3, 6));
        assert_eq!(get.errors, get.errors_by_kind.values().sum::<u64>());
        assert!((get.ops_per_s - 1.0).abs() < 1e-9);
        let back: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn text_lists_errors_by_kind_and_the_ending() {
        let text = sample().to_text();
        assert!(
            text.contains("STOPPED EARLY: no request succeeded"),
            "{text}"
        );
        assert!(text.contains("connection_refused"), "{text}");
        let refused = text.find("connection_refused").unwrap();
        assert!(
            refused < text.find("server: overload").unwrap(),
            "most frequent first"
        );
        assert!(text.lines().any(|l| l.starts_with("get ")), "{text}");
        // 1 get/s against an echo of 12 round trips/s.
        assert!(text.contains("loopback echo: 12 ops/s"), "{text}");
        assert!(text.contains("8.3 % of its ops/s"), "{text}");
    }

    #[test]
    fn a_summary_from_before_the_baseline_still_reads() {
        let mut s = sample();
        s.baseline = None;
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("baseline"));
        let back: Summary = serde_json::from_str(&json).unwrap();
        assert_eq!(back.baseline, None);
        assert!(!back.to_text().contains("echo"));
    }
}
