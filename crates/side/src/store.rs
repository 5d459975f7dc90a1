//! One vnode incarnation's side store: its changes applied (key record,
//! change entry, index entries, expiry entry, in one fjall batch) and
//! read back by region (design note 027).
//!
//! Sequence order is commit order: a change takes its sequence and
//! commits its batch under the store's one commit lock, so a reader of
//! the change region never sees sequence n + 1 committed before n. The
//! caller serialises the changes of one key (the vnode's key locks), so
//! the key record a change reads is the one it replaces.

use std::ops::Bound;

use eddy_storage::tuple::is_empty_range;
use eddy_storage::{FoldControl, StorageError};
use fjall::{Database, Keyspace, OwnedWriteBatch};
use parking_lot::Mutex;

use crate::layout::{
    self, ChangeValue, FORMAT, KeyRecord, META_EPOCHS, META_FORMAT, Term, change_key, change_seq,
    decode_epochs, encode_epochs, expiry_key, index_key, key_record_key,
};

/// Engine name used in [`StorageError::Engine`].
const ENGINE: &str = "side store";

/// What a change left a key holding, as the side store keeps it.
#[derive(Clone, Copy, Debug)]
pub struct Change<'a> {
    pub bucket: &'a [u8],
    pub key: &'a [u8],
    /// The version (encoded version vector) the change left.
    pub version: &'a [u8],
    /// The change left a tombstone, or nothing at all.
    pub deleted: bool,
    /// The key's index entries as stored: sorted, no duplicates (ignored
    /// for a deleted key, which has none).
    pub terms: &'a [Term],
    /// When the key expires, in seconds (0: never; ignored for a deleted
    /// key).
    pub expiry: u64,
}

/// One entry of the change sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeEntry {
    pub seq: u64,
    pub bucket: Vec<u8>,
    pub key: Vec<u8>,
    pub deleted: bool,
    pub version: Vec<u8>,
}

/// Told each expired key: its expiry, bucket and key.
pub type ExpiredVisitor<'a> = dyn FnMut(u64, &[u8], &[u8]) -> FoldControl + 'a;

/// A vnode incarnation's side store.
pub struct SideStore {
    db: Database,
    ks: Keyspace,
    /// The next sequence to hand out, taken with the commit of its batch.
    commit: Mutex<u64>,
    /// (epoch, first sequence) of every open, this one last.
    epochs: Vec<(u32, u64)>,
}

impl SideStore {
    /// Opens the store in `ks`, writing its format if it is new, and
    /// starts a new epoch at the sequence after the last one stored.
    pub(crate) fn open(db: Database, ks: Keyspace) -> Result<SideStore, StorageError> {
        check_format(&db, &ks)?;
        let last = match ks.range(layout_change_range(0)).next_back() {
            Some(guard) => {
                let key = guard.key().map_err(engine)?;
                change_seq(&key).ok_or_else(|| corrupt("a change key"))?
            }
            None => 0,
        };
        let mut epochs = match ks.get(META_EPOCHS).map_err(engine)? {
            Some(v) => decode_epochs(&v).ok_or_else(|| corrupt("the epochs"))?,
            None => Vec::new(),
        };
        let epoch = epochs.last().map_or(1, |(e, _)| e + 1);
        epochs.push((epoch, last + 1));
        let mut batch = db.batch();
        batch.insert(&ks, META_EPOCHS, encode_epochs(&epochs));
        batch.commit().map_err(engine)?;
        Ok(SideStore {
            db,
            ks,
            commit: Mutex::new(last + 1),
            epochs,
        })
    }

    pub(crate) fn into_keyspace(self) -> Keyspace {
        self.ks
    }

    /// Every open's (epoch, first sequence), this one last.
    pub fn epochs(&self) -> &[(u32, u64)] {
        &self.epochs
    }

    /// The epoch this open started.
    pub fn epoch(&self) -> u32 {
        self.epochs.last().map_or(0, |(e, _)| *e)
    }

    /// The last sequence handed out (0: none yet).
    pub fn last_seq(&self) -> u64 {
        *self.commit.lock() - 1
    }

    /// The key record of `(bucket, key)`.
    pub fn key_record(&self, bucket: &[u8], key: &[u8]) -> Result<Option<KeyRecord>, StorageError> {
        self.read_record(&key_record_key(bucket, key))
    }

    fn read_record(&self, record_key: &[u8]) -> Result<Option<KeyRecord>, StorageError> {
        match self.ks.get(record_key).map_err(engine)? {
            Some(v) => KeyRecord::decode(&v)
                .map(Some)
                .ok_or_else(|| corrupt("a key record")),
            None => Ok(None),
        }
    }

