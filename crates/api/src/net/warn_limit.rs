//! Rate-limited accept-failure warnings. When the process runs out of file
//! descriptors every accept fails at once; one log line per failure would
//! flood the log, so at most one line is written per interval, carrying the
//! count of the lines suppressed since the last one. The clock is passed
//! in, so the limiter is tested without sleeping.

use std::time::{Duration, Instant};

/// How often an accept failure may be logged.
pub const WARN_INTERVAL: Duration = Duration::from_secs(10);

/// How long the accept loop pauses after a failure, so it does not spin.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Decides which warnings are written.
#[derive(Debug)]
pub struct WarnLimiter {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl WarnLimiter {
    /// A limiter writing at most one line per `interval`.
    pub fn new(interval: Duration) -> Self {
        WarnLimiter {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// Notes one event at `now`. Returns `Some(suppressed)` when a line
    /// should be written (with the number of events not written since the
    /// previous line), `None` when this one is suppressed.
    pub fn note(&mut self, now: Instant) -> Option<u64> {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if !due {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// The accept loops' reaction to a failed accept: a rate-limited warning
/// and a short pause.
#[derive(Debug)]
pub struct AcceptBackoff {
    api: &'static str,
    limiter: WarnLimiter,
}

impl AcceptBackoff {
    /// The backoff of the `api` listener ("pb", "http").
    pub fn new(api: &'static str) -> Self {
        AcceptBackoff {
            api,
            limiter: WarnLimiter::new(WARN_INTERVAL),
        }
    }

    /// Logs `e` unless rate-limited, then pauses briefly.
    pub async fn failed(&mut self, e: std::io::Error) {
        if let Some(suppressed) = self.limiter.note(Instant::now()) {
            tracing::warn!(
                "{} accept failed: {e} ({suppressed} similar failures not logged)",
                self.api
            );
        }
        tokio::time::sleep(ACCEPT_BACKOFF).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_failure_is_logged() {
        let mut l = WarnLimiter::new(Duration::from_secs(10));
        assert_eq!(l.note(Instant::now()), Some(0));
    }

    #[test]
    fn failures_within_the_interval_are_counted_not_logged() {
        let mut l = WarnLimiter::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(l.note(t0), Some(0));
        for i in 1..=500u64 {
            assert_eq!(l.note(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(l.note(t0 + Duration::from_secs(10)), Some(500));
        assert_eq!(l.note(t0 + Duration::from_secs(11)), None);
        assert_eq!(l.note(t0 + Duration::from_secs(25)), Some(1));
    }
}
