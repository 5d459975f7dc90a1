//! A histogram: Prometheus' cumulative buckets, sum and count since the
//! node started, and the values of the last minute for `/stats`'
//! percentiles (Riak's `_mean`, `_median`, `_95`, `_99`, `_100`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::window::Windowed;

/// What a histogram's values count; `/metrics` shows microseconds as
/// seconds, Prometheus' unit of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Times, recorded in microseconds.
    Microseconds,
    /// Sizes in bytes.
    Bytes,
    /// Plain counts (siblings, items).
    Count,
}

impl Unit {
    /// What one recorded unit is in the unit `/metrics` shows.
    pub(crate) fn scale(self) -> f64 {
        match self {
            Unit::Microseconds => 1e-6,
            Unit::Bytes | Unit::Count => 1.0,
        }
    }
}

/// Riak's one-minute figures of a histogram; all 0 when the minute had
/// no value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub mean: u64,
    pub median: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

/// A distribution of values; clones record into the same figure.
#[derive(Clone)]
pub struct Histogram(Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) unit: Unit,
    /// Upper bounds of the buckets, ascending, in recorded units.
    pub(crate) bounds: &'static [u64],
    /// Values at or below each bound and above the one before; the last
    /// slot holds those above every bound.
    pub(crate) buckets: Box<[AtomicU64]>,
    pub(crate) sum: AtomicU64,
    pub(crate) count: AtomicU64,
    window: Windowed,
    started: Instant,
}

impl Histogram {
    /// A histogram with the buckets `bounds` (ascending), registered
    /// nowhere.
    pub fn new(unit: Unit, bounds: &'static [u64]) -> Histogram {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]), "ascending bounds");
        let buckets = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Histogram(Arc::new(Inner {
            unit,
            bounds,
            buckets,
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
            window: Windowed::new(),
            started: Instant::now(),
        }))
    }

    /// Records one value.
    pub fn record(&self, value: u64) {
        self.record_many(&[value]);
    }

    /// Records one value as of `now` (a clock reading the caller shares
    /// among the figures of one piece of work).
    pub fn record_at(&self, value: u64, now: Instant) {
        self.record_many_at(&[value], now);
    }

    /// Records every value of `values` with one reading of the clock and
    /// one lock of the last minute's window, as a request that answers
    /// many keys does.
    pub fn record_many(&self, values: &[u64]) {
        self.record_many_at(values, Instant::now());
    }

    /// Records `values` as of `now`.
    pub fn record_many_at(&self, values: &[u64], now: Instant) {
        if values.is_empty() {
            return;
        }
        let h = &self.0;
        let mut sum = 0u64;
        for run in values.chunk_by(|a, b| h.slot(*a) == h.slot(*b)) {
            if let Some(bucket) = run.first().and_then(|v| h.buckets.get(h.slot(*v))) {
                bucket.fetch_add(run.len() as u64, Ordering::Relaxed);
            }
            sum = run.iter().fold(sum, |s, v| s.saturating_add(*v));
        }
        h.sum.fetch_add(sum, Ordering::Relaxed);
        h.count.fetch_add(values.len() as u64, Ordering::Relaxed);
        let secs = now.saturating_duration_since(h.started).as_secs();
        h.window.record_many(secs, values);
    }

    /// Records the time since `start`, in microseconds.
    /// (One reading of the clock serves the time and the window.)
    pub fn record_since(&self, start: Instant) {
        let now = Instant::now();
        self.record_at(micros_between(start, now), now);
    }

    /// Values recorded since the node started.
    pub fn count(&self) -> u64 {
        self.0.count.load(Ordering::Relaxed)
    }

    /// The last minute's mean, median, 95th and 99th percentiles and
    /// maximum.
    pub fn last_minute(&self) -> Percentiles {
        let h = self.0.window.snapshot(self.0.started.elapsed().as_secs());
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            mean: h.mean().round() as u64,
            median: h.value_at_quantile(0.5),
            p95: h.value_at_quantile(0.95),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.0
    }
}

/// The microseconds from `start` to `now` (0 if `now` is earlier), as
/// times are recorded.
pub fn micros_between(start: Instant, now: Instant) -> u64 {
    u64::try_from(now.saturating_duration_since(start).as_micros()).unwrap_or(u64::MAX)
}

impl Inner {
    /// The bucket `value` falls in: the first whose bound holds it, or
    /// the last (above every bound).
    fn slot(&self, value: u64) -> usize {
        self.bounds.partition_point(|b| *b < value)
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Histogram({} values)", self.count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fall_in_the_first_bucket_whose_bound_holds_them() {
        let h = Histogram::new(Unit::Count, &[1, 5, 10]);
        for v in [0, 1, 2, 5, 11, 500] {
            h.record(v);
        }
        let counts: Vec<u64> = (h.inner().buckets.iter())
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counts, [2, 2, 0, 2]);
        assert_eq!(h.count(), 6);
        assert_eq!(h.inner().sum.load(Ordering::Relaxed), 519);
    }

    #[test]
    fn many_values_recorded_at_once_count_as_each_recorded_alone() {
        let values = [0, 1, 1, 2, 5, 11, 500, 3, 3, 0];
        let (one, many) = (
            Histogram::new(Unit::Count, &[1, 5, 10]),
            Histogram::new(Unit::Count, &[1, 5, 10]),
        );
        values.iter().for_each(|v| one.record(*v));
        many.record_many(&values);
        many.record_many(&[]);
        let figures = |h: &Histogram| {
            let i = h.inner();
            let buckets: Vec<u64> = i
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect();
            (
                buckets,
                i.sum.load(Ordering::Relaxed),
                h.count(),
                h.last_minute(),
            )
        };
        assert_eq!(figures(&one), figures(&many));
        assert_eq!(figures(&many).0, [4, 4, 0, 2]);
    }

    #[test]
    fn the_last_minute_gives_riaks_percentiles() {
        let h = Histogram::new(Unit::Microseconds, &[100]);
        assert_eq!(h.last_minute(), Percentiles::default());
        for v in 1..=100 {
            h.record(v);
        }
        let p = h.last_minute();
        assert_eq!(
            (p.mean, p.median, p.p95, p.p99, p.max),
            (51, 50, 95, 99, 100)
        );
    }
}
