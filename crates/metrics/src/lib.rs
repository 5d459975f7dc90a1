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
//!   holds its handle ([`Counter`], [`Histogram`]) and only adds to atomics
//!   (and, for a histogram, one short lock of its one-minute window): no
//!   name is formatted or looked up per request;
//! - registering a name and labels again returns the handle registered
//!   first, so two owners of one figure (both front ends) count in one;
//! - every name starts with `eddy_`, and a name keeps the kind and help it
//!   was first registered with.

mod counter;
mod histogram;
mod registry;
mod text;
mod window;

pub use counter::Counter;
pub use histogram::{Histogram, Percentiles, Unit};
pub use registry::{Kind, Registry, Sample};