    /// Records `change` as the key's latest; returns its sequence.
    pub fn apply(&self, change: &Change<'_>) -> Result<u64, StorageError> {
        let record_key = key_record_key(change.bucket, change.key);
        let old = self.read_record(&record_key)?;
        self.write(change, &record_key, old)
    }

    /// Records `change` unless the store already has it as the key's
    /// latest (same version, deletion, terms and expiry): replay's
    /// reconciliation after a crash. Returns the sequence of a new entry.
    pub fn reconcile(&self, change: &Change<'_>) -> Result<Option<u64>, StorageError> {
        let record_key = key_record_key(change.bucket, change.key);
        let old = self.read_record(&record_key)?;
        if let Some(old) = &old
            && self.holds(old, change)?
        {
            return Ok(None);
        }
        self.write(change, &record_key, old).map(Some)
    }

    /// Whether `old` (with its change entry) already says what `change`
    /// does.
    fn holds(&self, old: &KeyRecord, change: &Change<'_>) -> Result<bool, StorageError> {
        let new = new_record(change, old.seq);
        if (old.deleted, old.expiry, &old.terms) != (new.deleted, new.expiry, &new.terms) {
            return Ok(false);
        }
        let Some(v) = self.ks.get(change_key(old.seq)).map_err(engine)? else {
            return Ok(false);
        };
        let entry = ChangeValue::decode(&v).ok_or_else(|| corrupt("a change entry"))?;
        Ok(entry.version == change.version)
    }

    fn write(
        &self,
        change: &Change<'_>,
        record_key: &[u8],
        old: Option<KeyRecord>,
    ) -> Result<u64, StorageError> {
        let mut batch = self.db.batch();
        let mut next = self.commit.lock();
        let seq = *next;
        let new = new_record(change, seq);
        self.stage(&mut batch, change, old.as_ref(), &new);
        batch.insert(&self.ks, record_key, new.encode());
        batch.commit().map_err(engine)?;
        *next += 1;
        Ok(seq)
    }

    /// Adds to `batch` the change entry of `new` and the index and expiry
    /// entries that turn `old`'s into `new`'s.
    fn stage(
        &self,
        batch: &mut OwnedWriteBatch,
        c: &Change<'_>,
        old: Option<&KeyRecord>,
        new: &KeyRecord,
    ) {
        let (bucket, key, ks) = (c.bucket, c.key, &self.ks);
        let empty = KeyRecord::default();
        let old = old.unwrap_or(&empty);
        if old.seq != 0 {
            batch.remove(ks, change_key(old.seq));
        }
        let value = layout::encode_change(bucket, key, new.deleted, c.version);
        batch.insert(ks, change_key(new.seq), value);
        let moved = old.expiry != new.expiry;
        // An entry kept under a new expiry is overwritten below.
        for (field, term) in &old.terms {
            if !has_term(&new.terms, field, term) {
                batch.remove(ks, index_key(bucket, (field, term), key));
            }
        }
        for (field, term) in &new.terms {
            if moved || !has_term(&old.terms, field, term) {
                let entry = index_key(bucket, (field, term), key);
                batch.insert(ks, entry, layout::encode_expiry(new.expiry));
            }
        }
        if moved && old.expiry != 0 {
            batch.remove(ks, expiry_key(old.expiry, bucket, key));
        }
        if moved && new.expiry != 0 {
            batch.insert(ks, expiry_key(new.expiry, bucket, key), []);
        }
    }

