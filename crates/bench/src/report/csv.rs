//! The per-operation CSV files: one row per report interval.
//!
//! Columns: `elapsed` (seconds from the start to the window's end),
//! `window` (the window's length in seconds), `n` (successful requests),
//! `min, mean, p50, p95, p99, p99_9, max` (their latency in µs, 0 when
//! `n` is 0), `errors` (failed requests). Invariant: `parse(format(r))`
//! gives back `r` (to the precision written).

use crate::window::OpWindow;

/// The header line.
pub const HEADER: &str = "elapsed,window,n,min,mean,p50,p95,p99,p99_9,max,errors";

/// One interval of one operation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub elapsed: f64,
    pub window: f64,
    pub n: u64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub max: u64,
    pub errors: u64,
}

impl Row {
    /// The row of `w`, a window of `window` seconds ending `elapsed`
    /// seconds into the run.
    pub fn new(elapsed: f64, window: f64, w: &OpWindow) -> Row {
        let h = &w.latency_ns;
        let n = h.len();
        // The windows keep nanoseconds; rows are whole microseconds.
        let us = |ns: u64| if n == 0 { 0 } else { ns / 1000 };
        let q = |p: f64| us(h.value_at_quantile(p));
        Row {
            elapsed,
            window,
            n,
            min: us(h.min()),
            mean: if n == 0 { 0.0 } else { h.mean() / 1000.0 },
            p50: q(0.5),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            max: us(h.max()),
            errors: w.error_count(),
        }
    }

    /// Successful requests per second in this window.
    pub fn ops_per_s(&self) -> f64 {
        if self.window > 0.0 {
            self.n as f64 / self.window
        } else {
            0.0
        }
    }

    /// The CSV line (no newline).
    pub fn format(&self) -> String {
        format!(
            "{:.3},{:.3},{},{},{:.1},{},{},{},{},{},{}",
            self.elapsed,
            self.window,
            self.n,
            self.min,
            self.mean,
            self.p50,
            self.p95,
            self.p99,
            self.p99_9,
            self.max,
            self.errors
        )
    }

    /// Parses a line written by [`Row::format`].
    pub fn parse(line: &str) -> Result<Row, String> {
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() != 11 {
            return Err(format!("expected 11 columns, found {}: {line:?}", f.len()));
        }
        let float = |i: usize| {
            f[i].parse::<f64>()
                .map_err(|e| format!("column {}: {e}", i + 1))
        };
        let int = |i: usize| {
            f[i].parse::<u64>()
                .map_err(|e| format!("column {}: {e}", i + 1))
        };
        Ok(Row {
            elapsed: float(0)?,
            window: float(1)?,
            n: int(2)?,
            min: int(3)?,
            mean: float(4)?,
            p50: int(5)?,
            p95: int(6)?,
            p99: int(7)?,
            p99_9: int(8)?,
            max: int(9)?,
            errors: int(10)?,
        })
    }
}

/// Parses a whole CSV file (header checked).
pub fn parse_file(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines();
    match lines.next() {
        Some(h) if h.trim() == HEADER => {}
        other => return Err(format!("bad header {other:?}, expected {HEADER:?}")),
    }
    lines
        .filter(|l| !l.trim().is_empty())
        .map(Row::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window::OpWindow;

    #[test]
    fn rows_summarise_a_window_and_round_trip() {
        let mut w = OpWindow::default();
        for us in 1..=1000 {
            w.latency_ns.record(us * 1000).unwrap();
        }
        w.errors.insert("timeout".into(), 3);
        let row = Row::new(2.0, 1.0, &w);
        assert_eq!((row.n, row.min, row.max, row.errors), (1000, 1, 1000, 3));
        assert_eq!(row.p50, 500);
        assert!((990..=991).contains(&row.p99), "{}", row.p99);
        assert!((row.mean - 500.5).abs() < 1.0);
        assert_eq!(row.ops_per_s(), 1000.0);
        let text = format!("{HEADER}\n{}\n", row.format());
        let back = parse_file(&text).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(
            Row {
                mean: row.mean,
                ..back[0].clone()
            },
            row
        );
    }

    #[test]
    fn empty_windows_are_zero_rows() {
        let row = Row::new(1.0, 1.0, &OpWindow::default());
        assert_eq!(
            row,
            Row {
                elapsed: 1.0,
                window: 1.0,
                ..Row::default()
            }
        );
        assert_eq!(row.format(), "1.000,1.000,0,0,0.0,0,0,0,0,0,0");
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(parse_file("a,b\n").is_err());
        assert!(parse_file(&format!("{HEADER}\n1,2,3\n")).is_err());
        assert!(parse_file(&format!("{HEADER}\n1,1,x,0,0,0,0,0,0,0,0\n")).is_err());
        assert_eq!(parse_file(&format!("{HEADER}\n")).unwrap(), vec![]);
    }
}
