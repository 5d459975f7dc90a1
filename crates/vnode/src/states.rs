//! Decoded data type states of big values a coordinating vnode updated
//! lately (design note 020 §6), so that its next update of the same key
//! applies the operation to the state in memory instead of decoding the
//! stored object's siblings again: a set of 100,000 members costs about
//! 7.5 ms to decode and free (docs/BENCHMARKS.md "Session 18"), an add to
//! it microseconds.
//!
//! An entry is a memo of [`crate::datatype::state_of`] over exact stored
//! bytes: it names the stored object by a 128-bit hash of its encoding,
//! and is used only when the bytes the vnode reads under the key's lock
//! hash the same. Whatever else wrote the key since (a replica put, read
//! repair, handoff, repair, a delete, a reap, a restart) changed the bytes,
//! so the entry is not used and no write path needs to invalidate it.
//!
//! Invariants:
//! - a state is in the cache only as decoded from, or encoded into, the
//!   bytes its entry names, for the data type it names;
//! - an entry is taken out while an update runs (under the key's lock) and
//!   put back only once the update's object is written: a failed
//!   operation or write leaves no half-applied state behind;
//! - the entries' estimated memory stays within the budget; states whose
//!   encoding is below [`STATE_BYTES_MIN`] are not kept (they decode in
//!   well under a millisecond).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use eddy_dt::{DataType, State};
use eddy_ring::Partition;
use parking_lot::Mutex;

/// Encoded states smaller than this are not kept.
pub const STATE_BYTES_MIN: usize = 16 * 1024;

/// Estimated memory of a decoded state per byte of its encoding: about
/// twice what a set of 15-byte members measures (21 bytes encoded, 79 in
/// memory: the member's allocation, its inline dots, the tree's node
/// share), so that maps, whose fields and dots take more, stay within it.
pub const MEMORY_PER_ENCODED_BYTE: usize = 8;

/// The node's default budget for decoded states.
pub const BUDGET_BYTES_DEFAULT: usize = 256 * 1024 * 1024;

/// Which stored value an entry is for: the vnode's partition and the
/// key's storage bucket and key.
pub type StateKey = (Partition, Vec<u8>, Vec<u8>);

