//! A node's statistics, in one place (design note 025).
//!
//! A [`Registry`] belongs to one node: the node builds it, registers the
//! figures it keeps, and hands it to the front ends, which register theirs
//! and read everything back for `/stats` (Riak's names, JSON) and
//! `/metrics` (Prometheus' text format, [`Registry::render`]). There is no
//! process-global recorder: two nodes in one process (the crates'
//! integration tests) keep apart figures.
//!
//! Invariants:
//! - a figure is registered once, when its owner is built; the hot path
//!   holds its handle ([`Counter`], [`Gauge`], [`Histogram`]) and only adds to atomics
//!   (and, for a histogram, one short lock of its one-minute window): no
//!   name is formatted or looked up per request;
//! - registering a name and labels again returns the handle registered
//!   first, so two owners of one figure (both front ends) count in one;
//! - every name starts with `eddy_`, and a name keeps the kind and help it
//!   was first registered with.

mod counter;
mod gauge;
mod histogram;
mod registry;
mod text;
mod window;

pub use counter::Counter;
pub use gauge::{Gauge, Tracked};
pub use histogram::{Histogram, Percentiles, Unit, micros_between};
pub use registry::{Kind, Registry, Sample};

/// Buckets of times, in microseconds: 100 µs to 60 s (the FSM times, the
/// commit log's syncs, MapReduce phases).
pub const TIME_US_BOUNDS: &[u64] = &[
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000, 60_000_000,
];
