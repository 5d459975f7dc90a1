//! Commit-log records back into a backend and its side store (replay at
//! start).
//!
//! A record holds the key's whole stored record (or its removal; a
//! segmented value's root and segments are records of their own, logged in
//! the order that keeps every prefix readable: `super::segments`), so
//! applying it is a blind write: applying the log's records in order leaves
//! each key as the last record says, however many of them the backend
//! already had. A record's index entries follow it exactly as in a live
//! write: into a backend that keeps its own (specs recomputed against what
//! it holds), or into the side store, which is told the entries the record
//! leaves whether or not the backend already had the record (a write logs
//! its record before either store takes it, so a crash may have left the
//! backend ahead of the side store). A record of a bucket with a ttl gets
//! the expiry that ttl gives its object now (`ttl_of`: the bucket's props
//! at the start). Writes are not synced: replay syncs every backend and
//! side store at its end.

use eddy_storage::{WriteBatch, WriteOptions};

use eddy_model::request::segments_owner;

use super::entries::{Entries, Stores};
use super::segments::indexed_object;
use crate::commitlog::{Op, Record};

/// The ttl (seconds, 0: none) of the objects of a storage bucket.
pub type TtlOf<'a> = dyn Fn(&[u8]) -> u64 + 'a;

/// Applies one record to `stores`, without syncing.
pub fn apply_record(
    stores: &Stores,
    record: &Record<'_>,
    ttl_of: &TtlOf<'_>,
) -> Result<(), String> {
    let (bucket, key) = (record.bucket, record.key);
    let backend = &stores.backend;
    let (entries, deleted) = match record.op {
        Op::Put { value } => {
            let stored = backend.get(bucket, key).map_err(|e| e.to_string())?;
            let new = indexed_object(bucket, value).map_err(|e| format!("logged object: {e}"))?;
            let Some(new) = new else {
                // A segment record: no index entries.
                if stored.as_deref() != Some(value) {
                    backend
                        .put(bucket, key, value, &[], WriteOptions::NO_SYNC)
                        .map_err(|e| e.to_string())?;
                }
                return Ok(());
            };
            let ttl_secs = ttl_of(bucket);
            if stored.as_deref() != Some(value) {
                // A stored object that no longer decodes has no
                // trustworthy index entries to remove; the new ones are
                // still added.
                let old = stored.and_then(|b| indexed_object(bucket, &b).ok().flatten());
                let entries = Entries::between(old.as_ref(), &new, ttl_secs);
                let specs = stores.backend_specs(bucket, &entries);
                let expiry = Some(entries.expiry()).filter(|e| *e != 0);
                let mut batch = WriteBatch::default();
                batch.put(bucket, key, value, specs, expiry);
                backend
                    .write(batch, WriteOptions::NO_SYNC)
                    .map_err(|e| e.to_string())?;
            }
            (Entries::holding(&new, ttl_secs), new.is_deleted())
        }
        Op::Delete => {
            backend
                .delete(bucket, key, WriteOptions::NO_SYNC)
                .map_err(|e| e.to_string())?;
            (Entries::Removed, true)
        }
        Op::PutSame { .. } => return Err("a put-same record reached replay unresolved".into()),
    };
    stores
        .set_side((bucket, key), &entries)
        .map_err(|e| e.to_string())?;
    if segments_owner(bucket).is_none() {
        let persistent = backend.capabilities_for(bucket).persistent;
        let expiry = entries.expiry();
        (stores.record_write((bucket, key), deleted, persistent, expiry))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
