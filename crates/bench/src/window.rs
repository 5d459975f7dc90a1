//! Measurements of one report interval, shared by all workers.
//!
//! Workers call [`Recorder::success`] and [`Recorder::failure`] after each
//! request; the collector [`Recorder::take`]s the window at each interval
//! boundary and starts a fresh one. Each worker records into a shard of
//! its own (a mutex only the collector also takes, once an interval), so
//! workers never contend with each other: a storage engine answers in a
//! microsecond, and one shared lock would cost a share of that. Latencies
//! are nanoseconds, at least 1, so that sub-microsecond answers keep their
//! figures; reports show microseconds.
//!
//! Invariant: every finished request is counted in exactly one window,
//! either as a latency (success) or under one error label (failure).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::ops::OpKind;

/// Highest latency a histogram keeps exactly (10 min, in ns); above it,
/// recorded as this.
pub const LATENCY_NS_MAX: u64 = 600_000_000_000;

/// A fresh latency histogram (1 ns to 10 min, 3 significant figures).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, 3).expect("static bounds are valid")
}

/// `d` in whole nanoseconds, at least 1 (what a histogram records).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}

/// One operation's figures in one window.
#[derive(Clone, Debug)]
pub struct OpWindow {
    /// Latencies of successful requests, in nanoseconds.
    pub latency_ns: Histogram<u64>,
    pub errors: BTreeMap<String, u64>,
    /// Successful gets (and updates) that found nothing.
    pub not_found: u64,
}

impl Default for OpWindow {
    fn default() -> Self {
        OpWindow {
            latency_ns: histogram(),
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
        self.latency_ns.add(&other.latency_ns).expect("same bounds");
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

impl Window {
    fn merge(&mut self, other: Window) {
        for (op, w) in other.ops {
            match self.ops.get_mut(&op) {
                Some(mine) => mine.merge(&w),
                None => {
                    self.ops.insert(op, w);
                }
            }
        }
    }
}

/// One worker's part of the current window and of the running totals.
#[derive(Debug)]
struct Shard {
    window: Window,
    ok_total: u64,
    errors_total: u64,
    last_success: Instant,
}

/// The run's current window and running totals, in one shard per worker.
#[derive(Debug)]
pub struct Recorder {
    shards: Vec<Mutex<Shard>>,
}

/// Counts for the progress display.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub ok: u64,
    pub errors: u64,
}

impl Recorder {
    /// An empty recorder for `workers` workers (at least one shard);
    /// "last success" starts now.
    pub fn new(workers: usize) -> Recorder {
        let now = Instant::now();
        let shard = || {
            Mutex::new(Shard {
                window: Window::default(),
                ok_total: 0,
                errors_total: 0,
                last_success: now,
            })
        };
        Recorder {
            shards: (0..workers.max(1)).map(|_| shard()).collect(),
        }
    }

    /// Worker `worker`'s shard (workers beyond the count share the last).
    fn lock(&self, worker: usize) -> std::sync::MutexGuard<'_, Shard> {
        let i = worker.min(self.shards.len() - 1);
        self.shards[i]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a successful request of `worker`, sent and answered at
    /// `(started, ended)` (the worker's clock readings: the recorder reads
    /// none of its own).
    pub fn success(
        &self,
        worker: usize,
        op: OpKind,
        (started, ended): (Instant, Instant),
        not_found: bool,
    ) {
        let latency = ended.saturating_duration_since(started);
        let mut g = self.lock(worker);
        let w = g.window.ops.entry(op).or_default();
        w.latency_ns.saturating_record(nanos(latency));
        w.not_found += u64::from(not_found);
        g.ok_total += 1;
        g.last_success = g.last_success.max(ended);
    }

    /// Records a failed request of `worker` under `label`.
    pub fn failure(&self, worker: usize, op: OpKind, label: String) {
        let mut g = self.lock(worker);
        *g.window
            .ops
            .entry(op)
            .or_default()
            .errors
            .entry(label)
            .or_default() += 1;
        g.errors_total += 1;
    }

    /// Ends the current window and returns it, every shard's merged.
    pub fn take(&self) -> Window {
        let mut all = Window::default();
        for i in 0..self.shards.len() {
            all.merge(std::mem::take(&mut self.lock(i).window));
        }
        all
    }

    /// Requests so far (all windows).
    pub fn totals(&self) -> Totals {
        (0..self.shards.len()).fold(Totals::default(), |t, i| {
            let g = self.lock(i);
            Totals {
                ok: t.ok + g.ok_total,
                errors: t.errors + g.errors_total,
            }
        })
    }

    /// When a request last succeeded (or the recorder was made).
    pub fn last_success(&self) -> Instant {
        (0..self.shards.len())
            .map(|i| self.lock(i).last_success)
            .max()
            .expect("at least one shard")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn windows_split_counts_exactly() {
        let r = Recorder::new(2);
        let t0 = Instant::now();
        r.success(0, OpKind::Get, (t0, t0 + Duration::from_micros(120)), false);
        r.success(1, OpKind::Get, (t0, t0), true);
        r.failure(1, OpKind::Put, "timeout".into());
        let w = r.take();
        let get = &w.ops[&OpKind::Get];
        assert_eq!(
            (get.latency_ns.len(), get.not_found, get.latency_ns.min()),
            (2, 1, 1)
        );
        assert_eq!(w.ops[&OpKind::Put].errors["timeout"], 1);
        r.failure(0, OpKind::Put, "timeout".into());
        let w2 = r.take();
        assert!(!w2.ops.contains_key(&OpKind::Get));
        assert_eq!(w2.ops[&OpKind::Put].error_count(), 1);
        assert_eq!(r.totals(), Totals { ok: 2, errors: 2 });
        let mut merged = w.ops[&OpKind::Put].clone();
        merged.merge(&w2.ops[&OpKind::Put]);
        assert_eq!(merged.errors["timeout"], 2);
    }
}
