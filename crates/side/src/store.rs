//! One vnode incarnation's side store: the index entries and expiry of
//! its keys (a key record, its index entries and its expiry entry, changed
//! together in one fjall batch) and read back by region (design note 027).
//!
//! The caller serialises the changes of one key (the vnode's key locks),
//! so the key record a change reads is the one it replaces, and tells the
//! store what the key holds after each change ([`SideStore::set`]): the
//! store diffs that against its own key record, so setting the same state
//! twice (replay after a crash) writes nothing the second time.
//!
//! The expiry sweep reads the expiry order and writes nothing here: a
//! swept key's entries go when compaction reaches them ([`crate::swept`]).
//! A key whose record compaction dropped is, to [`SideStore::set`], a key
//! without one; whatever of its old entries is left expired at or before
//! the durable mark, so readers skip it and compaction drops it.

use std::ops::Bound;

use eddy_storage::tuple::is_empty_range;
use eddy_storage::{FoldControl, StorageError};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fjall::{AbstractTree, Database, Keyspace, OwnedWriteBatch, PersistMode};

use crate::layout::{
    self, FORMAT, KeyRecord, META_BUILT, META_FORMAT, META_SWEPT, Term, expiry_key, index_key,
    key_record_key,
};
use crate::sequence::Sequence;
use crate::swept::Swept;

/// Engine name used in [`StorageError::Engine`].
const ENGINE: &str = "side store";

/// Key records removed per batch when a bucket is dropped.
const DROP_BATCH: usize = 1024;

/// What a key holds after a change, as the side store keeps it.
#[derive(Clone, Copy, Debug)]
pub struct KeyState<'a> {
    pub bucket: &'a [u8],
    pub key: &'a [u8],
    /// The key's index entries as stored: sorted, no duplicates (none for
    /// a tombstone or a removed key).
    pub terms: &'a [Term],
    /// When the key expires, in seconds (0: never).
    pub expiry: u64,
}

/// Told each expired key: its expiry, bucket and key.
pub type ExpiredVisitor<'a> = dyn FnMut(u64, &[u8], &[u8]) -> FoldControl + 'a;

/// The node's side database as its stores share it. A write notes that
/// the journal holds something not yet synced, so a persist with nothing
/// new syncs nothing: a checkpoint persists once per vnode, and the
/// vnodes share this one database.
#[derive(Clone)]
pub(crate) struct SideDb {
    pub(crate) db: Database,
    unpersisted: Arc<AtomicBool>,
}

impl SideDb {
    pub(crate) fn new(db: Database) -> SideDb {
        SideDb {
            db,
            unpersisted: Arc::default(),
        }
    }

    /// Commits `batch`.
    fn commit(&self, batch: OwnedWriteBatch) -> Result<(), StorageError> {
        batch.commit().map_err(engine)?;
        self.written();
        Ok(())
    }

    /// Notes a write that reached the journal.
    pub(crate) fn written(&self) {
        self.unpersisted.store(true, Ordering::Release);
    }

    /// Makes every write noted so far durable. A write still under way
    /// (noted after this reads the note) is left to the next persist:
    /// callers that promise durability first wait for the writes they
    /// cover (`Vnode::fence`).
    pub(crate) fn persist(&self) -> Result<(), StorageError> {
        if !self.unpersisted.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        self.db.persist(PersistMode::SyncData).map_err(|e| {
            self.written();
            engine(e)
        })
    }
}

/// A vnode incarnation's side store.
pub struct SideStore {
    side: SideDb,
    ks: Keyspace,
    /// The incarnation's change sequence.
    sequence: Sequence,
    /// Where the expiry sweep stands.
    swept: Swept,
    /// The durable swept mark the expiry order was last trimmed to.
    trimmed: AtomicU64,
}

impl SideStore {
    /// Opens the store in `ks`, writing its format if it is new.
    pub(crate) fn open(
        side: SideDb,
        ks: Keyspace,
        sequence: Sequence,
    ) -> Result<SideStore, StorageError> {
        check_format(&side, &ks)?;
        let durable = match ks.get(META_SWEPT).map_err(engine)? {
            Some(v) => layout::record_expiry(&v).ok_or_else(|| corrupt("the swept mark"))?,
            None => 0,
        };
        Ok(SideStore {
            side,
            ks,
            sequence,
            swept: Swept::starting_at(durable),
            trimmed: AtomicU64::new(0),
        })
    }

    /// Where the expiry sweep stands ([`crate::swept`]).
    pub fn swept(&self) -> &Swept {
        &self.swept
    }

