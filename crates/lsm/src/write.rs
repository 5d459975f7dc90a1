//! The write path: one [`WriteBatch`] becomes one fjall batch.
//!
//! For each op the key's terms record is read (from the batch's own earlier
//! ops first), the index changes are derived from it, and the object, the
//! terms record and the index entries are written together. A put that
//! cannot change the terms (no index specs, and TTL never used, so nothing
//! can have expired) skips the read and writes only the object. All stripes of
//! the batch's keys are held from the first read to the commit, so the
//! read-modify-write of every key is atomic, and the whole batch commits
//! atomically (fjall batches span keyspaces). Durability is awaited after the
//! locks are released, so writers queue on the shared fsync, not on locks.
//!
//! Index rules (the contract of `eddy_storage`): a put starts from the key's
//! live terms (none if the key is missing or expired), applies removes, then
//! adds; a delete removes every entry. Entries get the object's expiry; when
//! the expiry changes every entry of the key is rewritten with it.

use std::collections::HashMap;

use eddy_storage::clock::{effective_expiry, is_expired};
use eddy_storage::memory::apply_specs;
use eddy_storage::{
    BatchOp, IndexSpec, StorageError, SyncPolicy, WriteBatch, WriteOptions, limits,
};
use fjall::OwnedWriteBatch;

use crate::backend::Partition;
use crate::error::{corrupt, engine};
use crate::keys::{self, check_len, index_key, object_key, terms_key};
use crate::locks::KeyLocks;
use crate::record::{TermsRecord, expiry_only, object_value};

/// The terms record each key of the batch has after the ops so far.
type Overlay = HashMap<Vec<u8>, Option<TermsRecord>>;

/// One op with its keys encoded.
struct Planned {
    op: BatchOp,
    object_key: Vec<u8>,
    terms_key: Vec<u8>,
}

/// What a put needs besides its keys.
struct PutArgs<'a> {
    bucket: &'a [u8],
    key: &'a [u8],
    value: &'a [u8],
    specs: Vec<IndexSpec>,
    expires_at_secs: Option<u64>,
}

impl Partition {
    /// Applies `batch`; see the module docs.
    pub fn write(
        &self,
        locks: &KeyLocks,
        batch: WriteBatch,
        opts: WriteOptions,
    ) -> Result<(), StorageError> {
        batch.ops.iter().try_for_each(limits::check_op)?;
        self.env.check_writable()?;
        let planned = plan(batch)?;
        let guards = locks.lock_all(planned.iter().map(|p| &p.object_key));
        let now_secs = self.env.config.clock.now_secs();
        let mut fjall_batch = self.env.db.batch();
        let mut overlay = Overlay::new();
        let marker = self.may_expire(&planned) && self.env.add_ttl_marker(&mut fjall_batch);
        for p in planned {
            self.apply(&mut fjall_batch, &mut overlay, p, now_secs)?;
        }
        fjall_batch.commit().map_err(engine)?;
        if marker {
            self.env.ttl_marker_committed();
        }
        drop(guards);
        if opts.sync || self.env.config.sync == SyncPolicy::OSync {
            self.env.durable()?;
        }
        Ok(())
    }

    /// True when some put of the batch will carry an expiry.
    fn may_expire(&self, planned: &[Planned]) -> bool {
        let instance_expiry = self.env.config.expiry_secs > 0;
        planned.iter().any(|p| match &p.op {
            BatchOp::Put {
                expires_at_secs, ..
            } => instance_expiry || expires_at_secs.is_some(),
            BatchOp::Delete { .. } => false,
        })
    }

    fn apply(
        &self,
        batch: &mut OwnedWriteBatch,
        overlay: &mut Overlay,
        planned: Planned,
        now_secs: u64,
    ) -> Result<(), StorageError> {
        if let Some(value) = self.plain_put_value(&planned.op) {
            // The key's terms record and entries stay as they are, and so
            // does its overlay entry (if an earlier op of the batch left one).
            batch.insert(&self.objects, planned.object_key, object_value(None, value));
            return Ok(());
        }
        let old = self.current_terms(overlay, &planned)?;
        let Planned {
            op,
            object_key,
            terms_key,
        } = planned;
        let new = match op {
            BatchOp::Put {
                bucket,
                key,
                value,
                indexes,
                expires_at_secs,
            } => {
                let args = PutArgs {
                    bucket: &bucket,
                    key: &key,
                    value: &value,
                    specs: indexes,
                    expires_at_secs,
                };
                self.apply_put(batch, old, args, (&object_key, &terms_key), now_secs)?
            }
            BatchOp::Delete { bucket, key } => {
                self.apply_delete(batch, old, (&bucket, &key), (&object_key, &terms_key));
                None
            }
        };
        overlay.insert(object_key, new);
        Ok(())
    }

