//! `transfer_limit`: how many transfers a node runs at once in each
//! direction (Riak's `handoff_concurrency`), changeable while it runs.
//!
//! Invariant: at most `limit` slots are held at any time, except right
//! after the limit was lowered: slots already held are kept until their
//! transfers end, and no new one is given until fewer than the new limit
//! are held.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// Riak's default `transfer_limit`.
pub const DEFAULT_TRANSFER_LIMIT: usize = 2;

#[derive(Debug)]
struct Counts {
    running: usize,
    limit: usize,
    /// The most slots held at once.
    peak: usize,
}

/// A runtime-settable counting limit.
#[derive(Debug)]
pub struct TransferLimit {
    counts: Mutex<Counts>,
    changed: Notify,
}

/// A held slot, given back on drop.
#[derive(Debug)]
pub struct Slot(Arc<TransferLimit>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.counts.lock().running -= 1;
        self.0.changed.notify_waiters();
    }
}

impl TransferLimit {
    pub fn new(limit: usize) -> Arc<TransferLimit> {
        Arc::new(TransferLimit {
            counts: Mutex::new(Counts {
                running: 0,
                limit,
                peak: 0,
            }),
            changed: Notify::new(),
        })
    }

    /// The limit now.
    pub fn limit(&self) -> usize {
        self.counts.lock().limit
    }

    /// Changes the limit; waiters are let in if it grew.
    pub fn set(&self, limit: usize) {
        self.counts.lock().limit = limit;
        self.changed.notify_waiters();
    }

    /// Slots held now.
    pub fn running(&self) -> usize {
        self.counts.lock().running
    }

    /// The most slots held at once so far.
    pub fn peak(&self) -> usize {
        self.counts.lock().peak
    }

    /// A slot if one is free now.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        let mut c = self.counts.lock();
        if c.running >= c.limit {
            return None;
        }
        c.running += 1;
        c.peak = c.peak.max(c.running);
        Some(Slot(self.clone()))
    }

    /// Waits for a free slot.
    pub async fn acquire(self: &Arc<Self>) -> Slot {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(slot) = self.try_acquire() {
                return slot;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn slots_are_limited_and_the_limit_changes_at_run_time() {
        let limit = TransferLimit::new(2);
        let a = limit.acquire().await;
        let _b = limit.acquire().await;
        assert!(limit.try_acquire().is_none());
        let waiter = tokio::spawn({
            let limit = limit.clone();
            async move { limit.acquire().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(a);
        let c = waiter.await.unwrap();
        assert_eq!(limit.running(), 2);
        limit.set(3);
        let d = limit.try_acquire().expect("the limit grew");
        limit.set(1);
        assert!(limit.try_acquire().is_none());
        drop((c, d));
        assert!(limit.try_acquire().is_none(), "one is still held");
        assert_eq!(limit.peak(), 3);
    }
}
