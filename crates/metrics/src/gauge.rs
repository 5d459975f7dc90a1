//! A gauge: a number that goes up and down (work running now), shared by
//! every clone of its handle.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A level; clones move the same figure.
#[derive(Clone, Debug, Default)]
pub struct Gauge(Arc<AtomicI64>);

impl Gauge {
    /// A gauge registered nowhere (tests, figures not exported).
    pub fn new() -> Gauge {
        Gauge::default()
    }

    /// Adds one until the returned guard is dropped: the work it counts
    /// runs while the guard lives, whichever way it ends.
    #[must_use = "the gauge goes down again when the guard is dropped"]
    pub fn track(&self) -> Tracked {
        self.0.fetch_add(1, Ordering::Relaxed);
        Tracked(self.clone())
    }

    /// The level now (never below 0).
    pub fn get(&self) -> u64 {
        u64::try_from(self.0.load(Ordering::Relaxed)).unwrap_or(0)
    }
}

/// One unit of a [`Gauge`], taken back when dropped.
#[derive(Debug)]
pub struct Tracked(Gauge);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_counts_while_it_lives() {
        let g = Gauge::new();
        let one = g.track();
        let two = g.clone().track();
        assert_eq!(g.get(), 2);
        drop(one);
        assert_eq!(g.get(), 1);
        drop(two);
        assert_eq!(g.get(), 0);
    }
}