    /// The value of a put that cannot change its key's terms record or
    /// index entries, so they need not be read: it has no index specs and
    /// no expiry, and no stored record can carry an expiry (TTL has never
    /// been used in the environment, which an instance-wide `expiry_secs`
    /// also counts as). Then the live terms are the stored ones and stay
    /// unchanged with the same (absent) expiry. Checked under the key's
    /// lock: a batch that first brings an expiry sets `ttl_in_use` before it
    /// commits, under its keys' locks.
    fn plain_put_value<'a>(&self, op: &'a BatchOp) -> Option<&'a [u8]> {
        match op {
            BatchOp::Put {
                value,
                indexes,
                expires_at_secs: None,
                ..
            } if indexes.is_empty() && !self.env.ttl.in_use() => Some(value),
            _ => None,
        }
    }

    /// The key's terms record as of the ops applied so far.
    fn current_terms(
        &self,
        overlay: &Overlay,
        planned: &Planned,
    ) -> Result<Option<TermsRecord>, StorageError> {
        if let Some(record) = overlay.get(&planned.object_key) {
            return Ok(record.clone());
        }
        let Some(stored) = self.aux.get(&planned.terms_key).map_err(engine)? else {
            return Ok(None);
        };
        TermsRecord::decode(&stored)
            .map(Some)
            .map_err(|reason| corrupt(self.aux.path(), reason))
    }

    /// Writes a put; returns the key's new terms record.
    fn apply_put(
        &self,
        batch: &mut OwnedWriteBatch,
        old: Option<TermsRecord>,
        args: PutArgs<'_>,
        (object_key, terms_key): (&[u8], &[u8]),
        now_secs: u64,
    ) -> Result<Option<TermsRecord>, StorageError> {
        let config = &self.env.config;
        let expiry = effective_expiry(now_secs, args.expires_at_secs, config.expiry_secs);
        let live = old
            .as_ref()
            .filter(|r| !is_expired(r.expires_at_secs, now_secs));
        let mut terms = live.map(|r| r.terms.clone()).unwrap_or_default();
        apply_specs(&mut terms, args.specs);
        let new = TermsRecord {
            expires_at_secs: expiry,
            terms,
        };
        self.write_index_changes(batch, old.as_ref(), live, &new, (args.bucket, args.key))?;
        if !new.terms.is_empty() && live != Some(&new) {
            batch.insert(&self.aux, terms_key, new.encode());
        } else if new.terms.is_empty() && old.is_some() {
            batch.remove(&self.aux, terms_key);
        }
        batch.insert(&self.objects, object_key, object_value(expiry, args.value));
        Ok((!new.terms.is_empty()).then_some(new))
    }

    /// Removes entries the key no longer has and writes the ones that are new
    /// or whose expiry changed.
    fn write_index_changes(
        &self,
        batch: &mut OwnedWriteBatch,
        old: Option<&TermsRecord>,
        live: Option<&TermsRecord>,
        new: &TermsRecord,
        (bucket, key): (&[u8], &[u8]),
    ) -> Result<(), StorageError> {
        if let Some(old) = old {
            for (field, term) in old.terms.difference(&new.terms) {
                batch.remove(&self.aux, index_key(bucket, field, term, key));
            }
        }
        let same_expiry = live.filter(|r| r.expires_at_secs == new.expires_at_secs);
        let value = expiry_only(new.expires_at_secs);
        for entry in &new.terms {
            if same_expiry.is_some_and(|r| r.terms.contains(entry)) {
                continue;
            }
            let encoded = index_key(bucket, &entry.0, &entry.1, key);
            check_len(&encoded)?;
            batch.insert(&self.aux, encoded, value.clone());
        }
        Ok(())
    }

    fn apply_delete(
        &self,
        batch: &mut OwnedWriteBatch,
        old: Option<TermsRecord>,
        (bucket, key): (&[u8], &[u8]),
        (object_key, terms_key): (&[u8], &[u8]),
    ) {
        if let Some(old) = old {
            for (field, term) in &old.terms {
                batch.remove(&self.aux, index_key(bucket, field, term, key));
            }
            batch.remove(&self.aux, terms_key);
        }
        batch.remove(&self.objects, object_key);
    }
}

/// Encodes every op's keys. A delete of a key too long to have been stored
/// is dropped; a put of one is an error.
fn plan(batch: WriteBatch) -> Result<Vec<Planned>, StorageError> {
    let mut planned = Vec::with_capacity(batch.ops.len());
    for op in batch.ops {
        let (bucket, key) = op.bucket_key();
        let terms_key = terms_key(bucket, key);
        match (&op, check_len(&terms_key)) {
            (BatchOp::Delete { .. }, Err(_)) => continue,
            (_, result) => result?,
        }
        planned.push(Planned {
            object_key: object_key(bucket, key),
            terms_key,
            op,
        });
    }
    Ok(planned)
}

/// True when `(bucket, key)` is too long to have been stored.
pub fn unstorable(bucket: &[u8], key: &[u8]) -> bool {
    keys::terms_key_len(bucket, key) > keys::ENCODED_KEY_BYTES_MAX
}