    /// Writes `upto` as the durable swept mark, for the persist that
    /// follows (a checkpoint reads the processed mark, syncs the backend,
    /// calls this, persists and syncs the change log, then
    /// [`SideStore::swept_durable`]); only when a key was swept since the
    /// last write ([`Swept::note_swept`]): otherwise the walk after a
    /// restart from the older mark passes only over what it swept before,
    /// and a checkpoint need not sync the side journal for it.
    pub fn write_swept(&self, upto: u64) -> Result<(), StorageError> {
        if upto <= self.swept.durable() || !self.swept.take_unwritten() {
            return Ok(());
        }
        let written = self.ks.insert(META_SWEPT, upto.to_be_bytes());
        if let Err(e) = written {
            self.swept.keep_unwritten();
            return Err(engine(e));
        }
        self.side.written();
        Ok(())
    }

    /// Raises the durable swept mark to `upto` once what it covers is
    /// durable: from then on compaction drops entries expiring at or
    /// before it.
    pub fn swept_durable(&self, upto: u64) {
        self.swept.durable_to(upto);
    }

    /// Drops, whole and unread, the keyspace's tables that hold nothing
    /// but expiry entries at or before the durable swept mark; returns
    /// whether the mark moved since the last call. The walk never reads
    /// there again, and since new expiry entries sort after old ones,
    /// compaction alone would move those tables down untouched and keep
    /// them. An entry left in a table that holds others goes when
    /// compaction rewrites it ([`crate::swept`]).
    pub fn trim_swept_order(&self) -> Result<bool, StorageError> {
        let durable = self.swept.durable();
        if durable <= self.trimmed.load(Ordering::Acquire) {
            return Ok(false);
        }
        let lower = vec![layout::EXPIRY];
        let upper = expiry_key(durable.saturating_add(1), b"", b"");
        (self.ks.tree)
            .drop_range(lower..upper)
            .map_err(|e| engine(e.into()))?;
        self.trimmed.store(durable, Ordering::Release);
        Ok(true)
    }

    /// Flushes the memtable and compacts the whole keyspace, dropping
    /// what the durable swept mark covers.
    pub fn compact(&self) -> Result<(), StorageError> {
        self.ks.rotate_memtable_and_wait().map_err(engine)?;
        self.ks.major_compact().map_err(engine)
    }

    /// The incarnation's change sequence.
    pub fn sequence(&self) -> &Sequence {
        &self.sequence
    }

    /// Whether the store holds what its vnode's objects say (it was built
    /// from them, or started with them: [`SideStore::mark_built`]).
    pub fn is_built(&self) -> Result<bool, StorageError> {
        Ok(self.ks.get(META_BUILT).map_err(engine)?.is_some())
    }

    /// Records that the store holds what its vnode's objects say.
    pub fn mark_built(&self) -> Result<(), StorageError> {
        self.ks.insert(META_BUILT, []).map_err(engine)?;
        self.side.written();
        Ok(())
    }

