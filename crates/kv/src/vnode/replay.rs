//! Commit-log records back into a backend (replay at start).
//!
//! A record holds the key's whole stored value (or its removal), so
//! applying it is a blind write: applying the log's records in order leaves
//! each key as the last record says, however many of them the backend
//! already had. Index specs are recomputed against what the backend holds,
//! so index entries follow the object exactly as in a live write. Writes
//! are marked [`WriteOptions::REPLAY`]: they were acknowledged before the
//! restart, so a backend takes them even past a memory bound at which it
//! refuses new writes (bitcask's term index), as it loads its files at open.

use eddy_object::codec;
use eddy_storage::{Backend, WriteOptions};

use super::apply::index_specs;
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
            let new = codec::decode(value).map_err(|e| format!("logged object: {e}"))?;
            // A stored object that no longer decodes has no trustworthy
            // index entries to remove; the new ones are still added.
            let old = stored.and_then(|b| codec::decode(&b).ok());
            let specs = index_specs(old.as_ref(), &new);
            backend.put(bucket, key, value, &specs, WriteOptions::REPLAY)
        }
        Op::Delete => backend.delete(bucket, key, WriteOptions::REPLAY),
        Op::PutSame { .. } => return Err("a put-same record reached replay unresolved".into()),
    }
    .map_err(|e| e.to_string())
}
