//! A run's results directory and everything written into it.
//!
//! | file | what |
//! |---|---|
//! | `config.toml` | the config file as given |
//! | `machine.txt` | [`machine::MachineFacts`] |
//! | `<op>.csv` | one [`csv::Row`] per report interval, per weighted operation |
//! | `summary.json`, `summary.txt` | [`summary::Summary`] |
//! | `throughput.png` | successful ops/s of each operation over time |
//! | `latency_<op>.png` | p50, p95, p99, p99.9 of one operation over time |
//!
//! Invariant: CSV rows are flushed at each interval, so a run that is
//! killed leaves every finished interval on disk.

pub mod chart;
pub mod csv;
pub mod machine;
pub mod summary;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use chart::{Chart, Series};
use csv::Row;
use summary::Summary;

use crate::error::BenchError;
use crate::ops::OpKind;

/// An open results directory.
pub struct ResultsDir {
    path: PathBuf,
    csv: BTreeMap<OpKind, BufWriter<File>>,
    rows: BTreeMap<OpKind, Vec<Row>>,
}

impl ResultsDir {
    /// Creates `path` (and its parents) with one CSV file per operation.
    pub fn create(path: &Path, ops: &[OpKind]) -> Result<ResultsDir, BenchError> {
        std::fs::create_dir_all(path).map_err(BenchError::output(path))?;
        let mut dir = ResultsDir {
            path: path.to_path_buf(),
            csv: BTreeMap::new(),
            rows: BTreeMap::new(),
        };
        for &op in ops {
            let file_path = dir.csv_path(op);
            let file = File::create(&file_path).map_err(BenchError::output(&file_path))?;
            let mut w = BufWriter::new(file);
            writeln!(w, "{}", csv::HEADER).map_err(BenchError::output(&file_path))?;
            dir.csv.insert(op, w);
            dir.rows.insert(op, Vec::new());
        }
        Ok(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn csv_path(&self, op: OpKind) -> PathBuf {
        self.path.join(format!("{}.csv", op.name()))
    }

    /// Writes `name` with `text`.
    pub fn write_file(&self, name: &str, text: &str) -> Result<(), BenchError> {
        let p = self.path.join(name);
        std::fs::write(&p, text).map_err(BenchError::output(p))
    }

    /// Appends one interval's row of `op` and flushes it.
    pub fn append(&mut self, op: OpKind, row: Row) -> Result<(), BenchError> {
        let p = self.csv_path(op);
        if let Some(w) = self.csv.get_mut(&op) {
            writeln!(w, "{}", row.format()).map_err(BenchError::output(&p))?;
            w.flush().map_err(BenchError::output(&p))?;
        }
        self.rows.entry(op).or_default().push(row);
        Ok(())
    }

    /// Writes the summary files and the charts.
    pub fn finish(&self, summary: &Summary) -> Result<(), BenchError> {
        let json = serde_json::to_string_pretty(summary).expect("a summary serialises");
        self.write_file("summary.json", &json)?;
        self.write_file("summary.txt", &summary.to_text())?;
        draw_run_charts(&self.path, &self.rows)
    }
}

/// The points of one metric of `rows` over time.
pub fn points(rows: &[Row], metric: Metric) -> Vec<(f64, f64)> {
    rows.iter().map(|r| (r.elapsed, metric(r))).collect()
}

/// The value of one metric in a row.
pub type Metric = fn(&Row) -> f64;

/// Latency metrics charted, by name (values in ms).
pub const LATENCY_METRICS: [(&str, Metric); 4] = [
    ("p50", |r| r.p50 as f64 / 1000.0),
    ("p95", |r| r.p95 as f64 / 1000.0),
    ("p99", |r| r.p99 as f64 / 1000.0),
    ("p99.9", |r| r.p99_9 as f64 / 1000.0),
];

fn draw_run_charts(dir: &Path, rows: &BTreeMap<OpKind, Vec<Row>>) -> Result<(), BenchError> {
    let throughput: Vec<Series> = rows
        .iter()
        .map(|(op, r)| Series {
            name: op.name().into(),
            points: points(r, Row::ops_per_s),
        })
        .collect();
    let chart = Chart {
        title: "throughput (successful requests)",
        x_label: "seconds",
        y_label: "ops/s",
        series: &throughput,
    };
    chart::draw(&dir.join("throughput.png"), &chart)?;
    for (op, r) in rows {
        let series: Vec<Series> = LATENCY_METRICS
            .iter()
            .map(|(name, f)| Series {
                name: (*name).into(),
                points: points(r, *f),
            })
            .collect();
        let title = format!("{} latency", op.name());
        let chart = Chart {
            title: &title,
            x_label: "seconds",
            y_label: "ms",
            series: &series,
        };
        chart::draw(&dir.join(format!("latency_{}.png", op.name())), &chart)?;
    }
    Ok(())
}
