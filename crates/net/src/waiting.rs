//! Requests awaiting replies, by request id: the one matcher of replies
//! to the requests a node sent. The transport's calls use it (one waiter
//! per call on a link, completed by the reply frame naming its id), and so
//! do the services above it that send one-way messages naming a request id
//! and take replies that name it back (kv's vnode requests, in
//! eddy-remote).
//!
//! What a waiter is, and when it is done, is its user's: this table only
//! allocates ids, holds the waiters and hands them back.
//!
//! Invariants: ids start at 1 and only grow (0 is left to mean "no reply
//! wanted"), so no two requests of one table share an id; a waiter leaves
//! the table exactly once (taken by its reply, by a failure of its peer or
//! link, or dropped by its owner).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Waiters by request id.
pub struct Waiting<W> {
    entries: Mutex<HashMap<u64, W>>,
    next_id: AtomicU64,
}

impl<W> Default for Waiting<W> {
    fn default() -> Self {
        Waiting::new()
    }
}

impl<W> Waiting<W> {
    /// An empty table whose first id is 1.
    pub fn new() -> Waiting<W> {
        Waiting::starting_at(1)
    }

    /// An empty table whose first id is `first` (at least 1): nodes of a
    /// simulation can give their requests ids apart.
    pub fn starting_at(first: u64) -> Waiting<W> {
        Waiting {
            entries: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(first.max(1)),
        }
    }

    /// A fresh request id (never 0, never given before).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Takes a fresh id and registers `waiter` under it.
    pub fn register(&self, waiter: W) -> u64 {
        let id = self.next_id();
        self.entries.lock().insert(id, waiter);
        id
    }

    /// Takes the waiter of request `id`, if it still waits.
    pub fn take(&self, id: u64) -> Option<W> {
        self.entries.lock().remove(&id)
    }

    /// Takes every waiter, in the order their requests were made.
    pub fn take_all(&self) -> Vec<W> {
        self.take_where(|_| true)
    }

    /// Takes the waiters `pick` chooses, in the order their requests were
    /// made (ids only grow), so a simulation replays the same.
    pub fn take_where(&self, mut pick: impl FnMut(&W) -> bool) -> Vec<W> {
        let mut entries = self.entries.lock();
        let mut ids: Vec<u64> = entries
            .iter()
            .filter(|(_, w)| pick(w))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids.iter().filter_map(|id| entries.remove(id)).collect()
    }

    /// Waiters now.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` on the table under its lock: for a user whose bookkeeping
    /// (a reply that leaves its waiter in place, a sweep, a bound checked
    /// with the insert) must be one step with the lookup.
    pub fn with<R>(&self, f: impl FnOnce(&mut HashMap<u64, W>) -> R) -> R {
        f(&mut self.entries.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fresh_and_waiters_leave_once() {
        let w = Waiting::new();
        let a = w.register("a");
        let b = w.register("b");
        let c = w.next_id();
        assert!(a >= 1 && a < b && b < c);
        assert_eq!(w.take(a), Some("a"));
        assert_eq!(w.take(a), None, "a waiter leaves once");
        assert_eq!(w.len(), 1);
        assert_eq!(w.take(c), None, "an id not registered has no waiter");
    }

    #[test]
    fn taking_by_choice_keeps_request_order() {
        let w = Waiting::new();
        let ids: Vec<u64> = (0..50).map(|i| w.register(i)).collect();
        let odd = w.take_where(|v| v % 2 == 1);
        assert_eq!(odd, (0..50).filter(|v| v % 2 == 1).collect::<Vec<_>>());
        assert_eq!(w.take(ids[1]), None);
        assert_eq!(w.take_all(), (0..50).step_by(2).collect::<Vec<_>>());
        assert!(w.is_empty());
    }
}
