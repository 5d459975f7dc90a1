//! A vnode's part of the expiry sweep (design note 027, "Per-bucket
//! TTL"): the keys its side store says expired by now, each deleted from
//! the backend and then from the side store (entries, expiry, record),
//! under the key's lock.
//!
//! Invariants: a key is deleted only while its side store record still
//! names the expiry the sweep found it under, so a key written again since
//! (a new expiry, or none) is left alone; the backend already hides an
//! expired object, so the delete changes nothing a reader sees. The
//! deletes are not logged: whatever a crash undoes of them (or replay
//! writes again) is still expired, so the next sweep deletes it again.

use eddy_model::error::KvError;
use eddy_storage::{FoldControl, WriteOptions};

use super::Vnode;
use super::msg::StorageKey;

impl Vnode {
    /// Deletes up to `max` of the keys that expired by `now_secs`, soonest
    /// first; returns how many it deleted. A vnode without a side store
    /// has nothing to sweep (its backend expires what it holds).
    pub fn expire_due(&self, now_secs: u64, max: usize) -> Result<u64, KvError> {
        let Some(side) = self.stores.side.as_deref() else {
            return Ok(0);
        };
        let mut due = Vec::new();
        side.expired(now_secs, &mut |at, bucket, key| {
            let key = StorageKey {
                bucket: bucket.to_vec(),
                key: key.to_vec(),
            };
            due.push((at, key));
            match due.len() < max {
                true => FoldControl::Continue,
                false => FoldControl::Stop,
            }
        })?;
        let mut deleted = 0;
        for (at, key) in due {
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            deleted += u64::from(self.expire(&key, at)?);
        }
        Ok(deleted)
    }

    /// Deletes `key` if the side store still says it expires at `at`.
    fn expire(&self, key: &StorageKey, at: u64) -> Result<bool, KvError> {
        let _locked = self.lock(key);
        let Some(side) = self.stores.side.as_deref() else {
            return Ok(false);
        };
        let record = match side.key_record(&key.bucket, &key.key)? {
            Some(r) if r.expiry == at => r,
            _ => return Ok(false),
        };
        let backend = &self.stores.backend;
        backend.delete(&key.bucket, &key.key, WriteOptions::NO_SYNC)?;
        side.clear(&key.bucket, &key.key, &record)?;
        Ok(true)
    }
}
