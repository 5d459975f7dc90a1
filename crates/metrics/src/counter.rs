//! A counter: a number that only grows, shared by every clone of its
//! handle.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonic count; clones count into the same figure.
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// A counter registered nowhere (tests, figures not exported).
    pub fn new() -> Counter {
        Counter::default()
    }

    /// Adds one.
    pub fn increment(&self) {
        self.add(1);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The count now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
