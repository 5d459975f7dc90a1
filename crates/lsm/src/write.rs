//! The write path: one [`WriteBatch`] becomes one fjall batch.
//!
//! A put writes its object with its effective expiry (the sooner of the
//! op's and the instance's), a delete removes it; the whole batch commits
//! atomically. A key's last op in the batch is the one written (fjall gives
//! every item of a batch the same sequence number, so a key appears in it
//! once). Nothing is read first, so a write takes no lock of its own. The
//! backend keeps no index entries: a batch with index specs is refused
//! whole with [`StorageError::NoIndexes`] before anything is written.
//! Durability is awaited after the commit, so writers queue on the shared
//! fsync (group commit).

use std::collections::HashSet;

use eddy_storage::clock::effective_expiry;
use eddy_storage::{BatchOp, StorageError, SyncPolicy, WriteBatch, WriteOptions, limits};

use crate::backend::Partition;
use crate::error::engine;
use crate::keys::{self, check_len, object_key};
use crate::record::object_value;

impl Partition {
    /// Applies `batch`; see the module docs.
    pub fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        limits::check_ops_without_indexes(&batch.ops, "lsm")?;
        self.env.check_writable()?;
        let planned = plan(batch)?;
        let config = &self.env.config;
        let now_secs = config.clock.now_secs();
        let mut fjall_batch = self.env.db.batch();
        let marker =
            may_expire(config.expiry_secs, &planned) && self.env.add_ttl_marker(&mut fjall_batch);
        for (encoded, op) in planned {
            match op {
                BatchOp::Put {
                    value,
                    expires_at_secs,
                    ..
                } => {
                    let expiry = effective_expiry(now_secs, expires_at_secs, config.expiry_secs);
                    fjall_batch.insert(&self.objects, encoded, object_value(expiry, &value));
                }
                BatchOp::Delete { .. } => fjall_batch.remove(&self.objects, encoded),
            }
        }
        fjall_batch.commit().map_err(engine)?;
        if marker {
            self.env.ttl_marker_committed();
        }
        if opts.sync || config.sync == SyncPolicy::OSync {
            self.env.durable()?;
        }
        Ok(())
    }
}

/// True when some put of the batch will carry an expiry.
fn may_expire(instance_expiry_secs: u64, planned: &[(Vec<u8>, BatchOp)]) -> bool {
    planned.iter().any(|(_, op)| match op {
        BatchOp::Put {
            expires_at_secs, ..
        } => instance_expiry_secs > 0 || expires_at_secs.is_some(),
        BatchOp::Delete { .. } => false,
    })
}

/// Encodes every op's object key and keeps each key's last op. A delete of
/// a key too long to have been stored is dropped; a put of one is an error.
fn plan(batch: WriteBatch) -> Result<Vec<(Vec<u8>, BatchOp)>, StorageError> {
    let mut planned = Vec::with_capacity(batch.ops.len());
    for op in batch.ops {
        let (bucket, key) = op.bucket_key();
        let encoded = object_key(bucket, key);
        match (&op, check_len(&encoded)) {
            (BatchOp::Delete { .. }, Err(_)) => continue,
            (_, result) => result?,
        }
        planned.push((encoded, op));
    }
    if planned.len() > 1 {
        let mut seen = HashSet::with_capacity(planned.len());
        planned.reverse();
        planned.retain(|(encoded, _)| seen.insert(encoded.clone()));
        planned.reverse();
    }
    Ok(planned)
}

/// True when `(bucket, key)` is too long to have been stored.
pub fn unstorable(bucket: &[u8], key: &[u8]) -> bool {
    keys::object_key_len(bucket, key) > keys::ENCODED_KEY_BYTES_MAX
}
