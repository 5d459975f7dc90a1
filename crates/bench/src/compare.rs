//! `eddy bench compare DIR_A DIR_B…`: several runs side by side.
//!
//! Reads each directory's `summary.json` and `<op>.csv`, prints (and
//! writes to `compare.txt`) a table per operation with each run's figures
//! and its throughput relative to the first run, and draws one chart per
//! operation and metric with one line per run:
//! `<op>_throughput.png`, `<op>_p50.png`, `<op>_p99.png`, `<op>_p99_9.png`.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::error::BenchError;
use crate::ops::OpKind;
use crate::report::chart::{self, Chart, Series};
use crate::report::csv::{self, Row};
use crate::report::summary::{OpSummary, Summary};
use crate::report::{Metric, points};
use crate::timefmt;

/// A finished comparison.
#[derive(Debug)]
pub struct CompareOutcome {
    pub dir: PathBuf,
    pub text: String,
}

/// One run as read back.
struct Run {
    label: String,
    summary: Summary,
    rows: Vec<(String, Vec<Row>)>,
}

impl Run {
    fn rows(&self, op: &str) -> Option<&[Row]> {
        self.rows
            .iter()
            .find(|(o, _)| o == op)
            .map(|(_, r)| r.as_slice())
    }

    fn op(&self, op: &str) -> Option<&OpSummary> {
        self.summary.ops.iter().find(|o| o.op == op)
    }
}

/// Compares the runs in `dirs`; charts go to `out` (default
/// `bench-results/compare-<UTC timestamp>`).
pub fn compare(dirs: &[PathBuf], out: Option<&Path>) -> Result<CompareOutcome, BenchError> {
    let mut runs = dirs
        .iter()
        .map(|d| load(d))
        .collect::<Result<Vec<_>, _>>()?;
    label_uniquely(&mut runs);
    let dir = match out {
        Some(p) => p.to_path_buf(),
        None => Path::new("bench-results").join(format!("compare-{}", timefmt::now().1)),
    };
    std::fs::create_dir_all(&dir).map_err(BenchError::output(&dir))?;
    let ops = ops_of(&runs);
    let mut text = String::new();
    for op in &ops {
        text.push_str(&table(&runs, op));
        text.push('\n');
        draw(&dir, &runs, op)?;
    }
    text.push_str(&echo_table(&runs));
    let path = dir.join("compare.txt");
    std::fs::write(&path, &text).map_err(BenchError::output(path))?;
    Ok(CompareOutcome { dir, text })
}

fn load(dir: &Path) -> Result<Run, BenchError> {
    let not_a_result = |message: String| BenchError::NotAResult {
        path: dir.to_path_buf(),
        message,
    };
    let json = std::fs::read_to_string(dir.join("summary.json"))
        .map_err(|e| not_a_result(format!("summary.json: {e}")))?;
    let summary: Summary =
        serde_json::from_str(&json).map_err(|e| not_a_result(format!("summary.json: {e}")))?;
    let mut rows = Vec::new();
    for o in &summary.ops {
        let name = format!("{}.csv", o.op);
        let text = std::fs::read_to_string(dir.join(&name))
            .map_err(|e| not_a_result(format!("{name}: {e}")))?;
        rows.push((
            o.op.clone(),
            csv::parse_file(&text).map_err(|e| not_a_result(format!("{name}: {e}")))?,
        ));
    }
    let label = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(Run {
        label,
        summary,
        rows,
    })
}

/// Appends `#2`, `#3`… to labels that repeat.
fn label_uniquely(runs: &mut [Run]) {
    let mut seen = BTreeSet::new();
    for (i, r) in runs.iter_mut().enumerate() {
        if !seen.insert(r.label.clone()) {
            r.label = format!("{}#{}", r.label, i + 1);
        }
    }
}

/// Operations any run has, in report order.
fn ops_of(runs: &[Run]) -> Vec<String> {
    let names: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| r.summary.ops.iter().map(|o| o.op.as_str()))
        .collect();
    let mut ops: Vec<String> = OpKind::ALL
        .iter()
        .map(|o| o.name())
        .filter(|n| names.contains(n))
        .map(str::to_string)
        .collect();
    ops.extend(
        names
            .iter()
            .filter(|n| OpKind::from_name(n).is_none())
            .map(|n| n.to_string()),
    );
    ops
}

fn table(runs: &[Run], op: &str) -> String {
    let mut t = format!(
        "{op}\n{:<28} {:>9} {:>8} {:>9} {:>8} {:>8} {:>8} {:>9} {:>8}\n",
        "run", "ops/s", "vs first", "mean", "p50", "p99", "p99.9", "max", "errors"
    );
    let first = runs.first().and_then(|r| r.op(op)).map(|o| o.ops_per_s);
    for r in runs {
        let Some(o) = r.op(op) else {
            let _ = writeln!(t, "{:<28} (not in this run)", r.label);
            continue;
        };
        let rel = match first {
            Some(f) if f > 0.0 => format!("{:+.1}%", (o.ops_per_s / f - 1.0) * 100.0),
            _ => "-".into(),
        };
        let _ = writeln!(
            t,
            "{:<28} {:>9.0} {:>8} {:>9.0} {:>8} {:>8} {:>8} {:>9} {:>8}",
            r.label,
            o.ops_per_s,
            rel,
            o.mean_us,
            o.p50_us,
            o.p99_us,
            o.p99_9_us,
            o.max_us,
            o.errors
        );
    }
    t
}

/// Each run's total throughput against its own loopback echo, so runs
/// taken on different days (or machines) can be set side by side; empty
/// when no run measured one.
fn echo_table(runs: &[Run]) -> String {
    if runs.iter().all(|r| r.summary.baseline.is_none()) {
        return String::new();
    }
    let mut t = format!(
        "against each run's loopback echo\n{:<28} {:>9} {:>10} {:>9} {:>8}\n",
        "run", "ops/s", "echo ops/s", "echo p99", "of echo"
    );
    for r in runs {
        let total = r.summary.total_ops_per_s();
        let _ = match &r.summary.baseline {
            Some(b) => writeln!(
                t,
                "{:<28} {:>9.0} {:>10.0} {:>9.0} {:>7.1}%",
                r.label,
                total,
                b.ops_per_s,
                b.latency.p99_us,
                b.share_of(total)
            ),
            None => writeln!(t, "{:<28} {:>9.0} (no echo measured)", r.label, total),
        };
    }
    t
}

/// The metrics compared, with file suffix, axis label and value.
const METRICS: [(&str, &str, Metric); 4] = [
    ("throughput", "ops/s", Row::ops_per_s),
    ("p50", "ms", |r| r.p50 as f64 / 1000.0),
    ("p99", "ms", |r| r.p99 as f64 / 1000.0),
    ("p99_9", "ms", |r| r.p99_9 as f64 / 1000.0),
];

fn draw(dir: &Path, runs: &[Run], op: &str) -> Result<(), BenchError> {
    for (metric, unit, f) in METRICS {
        let series: Vec<Series> = runs
            .iter()
            .filter_map(|r| r.rows(op).map(|rows| (r, rows)))
            .map(|(r, rows)| Series {
                name: r.label.clone(),
                points: points(rows, f),
            })
            .collect();
        let title = format!("{op}: {}", metric.replace('_', "."));
        let c = Chart {
            title: &title,
            x_label: "seconds",
            y_label: unit,
            series: &series,
        };
        chart::draw(&dir.join(format!("{op}_{metric}.png")), &c)?;
    }
    Ok(())
}
