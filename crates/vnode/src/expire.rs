//! A vnode's part of the expiry sweep (design note 027, "Per-bucket
//! TTL"): the keys its side store says expired by now, each deleted from
//! the backend and then from the side store (entries, expiry, record),
//! under the key's lock; the keys of one lock stripe together, in one
//! batch to each store.
//!
//! Invariants: a key is deleted only while its side store record still
//! names the expiry the sweep found it under, so a key written again since
//! (a new expiry, or none) is left alone; the backend already hides an
//! expired object, so the delete changes nothing a reader sees. The
//! deletes are not logged: whatever a crash undoes of them (or replay
//! writes again) is still expired, so the next sweep deletes it again.
//!
//! A sweep starts where the last one ended ([`SweepCursor`]): the LSM keeps
//! what it deleted as tombstones until compaction, and walking over them
//! again each round would make a big sweep quadratic. A live write's expiry
//! is always later than the sweep's last "now"; only a copy of an old
//! object (a replica, handoff, repair or replay) can arrive already
//! expired, so every [`FULL_SCAN_EVERY_SECS`] a sweep starts from the
//! beginning again.

use std::sync::atomic::{AtomicU64, Ordering};

use eddy_model::error::KvError;
use eddy_storage::{FoldControl, WriteBatch, WriteOptions};

use super::Vnode;
use super::msg::StorageKey;

/// How often a sweep starts from the first expiry again.
pub const FULL_SCAN_EVERY_SECS: u64 = 600;

/// Where a vnode's next sweep starts, and when one last started from the
/// beginning.
#[derive(Default)]
pub(crate) struct SweepCursor {
    from_secs: AtomicU64,
    full_at_secs: AtomicU64,
}

impl SweepCursor {
    /// Where a sweep at `now_secs` starts.
    fn start(&self, now_secs: u64) -> u64 {
        let full_at = self.full_at_secs.load(Ordering::Relaxed);
        if now_secs >= full_at.saturating_add(FULL_SCAN_EVERY_SECS) || full_at == 0 {
            self.full_at_secs.store(now_secs.max(1), Ordering::Relaxed);
            return 0;
        }
        self.from_secs.load(Ordering::Relaxed)
    }
}

impl Vnode {
    /// Deletes up to `max` of the keys that expired by `now_secs`, soonest
    /// first; returns how many it deleted. A vnode without a side store
    /// has nothing to sweep (its backend expires what it holds).
    pub fn expire_due(&self, now_secs: u64, max: usize) -> Result<u64, KvError> {
        let Some(side) = self.stores.side.as_deref() else {
            return Ok(0);
        };
        let from = self.sweep.start(now_secs);
        let mut due = Vec::new();
        side.expired((from, now_secs), &mut |at, bucket, key| {
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
        // Caught up: what expires later is past `now_secs`. Else the next
        // sweep starts at the last expiry seen (keys of that second may
        // be left).
        let next = match due.len() < max {
            true => now_secs,
            false => due.last().map_or(now_secs, |(at, _)| *at),
        };
        self.sweep.from_secs.store(next, Ordering::Relaxed);
        // Keys of one lock stripe are deleted together, under its lock:
        // one backend batch, one side-store batch.
        let mut stripes: std::collections::BTreeMap<usize, Vec<(u64, StorageKey)>> =
            Default::default();
        for (at, key) in due {
            stripes
                .entry(Self::stripe(&key))
                .or_default()
                .push((at, key));
        }
        let mut deleted = 0;
        for (stripe, due) in stripes {
            if self.closed.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            deleted += self.expire_stripe(stripe, &due)?;
        }
        Ok(deleted)
    }

    /// Deletes each of `due` (keys of lock stripe `stripe`, with the expiry
    /// the sweep found them under) whose side store record still names
    /// that expiry; returns how many it deleted.
    fn expire_stripe(&self, stripe: usize, due: &[(u64, StorageKey)]) -> Result<u64, KvError> {
        let _locked = self.locks[stripe].lock();
        let Some(side) = self.stores.side.as_deref() else {
            return Ok(0);
        };
        let mut found = Vec::with_capacity(due.len());
        for (at, key) in due {
            match side.key_record(&key.bucket, &key.key)? {
                Some(r) if r.expiry == *at => found.push((key, r)),
                _ => {}
            }
        }
        if found.is_empty() {
            return Ok(0);
        }
        let mut batch = WriteBatch::default();
        for (key, _) in &found {
            batch.delete(&key.bucket, &key.key);
        }
        self.stores.backend.write(batch, WriteOptions::NO_SYNC)?;
        for (key, _) in &found {
            let named = (key.bucket.as_slice(), key.key.as_slice());
            self.stores.record_change(named, true, true)?;
        }
        let cleared: Vec<_> = found
            .iter()
            .map(|(key, r)| ((key.bucket.as_slice(), key.key.as_slice()), r))
            .collect();
        side.clear_all(&cleared)?;
        Ok(found.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_starts_where_the_last_ended_and_from_the_start_every_so_often() {
        let cursor = SweepCursor::default();
        assert_eq!(cursor.start(1_000), 0, "the first sweep scans everything");
        cursor.from_secs.store(990, Ordering::Relaxed);
        assert_eq!(cursor.start(1_001), 990);
        assert_eq!(cursor.start(1_000 + FULL_SCAN_EVERY_SECS - 1), 990);
        assert_eq!(cursor.start(1_000 + FULL_SCAN_EVERY_SECS), 0);
        assert_eq!(cursor.start(1_001 + FULL_SCAN_EVERY_SECS), 990);
    }
}