/// The node's decoded states, shared by its vnodes.
pub struct StateCache {
    budget: usize,
    inner: Mutex<Entries>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What the cache holds and how often it served an update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateCacheStats {
    pub entries: usize,
    /// Estimated memory of the entries.
    pub bytes: usize,
    /// Updates of a big value that found its state here.
    pub hits: u64,
    /// Updates of a big value that decoded it.
    pub misses: u64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<StateKey, Entry>,
    /// The estimated memory of every entry.
    used: usize,
    /// Counts uses; an entry's `last` is the count at its last use.
    clock: u64,
}

struct Entry {
    /// The hash of the stored encoding the state is decoded from.
    stored: u128,
    state: State,
    weight: usize,
    last: u64,
}

/// The hash an entry names stored bytes by.
pub fn stored_hash(encoded: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(encoded)
}

impl StateCache {
    /// A cache holding at most `budget` bytes of estimated memory (0 keeps
    /// nothing).
    pub fn new(budget: usize) -> Self {
        StateCache {
            budget,
            inner: Mutex::new(Entries::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Whether a stored object of `len` encoded bytes could have an entry
    /// (smaller ones are neither looked up nor hashed).
    pub fn worth_it(&self, len: usize) -> bool {
        self.budget > 0 && len >= STATE_BYTES_MIN
    }

    /// Takes `key`'s state out of the cache if it was decoded from the
    /// stored bytes hashing to `stored`, as `datatype`. Any entry of the
    /// key leaves the cache: one that does not match is stale.
    pub fn take(&self, key: &StateKey, stored: u128, datatype: DataType) -> Option<State> {
        let entry = {
            let mut entries = self.inner.lock();
            let entry = entries.map.remove(key);
            if let Some(e) = &entry {
                entries.used -= e.weight;
            }
            entry
        };
        let state = entry
            .filter(|e| e.stored == stored && e.state.datatype() == datatype)
            .map(|e| e.state);
        let counter = match state {
            Some(_) => &self.hits,
            None => &self.misses,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        state
    }

    /// Keeps `state`, the state of the stored object whose encoding hashes
    /// to `stored` and is `stored_len` bytes long; evicts
    /// the least recently used entries to stay within the budget. Evicted
    /// states are freed after the lock is released.
    pub fn keep(&self, key: StateKey, stored: u128, state: State, stored_len: usize) {
        let weight = stored_len.saturating_mul(MEMORY_PER_ENCODED_BYTE);
        if stored_len < STATE_BYTES_MIN || weight > self.budget {
            return;
        }
        let evicted = {
            let mut entries = self.inner.lock();
            entries.clock += 1;
            let entry = Entry {
                stored,
                state,
                weight,
                last: entries.clock,
            };
            entries.used += weight;
            let mut evicted: Vec<Entry> = entries.map.insert(key, entry).into_iter().collect();
            if let Some(old) = evicted.first() {
                entries.used -= old.weight;
            }
            while entries.used > self.budget {
                let Some(oldest) = entries.oldest() else {
                    break;
                };
                if let Some(old) = entries.map.remove(&oldest) {
                    entries.used -= old.weight;
                    evicted.push(old);
                }
            }
            evicted
        };
        drop(evicted);
    }

    /// The number of entries and their estimated memory.
    pub fn usage(&self) -> (usize, usize) {
        let entries = self.inner.lock();
        (entries.map.len(), entries.used)
    }

    /// The cache's figures.
    pub fn stats(&self) -> StateCacheStats {
        let (entries, bytes) = self.usage();
        StateCacheStats {
            entries,
            bytes,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

impl Entries {
    /// The least recently used entry's key.
    fn oldest(&self) -> Option<StateKey> {
        self.map
            .iter()
            .min_by_key(|(_, e)| e.last)
            .map(|(k, _)| k.clone())
    }
}

impl Default for StateCache {
    fn default() -> Self {
        StateCache::new(BUDGET_BYTES_DEFAULT)
    }
}

impl std::fmt::Debug for StateCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (entries, used) = self.usage();
        f.debug_struct("StateCache")
            .field("budget", &self.budget)
            .field("entries", &entries)
            .field("used", &used)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_dt::{Op, SetOp};
    use eddy_object::Actor;

    fn set_of(members: usize) -> State {
        let mut state = State::new(DataType::Set, 14);
        let adds = (0..members)
            .map(|i| format!("member-{i:08}").into_bytes())
            .collect();
        let op = Op::Set(SetOp {
            adds,
            removes: vec![],
        });
        state.apply(Actor(1), &op, None, 0).unwrap();
        state
    }

    fn key(k: &str) -> StateKey {
        (Partition(0), b"b".to_vec(), k.as_bytes().to_vec())
    }

    #[test]
    fn an_entry_is_used_only_for_the_bytes_it_names() {
        let cache = StateCache::new(1 << 30);
        let state = set_of(2_000);
        let len = state.encode().len();
        cache.keep(key("k"), 7, state.clone(), len);
        assert_eq!(cache.take(&key("k"), 8, DataType::Set), None);
        assert_eq!(cache.usage(), (0, 0), "a stale entry leaves");
        cache.keep(key("k"), 7, state.clone(), len);
        assert_eq!(cache.take(&key("k"), 7, DataType::Map), None);
        cache.keep(key("k"), 7, state.clone(), len);
        assert_eq!(cache.take(&key("k"), 7, DataType::Set), Some(state));
        assert_eq!(cache.take(&key("k"), 7, DataType::Set), None, "taken out");
    }

    #[test]
    fn small_states_are_not_kept_and_the_budget_holds() {
        let small = set_of(10);
        let cache = StateCache::new(1 << 30);
        let len = small.encode().len();
        cache.keep(key("s"), 1, small, len);
        assert_eq!(cache.usage(), (0, 0));

        let big = set_of(2_000);
        let len = big.encode().len();
        let weight = len * MEMORY_PER_ENCODED_BYTE;
        let cache = StateCache::new(weight * 2);
        cache.keep(key("a"), 1, big.clone(), len);
        cache.keep(key("b"), 2, big.clone(), len);
        assert!(cache.take(&key("a"), 1, DataType::Set).is_some());
        cache.keep(key("a"), 1, big.clone(), len);
        cache.keep(key("c"), 3, big.clone(), len);
        assert_eq!(cache.usage(), (2, weight * 2));
        assert!(
            cache.take(&key("b"), 2, DataType::Set).is_none(),
            "least recent"
        );
        assert!(cache.take(&key("c"), 3, DataType::Set).is_some());
        assert!(!StateCache::new(0).worth_it(1 << 20));
    }
}