    /// Calls `f` with every change after sequence `after`, in order.
    pub fn changes_since(
        &self,
        after: u64,
        f: &mut dyn FnMut(ChangeEntry) -> FoldControl,
    ) -> Result<(), StorageError> {
        for guard in self.ks.range(layout_change_range(after)) {
            let (k, v) = guard.into_inner().map_err(engine)?;
            let seq = change_seq(&k).ok_or_else(|| corrupt("a change key"))?;
            let value = ChangeValue::decode(&v).ok_or_else(|| corrupt("a change entry"))?;
            let entry = ChangeEntry {
                seq,
                bucket: value.bucket,
                key: value.key,
                deleted: value.deleted,
                version: value.version,
            };
            if f(entry) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Calls `f` with the (term, key) of every index entry of `bucket`'s
    /// `field` with a term from `start` to `end` (inclusive), strictly
    /// after `after` when given, in (term, key) order, skipping keys
    /// expired at `now_secs`.
    pub fn index_range(
        &self,
        (bucket, field): (&[u8], &[u8]),
        (start, end): (&[u8], &[u8]),
        after: Option<(&[u8], &[u8])>,
        now_secs: u64,
        f: &mut dyn FnMut(&[u8], &[u8]) -> FoldControl,
    ) -> Result<(), StorageError> {
        let prefix = layout::index_prefix(bucket, field);
        let range = layout::index_range(&prefix, (start, end), after);
        if is_empty_range(&range) {
            return Ok(());
        }
        for guard in self.ks.range(range) {
            let (k, v) = guard.into_inner().map_err(engine)?;
            let expiry = layout::decode_expiry(&v).ok_or_else(|| corrupt("an index entry"))?;
            if expired(expiry, now_secs) {
                continue;
            }
            let (term, key) =
                layout::split_index_key(&prefix, &k).ok_or_else(|| corrupt("an index key"))?;
            if f(&term, key) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Calls `f` with every key of `bucket` from `start` to `end`
    /// (inclusive; `None`: unbounded), strictly after `after`, in key
    /// order, that is neither deleted nor expired at `now_secs`.
    pub fn keys(
        &self,
        bucket: &[u8],
        (start, end): (Option<&[u8]>, Option<&[u8]>),
        after: Option<&[u8]>,
        now_secs: u64,
        f: &mut dyn FnMut(&[u8]) -> FoldControl,
    ) -> Result<(), StorageError> {
        let range = layout::key_record_range(bucket, start, end, after);
        if is_empty_range(&range) {
            return Ok(());
        }
        for guard in self.ks.range(range) {
            let (k, v) = guard.into_inner().map_err(engine)?;
            let record = KeyRecord::decode(&v).ok_or_else(|| corrupt("a key record"))?;
            if record.deleted || expired(record.expiry, now_secs) {
                continue;
            }
            let (_, key) =
                layout::split_key_record_key(&k).ok_or_else(|| corrupt("a key record key"))?;
            if f(key) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Calls `f` with the (expiry, bucket, key) of every key expired at
    /// `now_secs`, soonest first.
    pub fn expired(&self, now_secs: u64, f: &mut ExpiredVisitor<'_>) -> Result<(), StorageError> {
        let upper = expiry_key(now_secs.saturating_add(1), b"", b"");
        let range = (
            Bound::Included(vec![layout::EXPIRY]),
            Bound::Excluded(upper),
        );
        for guard in self.ks.range(range) {
            let k = guard.key().map_err(engine)?;
            let (at, bucket, key) =
                layout::split_expiry_key(&k).ok_or_else(|| corrupt("an expiry key"))?;
            if f(at, &bucket, key) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }
}

/// The key record `change` leaves, as sequence `seq`.
fn new_record(change: &Change<'_>, seq: u64) -> KeyRecord {
    KeyRecord {
        seq,
        expiry: if change.deleted { 0 } else { change.expiry },
        deleted: change.deleted,
        terms: if change.deleted {
            Vec::new()
        } else {
            change.terms.to_vec()
        },
    }
}

/// Whether `terms` (sorted) holds `(field, term)`.
fn has_term(terms: &[Term], field: &[u8], term: &[u8]) -> bool {
    (terms.binary_search_by(|(f, t)| (f.as_slice(), t.as_slice()).cmp(&(field, term)))).is_ok()
}

/// Whether a key expiring at `expiry` (0: never) is gone at `now_secs`.
fn expired(expiry: u64, now_secs: u64) -> bool {
    expiry != 0 && expiry <= now_secs
}

/// The changes after sequence `after`.
fn layout_change_range(after: u64) -> (Bound<[u8; 9]>, Bound<[u8; 9]>) {
    (
        Bound::Excluded(change_key(after)),
        Bound::Included(change_key(u64::MAX)),
    )
}

/// A new store gets the format; one of another format is refused.
fn check_format(db: &Database, ks: &Keyspace) -> Result<(), StorageError> {
    match ks.get(META_FORMAT).map_err(engine)? {
        Some(v) if v.as_ref() == FORMAT.to_be_bytes() => Ok(()),
        Some(v) => Err(StorageError::Config(format!(
            "side store {:?} has format {:?}; this build reads format {FORMAT}",
            ks.name(),
            v.as_ref()
        ))),
        None => {
            let mut batch = db.batch();
            batch.insert(ks, META_FORMAT, FORMAT.to_be_bytes());
            batch.commit().map_err(engine)
        }
    }
}

/// Wraps a fjall error; a poisoned database (an fsync failed earlier)
/// becomes [`StorageError::Poisoned`].
pub(crate) fn engine(error: fjall::Error) -> StorageError {
    match error {
        fjall::Error::Poisoned => {
            StorageError::Poisoned("an earlier side store journal fsync failed".into())
        }
        other => StorageError::Engine {
            engine: ENGINE,
            source: Box::new(other),
        },
    }
}

fn corrupt(what: &'static str) -> StorageError {
    StorageError::Corrupt {
        path: "side store".into(),
        offset: 0,
        reason: what,
    }
}
