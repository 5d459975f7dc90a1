//! Latency percentiles of a nanosecond histogram, in microseconds: the
//! figures every report of the bench tools gives (the loopback echo,
//! `eddy bench pb`, `eddy bench storage`).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency percentiles in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

impl Latency {
    /// Percentiles of a nanosecond histogram (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Self {
        Self::scaled(h, 1000.0)
    }

    /// Percentiles of a histogram of `per_us` units per microsecond.
    fn scaled(h: &Histogram<u64>, per_us: f64) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let us = |q: f64| h.value_at_quantile(q) as f64 / per_us;
        Latency {
            p50_us: us(0.50),
            p95_us: us(0.95),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: h.max() as f64 / per_us,
            mean_us: h.mean() / per_us,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_read_as_microseconds() {
        let mut ns = crate::window::histogram();
        for i in 1..=100 {
            ns.record(i * 1000).unwrap();
        }
        let l = Latency::of(&ns);
        assert!((l.p50_us - 50.0).abs() < 0.1 && (l.mean_us - 50.5).abs() < 0.1);
        assert!((l.max_us - 100.0).abs() < 0.1);
        assert_eq!(Latency::of(&crate::window::histogram()), Latency::default());
    }
}
