//! Wall-clock time as coordinators and vnodes see it, injected so that a
//! simulation drives it.
//!
//! Only wall-clock *readings* come from here (an object's last-modified
//! time, props stamps). Waiting (request deadlines, the reap delay) uses
//! tokio's clock, which a simulation pauses and advances itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Microseconds since the Unix epoch.
    fn now_us(&self) -> u64;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (tests, simulation).
#[derive(Debug, Default)]
pub struct ManualClock {
    now_us: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `now_us`.
    pub fn new(now_us: u64) -> Self {
        ManualClock {
            now_us: AtomicU64::new(now_us),
        }
    }

    /// Moves the clock forward.
    pub fn advance_us(&self, us: u64) {
        self.now_us.fetch_add(us, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::SeqCst)
    }
}
