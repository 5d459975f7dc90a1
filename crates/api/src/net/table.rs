//! The connection table of one listener: at most `limit` connections are
//! served; when the table is full, the connection idle for the longest is
//! told to close so the newcomer can be served, and only when none is idle
//! is the newcomer refused.
//!
//! Invariants: a connection is in the table from admission until its
//! [`Slot`] is dropped or it is evicted, so the table never holds more than
//! `limit` entries; only a connection marked idle (waiting for the first
//! byte of its next request) is ever evicted. Marking idle or busy is one
//! atomic store, so the request path takes no lock.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// `idle_since` of a connection serving a request.
const BUSY: u64 = u64::MAX;

/// The connections of one listener.
pub struct ConnectionTable {
    limit: usize,
    epoch: Instant,
    entries: Mutex<Entries>,
    evicted: AtomicU64,
    refused: AtomicU64,
}

#[derive(Default)]
struct Entries {
    next_id: u64,
    map: HashMap<u64, Arc<SlotState>>,
}

struct SlotState {
    /// Milliseconds since the table's epoch when the connection became
    /// idle, or [`BUSY`].
    idle_since: AtomicU64,
    evict: Notify,
}

/// A connection's place in the table; dropping it frees the place.
pub struct Slot {
    table: Arc<ConnectionTable>,
    id: u64,
    state: Arc<SlotState>,
}

impl std::fmt::Debug for ConnectionTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionTable")
            .field("limit", &self.limit)
            .field("open", &self.open())
            .finish()
    }
}

impl ConnectionTable {
    /// A table of at most `limit` connections.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(ConnectionTable {
            limit: limit.max(1),
            epoch: Instant::now(),
            entries: Mutex::new(Entries::default()),
            evicted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// The most connections served at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Connections in the table now.
    pub fn open(&self) -> usize {
        self.entries.lock().map.len()
    }

    /// Connections closed to admit newer ones.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Connections refused because every place was busy.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Connections admitted since the table was made.
    pub fn admitted(&self) -> u64 {
        self.entries.lock().next_id
    }

    /// Admits a new (idle) connection, evicting the longest-idle one when
    /// the table is full; `None` when all are busy.
    pub fn admit(self: &Arc<Self>) -> Option<Slot> {
        let state = Arc::new(SlotState {
            idle_since: AtomicU64::new(self.now()),
            evict: Notify::new(),
        });
        let mut entries = self.entries.lock();
        if entries.map.len() >= self.limit {
            let Some(victim) = longest_idle(&entries.map) else {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            if let Some(v) = entries.map.remove(&victim) {
                v.evict.notify_one();
            }
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        let id = entries.next_id;
        entries.next_id += 1;
        entries.map.insert(id, state.clone());
        Some(Slot {
            table: self.clone(),
            id,
            state,
        })
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
}

fn longest_idle(map: &HashMap<u64, Arc<SlotState>>) -> Option<u64> {
    map.iter()
        .map(|(id, s)| (s.idle_since.load(Ordering::Relaxed), *id))
        .filter(|(since, _)| *since != BUSY)
        .min()
        .map(|(_, id)| id)
}

impl Slot {
    /// Marks the connection idle: waiting for its next request.
    pub fn idle(&self) {
        let now = self.table.now();
        self.state.idle_since.store(now, Ordering::Relaxed);
    }

    /// Marks the connection busy: a request is being received or served.
    pub fn busy(&self) {
        self.state.idle_since.store(BUSY, Ordering::Relaxed);
    }

    /// Resolves when the connection was evicted to admit another.
    pub async fn evicted(&self) {
        self.state.evict.notified().await
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.table.entries.lock().map.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_evicts_the_longest_idle() {
        let table = ConnectionTable::new(2);
        let a = table.admit().expect("a");
        let b = table.admit().expect("b");
        a.busy();
        b.idle();
        let c = table.admit().expect("c evicts b");
        assert_eq!(table.open(), 2);
        assert_eq!(table.evicted(), 1);
        drop(b);
        assert_eq!(table.open(), 2, "an evicted slot's drop frees nothing");
        c.busy();
        assert!(table.admit().is_none(), "all busy: refused");
        assert_eq!(table.refused(), 1);
        drop(a);
        assert!(table.admit().is_some());
    }
}
