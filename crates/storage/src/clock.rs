//! Time as backends see it, injectable so TTL tests need no sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in Unix seconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Seconds since the Unix epoch.
    fn now_secs(&self) -> u64;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_secs(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (tests).
#[derive(Debug, Default)]
pub struct ManualClock {
    now_secs: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `now_secs`.
    pub fn new(now_secs: u64) -> Arc<Self> {
        Arc::new(ManualClock {
            now_secs: AtomicU64::new(now_secs),
        })
    }

    /// Moves the clock forward.
    pub fn advance(&self, secs: u64) {
        self.now_secs.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_secs(&self) -> u64 {
        self.now_secs.load(Ordering::SeqCst)
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
