//! Wall-clock time, injected so that TTL tests and simulations need no
//! sleeping: the one [`Clock`] of Eddy, read by backends (expiry, bitcask's
//! timestamps and merge window, in seconds) and by kv (an object's
//! last-modified time and props stamps, in microseconds).
//!
//! Only wall-clock *readings* come from here. Waiting (request deadlines,
//! the reap delay) uses tokio's clock, which a simulation pauses and
//! advances itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds in a second.
const US_PER_SEC: u64 = 1_000_000;

/// A source of the current wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Microseconds since the Unix epoch.
    fn now_us(&self) -> u64;

    /// Whole seconds since the Unix epoch (what expiry counts in).
    fn now_secs(&self) -> u64 {
        self.now_us() / US_PER_SEC
    }
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_us(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (tests, simulation).
#[derive(Debug, Default)]
pub struct ManualClock {
    now_us: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `now_secs` whole seconds.
    pub fn new(now_secs: u64) -> Arc<Self> {
        Self::from_us(now_secs.saturating_mul(US_PER_SEC))
    }

    /// A clock standing at `now_us` microseconds.
    pub fn from_us(now_us: u64) -> Arc<Self> {
        Arc::new(ManualClock {
            now_us: AtomicU64::new(now_us),
        })
    }

    /// Moves the clock forward by `secs` seconds.
    pub fn advance(&self, secs: u64) {
        self.advance_us(secs.saturating_mul(US_PER_SEC));
    }

    /// Moves the clock forward by `us` microseconds.
    pub fn advance_us(&self, us: u64) {
        self.now_us.fetch_add(us, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> u64 {
        self.now_us.load(Ordering::SeqCst)
    }
}

/// The expiry an object written at `now_secs` gets: the sooner of its own
/// `expires_at_secs` and the instance-wide `expiry_secs` (0 = none).
pub fn effective_expiry(
    now_secs: u64,
    expires_at_secs: Option<u64>,
    expiry_secs: u64,
) -> Option<u64> {
    let instance = (expiry_secs > 0).then(|| now_secs.saturating_add(expiry_secs));
    match (expires_at_secs, instance) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// True when an object with `expires_at_secs` is gone at `now_secs`.
pub fn is_expired(expires_at_secs: Option<u64>, now_secs: u64) -> bool {
    expires_at_secs.is_some_and(|e| e <= now_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_whole_microseconds_truncated() {
        let clock = ManualClock::new(7);
        assert_eq!((clock.now_us(), clock.now_secs()), (7_000_000, 7));
        clock.advance_us(999_999);
        assert_eq!(clock.now_secs(), 7);
        clock.advance_us(1);
        assert_eq!(clock.now_secs(), 8);
        clock.advance(2);
        assert_eq!(clock.now_us(), 10_000_000);
    }

    #[test]
    fn the_system_clock_agrees_with_itself() {
        let clock = SystemClock;
        let (us, secs) = (clock.now_us(), clock.now_secs());
        assert!(secs >= us / US_PER_SEC);
    }
}
