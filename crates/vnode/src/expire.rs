//! A vnode's part of the expiry sweep (design note 027, "Per-bucket
//! TTL"): the keys its side store's expiry order says expired by now,
//! each deleted from the backend and its change recorded, under the key's
//! lock; the keys of one lock stripe together, in one backend batch.
//!
//! The sweep writes nothing to the side store. It walks the expiry order
//! forward from where it stopped ([`SweepCursor`]; after a restart, just
//! past the store's durable swept mark) and raises the store's marks
//! (`eddy_side::swept`): it claims up to "now" before it walks, and notes
//! what it processed after. A checkpoint makes the processed mark
//! durable, and compaction then drops the swept keys' entries.
//!
//! Invariants: a key is deleted only while its side store record still
//! names the expiry the sweep found it under, so a key written again since
//! (a new expiry, or none) is left alone; the backend already hides an
//! expired object, so the delete changes nothing a reader sees. The
//! deletes are not logged: what a crash undoes of them is still in the
//! expiry order past the durable mark, so the sweep after the restart
//! deletes it again. A copy that arrives already expired at or before the
//! claimed mark (a replica, handoff, repair or replay of an old object),
//! which the walk has passed, is deleted by its write
//! (`Stores::record_write`).

use eddy_model::error::KvError;
use eddy_side::{SideStore, SweepFrom};
use eddy_storage::{FoldControl, WriteBatch, WriteOptions};
use parking_lot::Mutex;

use super::Vnode;
use super::msg::StorageKey;

/// Where a vnode's next sweep walks on from: just after the last entry it
/// processed, or from a second on; `None` until the first sweep.
#[derive(Default)]
pub(crate) struct SweepCursor(Mutex<Option<Next>>);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Next {
    Secs(u64),
    After(u64, StorageKey),
}

impl Next {
    fn from(&self) -> SweepFrom<'_> {
        match self {
            Next::Secs(secs) => SweepFrom::Secs(*secs),
            Next::After(at, key) => SweepFrom::After(*at, (&key.bucket, &key.key)),
        }
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
        let swept = side.swept();
        swept.claim(now_secs);
        let next = (self.sweep.0.lock().clone())
            .unwrap_or_else(|| Next::Secs(swept.durable().saturating_add(1)));
        let due = due(side, &next, now_secs, max)?;
        // Caught up: what expires later is past `now_secs`. Else the walk
        // goes on after the last entry taken; that entry's second may hold
        // more.
        let (next, processed) = match due.last() {
            Some((at, key)) if due.len() == max => {
                (Next::After(*at, key.clone()), at.saturating_sub(1))
            }
            _ => (Next::Secs(now_secs.saturating_add(1)), now_secs),
        };
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
                return Ok(deleted);
            }
            deleted += self.expire_stripe(stripe, &due)?;
        }
        *self.sweep.0.lock() = Some(next);
        swept.processed_to(processed);
        Ok(deleted)
    }

    /// Deletes each of `due` (keys of lock stripe `stripe`, with the expiry
    /// the sweep found them under) whose side store record still names
    /// that expiry, and records each one's change; returns how many it
    /// deleted.
    fn expire_stripe(&self, stripe: usize, due: &[(u64, StorageKey)]) -> Result<u64, KvError> {
        let _locked = self.locks[stripe].lock();
        let Some(side) = self.stores.side.as_deref() else {
            return Ok(0);
        };
        let mut found = Vec::with_capacity(due.len());
        for (at, key) in due {
            match side.key_record(&key.bucket, &key.key)? {
                Some(r) if r.expiry == *at => found.push(key),
                _ => {}
            }
        }
        if found.is_empty() {
            return Ok(0);
        }
        let mut batch = WriteBatch::default();
        for key in &found {
            batch.delete(&key.bucket, &key.key);
        }
        self.stores.backend.write(batch, WriteOptions::NO_SYNC)?;
        for key in &found {
            let named = (key.bucket.as_slice(), key.key.as_slice());
            self.stores.record_change(named, true, true)?;
        }
        side.swept().note_swept();
        Ok(found.len() as u64)
    }
}

/// Up to `max` entries of `side`'s expiry order from `next` to
/// `now_secs`, soonest first.
fn due(
    side: &SideStore,
    next: &Next,
    now_secs: u64,
    max: usize,
) -> Result<Vec<(u64, StorageKey)>, KvError> {
    let mut due = Vec::new();
    side.expired(next.from(), now_secs, &mut |at, bucket, key| {
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
    Ok(due)
}
