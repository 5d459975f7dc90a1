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
        if h.is_empty() {
            return Self::default();
        }
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        Latency {
            p50_us: us(0.50),
            p95_us: us(0.95),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: h.max() as f64 / 1000.0,
            mean_us: h.mean() / 1000.0,
        }
    }
}