    /// Makes every change committed so far durable (to this store and
    /// every other of the node's database).
    pub fn persist(&self) -> Result<(), StorageError> {
        self.side.persist()
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

    /// Makes the store say what `state` says of its key: the key record,
    /// index entries and expiry entry that differ are changed in one
    /// batch. Returns false, writing nothing, when they already say it.
    pub fn set(&self, state: &KeyState<'_>) -> Result<bool, StorageError> {
        let record_key = key_record_key(state.bucket, state.key);
        let old = self.read_record(&record_key)?.unwrap_or_default();
        let new = KeyRecord {
            expiry: state.expiry,
            terms: state.terms.to_vec(),
        };
        if old == new {
            return Ok(false);
        }
        let mut batch = self.side.db.batch();
        self.stage(&mut batch, (state.bucket, state.key), &old, &new);
        match new.is_empty() {
            true => batch.remove(&self.ks, record_key),
            false => batch.insert(&self.ks, record_key, new.encode()),
        }
        self.side.commit(batch)?;
        Ok(true)
    }

    /// Adds to `batch` the index and expiry entries that turn `old`'s into
    /// `new`'s.
    fn stage(
        &self,
        batch: &mut OwnedWriteBatch,
        (bucket, key): (&[u8], &[u8]),
        old: &KeyRecord,
        new: &KeyRecord,
    ) {
        let ks = &self.ks;
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

    /// Removes every key record of `bucket` with its entries (the bucket
    /// was dropped), in batches; returns how many keys had one.
    pub fn drop_bucket(&self, bucket: &[u8]) -> Result<u64, StorageError> {
        let mut dropped = 0;
        loop {
            let range = layout::key_record_range(bucket);
            let mut chunk = Vec::with_capacity(DROP_BATCH);
            for guard in self.ks.range(range).take(DROP_BATCH) {
                let (k, v) = guard.into_inner().map_err(engine)?;
                let record = KeyRecord::decode(&v).ok_or_else(|| corrupt("a key record"))?;
                chunk.push((k, record));
            }
            if chunk.is_empty() {
                return Ok(dropped);
            }
            let mut batch = self.side.db.batch();
            let none = KeyRecord::default();
            for (k, record) in &chunk {
                let (_, key) =
                    layout::split_key_record_key(k).ok_or_else(|| corrupt("a key record key"))?;
                self.stage(&mut batch, (bucket, key), record, &none);
                batch.remove(&self.ks, k.clone());
            }
            self.side.commit(batch)?;
            dropped += chunk.len() as u64;
        }
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

    /// Calls `f` with the (expiry, bucket, key) of every entry of the
    /// expiry order from `from` to `now_secs`'s (inclusive), soonest
    /// first. What the sweep processed stays in the order until
    /// compaction; the sweep walks on from where it stopped.
    pub fn expired(
        &self,
        from: SweepFrom<'_>,
        now_secs: u64,
        f: &mut ExpiredVisitor<'_>,
    ) -> Result<(), StorageError> {
        let lower = match from {
            SweepFrom::Secs(secs) => Bound::Included(expiry_key(secs, b"", b"")),
            SweepFrom::After(at, (bucket, key)) => Bound::Excluded(expiry_key(at, bucket, key)),
        };
        let upper = expiry_key(now_secs.saturating_add(1), b"", b"");
        for guard in self.ks.range((lower, Bound::Excluded(upper))) {
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

/// Where a walk of the expiry order starts.
#[derive(Clone, Copy, Debug)]
pub enum SweepFrom<'a> {
    /// At the first entry expiring at this second or later.
    Secs(u64),
    /// Just after this entry: (expiry, (bucket, key)).
    After(u64, (&'a [u8], &'a [u8])),
}

/// Whether `terms` (sorted) holds `(field, term)`.
fn has_term(terms: &[Term], field: &[u8], term: &[u8]) -> bool {
    (terms.binary_search_by(|(f, t)| (f.as_slice(), t.as_slice()).cmp(&(field, term)))).is_ok()
}

/// Whether a key expiring at `expiry` (0: never) is gone at `now_secs`.
fn expired(expiry: u64, now_secs: u64) -> bool {
    expiry != 0 && expiry <= now_secs
}

/// A new store gets the format; one of another format is refused.
fn check_format(side: &SideDb, ks: &Keyspace) -> Result<(), StorageError> {
    match ks.get(META_FORMAT).map_err(engine)? {
        Some(v) if v.as_ref() == FORMAT.to_be_bytes() => Ok(()),
        Some(v) => Err(StorageError::Config(format!(
            "side store {:?} has format {:?}; this build reads format {FORMAT}",
            ks.name(),
            v.as_ref()
        ))),
        None => {
            let mut batch = side.db.batch();
            batch.insert(ks, META_FORMAT, FORMAT.to_be_bytes());
            side.commit(batch)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SideEnv;
    use crate::env::SideConfig;

    fn order(store: &SideStore) -> Vec<u64> {
        let mut out = Vec::new();
        (store.expired(SweepFrom::Secs(0), u64::MAX - 1, &mut |at, _, _| {
            out.push(at);
            FoldControl::Continue
        }))
        .unwrap();
        out
    }

    #[test]
    fn trimming_drops_whole_tables_of_swept_expiry_entries_only() {
        let dir = tempfile::tempdir().unwrap();
        let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
        let store = env.open_vnode(1, 1).unwrap();
        // The format's meta entry in a table of its own, then three
        // tables: the first wholly swept, the second straddling the mark,
        // the third past it.
        store.ks.rotate_memtable_and_wait().unwrap();
        for table in [[5, 6], [8, 12], [14, 15]] {
            for at in table {
                store.ks.insert(expiry_key(at, b"b", b"k"), []).unwrap();
            }
            store.ks.rotate_memtable_and_wait().unwrap();
        }
        assert!(!store.trim_swept_order().unwrap(), "nothing swept yet");
        store.swept_durable(10);
        assert!(store.trim_swept_order().unwrap());
        assert_eq!(order(&store), [8, 12, 14, 15]);
        assert!(!store.trim_swept_order().unwrap(), "the mark has not moved");
    }
}
