//! Striped per-key locks for the read-modify-write of a key's index terms.
//!
//! A put or delete reads the key's terms record, computes the index changes
//! and commits them in one batch; holding the key's stripe across that makes
//! the read-modify-write atomic. A batch locks all its stripes in ascending
//! order, so two batches can never wait on each other in a cycle.

use parking_lot::{Mutex, MutexGuard};
use xxhash_rust::xxh3::xxh3_64;

const STRIPES: usize = 1024;

/// A fixed set of mutexes, one chosen per encoded object key.
pub struct KeyLocks {
    stripes: Vec<Mutex<()>>,
}

impl Default for KeyLocks {
    fn default() -> Self {
        KeyLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl KeyLocks {
    fn stripe_of(object_key: &[u8]) -> usize {
        (xxh3_64(object_key) % STRIPES as u64) as usize
    }

    /// Locks the stripes of all `object_keys`, in ascending stripe order.
    pub fn lock_all<'a, K: AsRef<[u8]>>(
        &'a self,
        object_keys: impl IntoIterator<Item = K>,
    ) -> Vec<MutexGuard<'a, ()>> {
        let mut stripes: Vec<usize> = object_keys
            .into_iter()
            .map(|k| Self::stripe_of(k.as_ref()))
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.iter().map(|&i| self.stripes[i].lock()).collect()
    }
}
