//! Measurements of one report interval, shared by all workers.
//!
//! Workers call [`Recorder::success`] and [`Recorder::failure`] after each
//! request; the collector [`Recorder::take`]s the window at each interval
//! boundary and starts a fresh one. One mutex guards it: with a runtime of
//! a few threads the lock is held for a histogram increment and is rarely
//! contended. Latencies are microseconds, at least 1.
//!
//! Invariant: every finished request is counted in exactly one window,
//! either as a latency (success) or under one error label (failure).

use std::collections::BTreeMap;
use std::sync::Mutex;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::ops::OpKind;

/// Highest latency a histogram keeps exactly (10 min); above it, recorded
/// as this.
pub const LATENCY_US_MAX: u64 = 600_000_000;

/// A fresh latency histogram (1 µs to 10 min, 3 significant figures).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).expect("static bounds are valid")
}

/// One operation's figures in one window.
#[derive(Clone, Debug)]
pub struct OpWindow {
    pub latency_us: Histogram<u64>,
    pub errors: BTreeMap<String, u64>,
    /// Successful gets (and updates) that found nothing.
    pub not_found: u64,
}

impl Default for OpWindow {
    fn default() -> Self {
        OpWindow {
            latency_us: histogram(),
            errors: BTreeMap::new(),
            not_found: 0,
        }
    }
}

impl OpWindow {
    /// Failures in this window.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Adds `other`'s figures to these.
    pub fn merge(&mut self, other: &OpWindow) {
        self.latency_us.add(&other.latency_us).expect("same bounds");
        for (label, n) in &other.errors {
            *self.errors.entry(label.clone()).or_default() += n;
        }
        self.not_found += other.not_found;
    }
}

/// Every operation's figures in one window, made on first use.
#[derive(Debug, Default)]
pub struct Window {
    pub ops: BTreeMap<OpKind, OpWindow>,
}

#[derive(Debug)]
struct Inner {
    window: Window,
    ok_total: u64,
    errors_total: u64,
    last_success: Instant,
}

/// The run's current window and running totals.
#[derive(Debug)]
pub struct Recorder {
    inner: Mutex<Inner>,
}

/// Counts for the progress display.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub ok: u64,
    pub errors: u64,
}

impl Recorder {
    /// An empty recorder; "last success" starts now.
    pub fn new() -> Recorder {
        Recorder {
            inner: Mutex::new(Inner {
                window: Window::default(),
                ok_total: 0,
                errors_total: 0,
                last_success: Instant::now(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a successful request of `latency_us`.
    pub fn success(&self, op: OpKind, latency_us: u64, not_found: bool) {
        let mut g = self.lock();
        let w = g.window.ops.entry(op).or_default();
        w.latency_us.saturating_record(latency_us.max(1));
        w.not_found += u64::from(not_found);
        g.ok_total += 1;
        g.last_success = Instant::now();
    }

    /// Records a failed request under `label`.
    pub fn failure(&self, op: OpKind, label: String) {
        let mut g = self.lock();
        *g.window
            .ops
            .entry(op)
            .or_default()
            .errors
            .entry(label)
            .or_default() += 1;
        g.errors_total += 1;
    }

    /// Ends the current window and returns it.
    pub fn take(&self) -> Window {
        std::mem::take(&mut self.lock().window)
    }

    /// Requests so far (all windows).
    pub fn totals(&self) -> Totals {
        let g = self.lock();
        Totals {
            ok: g.ok_total,
            errors: g.errors_total,
        }
    }

    /// When a request last succeeded (or the recorder was made).
    pub fn last_success(&self) -> Instant {
        self.lock().last_success
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn windows_split_counts_exactly() {
        let r = Recorder::new();
        r.success(OpKind::Get, 120, false);
        r.success(OpKind::Get, 0, true);
        r.failure(OpKind::Put, "timeout".into());
        let w = r.take();
        let get = &w.ops[&OpKind::Get];
        assert_eq!(
            (get.latency_us.len(), get.not_found, get.latency_us.min()),
            (2, 1, 1)
        );
        assert_eq!(w.ops[&OpKind::Put].errors["timeout"], 1);
        r.failure(OpKind::Put, "timeout".into());
        let w2 = r.take();
        assert!(!w2.ops.contains_key(&OpKind::Get));
        assert_eq!(w2.ops[&OpKind::Put].error_count(), 1);
        assert_eq!(r.totals(), Totals { ok: 2, errors: 2 });
        let mut merged = w.ops[&OpKind::Put].clone();
        merged.merge(&w2.ops[&OpKind::Put]);
        assert_eq!(merged.errors["timeout"], 2);
    }
}
