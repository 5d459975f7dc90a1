//! Commit-log records back into a backend (replay at start).
//!
//! A record holds the key's whole stored record (or its removal; a
//! segmented value's root and segments are records of their own, logged in
//! the order that keeps every prefix readable: `super::segments`), so
//! applying it is a blind write: applying the log's records in order leaves
//! each key as the last record says, however many of them the backend
//! already had. Index specs are recomputed against what the backend holds,
//! so index entries follow the object exactly as in a live write. Writes
//! are marked [`WriteOptions::REPLAY`]: they were acknowledged before the
//! restart, so a backend takes them even past a memory bound at which it
//! refuses new writes (bitcask's term index), as it loads its files at open.

use eddy_storage::{Backend, WriteOptions};

use super::apply::index_specs;
use super::segments::indexed_object;
use crate::commitlog::{Op, Record};

/// Applies one record to `backend`, without syncing.
pub fn apply_record(backend: &dyn Backend, record: &Record<'_>) -> Result<(), String> {
    let (bucket, key) = (record.bucket, record.key);
    match record.op {
        Op::Put { value } => {
            let stored = backend.get(bucket, key).map_err(|e| e.to_string())?;
            if stored.as_deref() == Some(value) {
                return Ok(());
            }
            let new = indexed_object(bucket, value).map_err(|e| format!("logged object: {e}"))?;
            // A stored object that no longer decodes has no trustworthy
            // index entries to remove; the new ones are still added.
            let old = stored.and_then(|b| indexed_object(bucket, &b).ok().flatten());
            let specs = match &new {
                Some(new) => index_specs(old.as_ref(), new),
                None => Vec::new(),
            };
            backend.put(bucket, key, value, &specs, WriteOptions::REPLAY)
        }
        Op::Delete => backend.delete(bucket, key, WriteOptions::REPLAY),
        Op::PutSame { .. } => return Err("a put-same record reached replay unresolved".into()),
    }
    .map_err(|e| e.to_string())
}
