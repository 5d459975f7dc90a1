//! Writes to a partition while it is handed off: every vnode's backend is
//! wrapped in a [`Watched`] backend, which, while a transfer of its
//! partition runs, records the keys written to it (so the sender re-sends
//! them after its fold: "Handoff, as built" in design note 010), and which
//! can be sealed (writes refused) for the last step before a vnode is
//! dropped.
//!
//! The wrapper sits between the vnode and the engine, so every write (a
//! coordinated put, a replica's merge, read repair, a reap) is seen without
//! the vnode knowing; outside a transfer it costs one atomic load per write.
//!
//! Invariants:
//! - a write is recorded after the engine took it, and whether to record
//!   it is decided after too: a write that finds no transfer running
//!   finished before the transfer's fold began, so the fold reads it; a
//!   reader that finds a key recorded reads that write or a later one;
//! - once [`Watched::seal`] returns, no write is in progress and every
//!   later one is refused ([`StorageError::Closed`]) until
//!   [`Watched::unseal`]: the recorded keys are then all there is to send;
//! - while partition P is retiring (its data being destroyed), a vnode
//!   factory wrapped by [`Watch::wrap_factory`] does not open P again.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Weak};
use std::time::Duration;

use eddy_ring::Partition;
use eddy_storage::fold::{KeyVisitor, ObjectVisitor};
use eddy_storage::{
    Backend, BackendStatus, Capabilities, FoldOptions, IndexQuery, IndexSpec, StorageError,
    WriteBatch, WriteOptions,
};
use parking_lot::{Condvar, Mutex};

use eddy_kv::node::{VnodeFactory, VnodeParts};
use eddy_vnode::msg::StorageKey;

/// Keys recorded per partition before the record gives up and the
/// transfer folds the whole partition again.
pub const DIRTY_KEYS_MAX: usize = 1 << 20;

/// The node's watched backends, by partition.
#[derive(Default)]
pub struct Watch {
    backends: Mutex<HashMap<u32, Weak<Watched>>>,
    retiring: Mutex<HashSet<u32>>,
    retired: Condvar,
}

impl Watch {
    /// An empty registry.
    pub fn new() -> Arc<Watch> {
        Arc::default()
    }

    /// Wraps partition `p`'s newly opened backend; give the result to the
    /// vnode (`Node::start_with`'s `open`, a [`VnodeFactory`]).
    pub fn wrap(&self, p: Partition, backend: Arc<dyn Backend>) -> Arc<dyn Backend> {
        let watched = Arc::new(Watched::new(backend));
        self.backends.lock().insert(p.0, Arc::downgrade(&watched));
        watched
    }

    /// A factory whose backends are wrapped, and which waits while the
    /// partition it opens is retiring.
    pub fn wrap_factory(self: &Arc<Self>, inner: Arc<dyn VnodeFactory>) -> Arc<dyn VnodeFactory> {
        Arc::new(WatchedFactory {
            inner,
            watch: self.clone(),
        })
    }

    /// Partition `p`'s watched backend, if it is `backend` (the one its
    /// vnode uses now).
    pub(crate) fn of(&self, p: Partition, backend: &Arc<dyn Backend>) -> Option<Arc<Watched>> {
        let watched = self.backends.lock().get(&p.0)?.upgrade()?;
        let same = std::ptr::addr_eq(Arc::as_ptr(backend), Arc::as_ptr(&watched));
        same.then_some(watched)
    }

    /// Marks `p` retiring until the guard drops: the factory opens no new
    /// backend for it meanwhile.
    pub(crate) fn retiring(&self, p: Partition) -> Retiring<'_> {
        self.retiring.lock().insert(p.0);
        Retiring { watch: self, p }
    }

    fn wait_retired(&self, p: Partition) {
        let mut retiring = self.retiring.lock();
        while retiring.contains(&p.0) {
            self.retired.wait(&mut retiring);
        }
    }
}

/// While alive, a partition is retiring.
pub(crate) struct Retiring<'a> {
    watch: &'a Watch,
    p: Partition,
}

impl Drop for Retiring<'_> {
    fn drop(&mut self) {
        self.watch.retiring.lock().remove(&self.p.0);
        self.watch.retired.notify_all();
    }
}

struct WatchedFactory {
    inner: Arc<dyn VnodeFactory>,
    watch: Arc<Watch>,
}

impl VnodeFactory for WatchedFactory {
    fn open(&self, p: Partition) -> Result<VnodeParts, String> {
        self.watch.wait_retired(p);
        let parts = self.inner.open(p)?;
        Ok(VnodeParts {
            backend: self.watch.wrap(p, parts.backend),
            ..parts
        })
    }
}

/// Keys written while a transfer runs.
#[derive(Default)]
struct Dirty {
    keys: BTreeSet<(Vec<u8>, Vec<u8>)>,
    /// More than [`DIRTY_KEYS_MAX`] keys, or a whole bucket, were written:
    /// the keys alone no longer say what changed.
    overflowed: bool,
}

/// What was written since the last [`Watched::take_dirty`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// The keys, in order.
    pub keys: Vec<StorageKey>,
    /// Too much was written to list: fold everything again.
    pub overflowed: bool,
}

/// A backend whose writes are recorded while a transfer runs.
pub struct Watched {
    inner: Arc<dyn Backend>,
    tracking: AtomicBool,
    dirty: Mutex<Dirty>,
    sealed: AtomicBool,
    writing: AtomicUsize,
}

/// One write in progress.
struct Writing<'a>(&'a AtomicUsize);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl Watched {
    fn new(inner: Arc<dyn Backend>) -> Watched {
        Watched {
            inner,
            tracking: AtomicBool::new(false),
            dirty: Mutex::default(),
            sealed: AtomicBool::new(false),
            writing: AtomicUsize::new(0),
        }
    }

    /// Starts recording written keys (again: what was recorded stays).
    pub fn track(&self) {
        self.tracking.store(true, SeqCst);
    }

    /// Stops recording and forgets what was recorded.
    pub fn untrack(&self) {
        self.tracking.store(false, SeqCst);
        *self.dirty.lock() = Dirty::default();
    }

    /// Whether anything was written since the keys were last taken.
    pub fn has_dirty(&self) -> bool {
        let dirty = self.dirty.lock();
        dirty.overflowed || !dirty.keys.is_empty()
    }

    /// Takes the keys recorded so far.
    pub fn take_dirty(&self) -> Written {
        let dirty = std::mem::take(&mut *self.dirty.lock());
        Written {
            keys: dirty
                .keys
                .into_iter()
                .map(|(bucket, key)| StorageKey { bucket, key })
                .collect(),
            overflowed: dirty.overflowed,
        }
    }

    /// Records `keys` again (they were taken but not delivered).
    pub fn restore_dirty(&self, written: Written) {
        let mut dirty = self.dirty.lock();
        dirty.overflowed |= written.overflowed;
        for k in written.keys {
            Self::record(&mut dirty, k.bucket, k.key);
        }
    }

    /// Refuses writes from now on and waits until none is in progress.
    pub fn seal(&self) {
        self.sealed.store(true, SeqCst);
        while self.writing.load(SeqCst) > 0 {
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Takes writes again.
    pub fn unseal(&self) {
        self.sealed.store(false, SeqCst);
    }

    /// Enters a write, unless sealed.
    fn enter(&self) -> Result<Writing<'_>, StorageError> {
        self.writing.fetch_add(1, SeqCst);
        let guard = Writing(&self.writing);
        match self.sealed.load(SeqCst) {
            true => Err(StorageError::Closed),
            false => Ok(guard),
        }
    }

    fn written(&self, bucket: &[u8], key: &[u8]) {
        if self.tracking.load(SeqCst) {
            Self::record(&mut self.dirty.lock(), bucket.to_vec(), key.to_vec());
        }
    }

    fn record(dirty: &mut Dirty, bucket: Vec<u8>, key: Vec<u8>) {
        if dirty.overflowed {
            return;
        }
        dirty.keys.insert((bucket, key));
        if dirty.keys.len() > DIRTY_KEYS_MAX {
            dirty.keys.clear();
            dirty.overflowed = true;
        }
    }

    fn overflow(&self) {
        if self.tracking.load(SeqCst) {
            let mut dirty = self.dirty.lock();
            dirty.keys.clear();
            dirty.overflowed = true;
        }
    }
}

impl Backend for Watched {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn capabilities_for(&self, bucket: &[u8]) -> Capabilities {
        self.inner.capabilities_for(bucket)
    }

    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(bucket, key)
    }

    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        let _writing = self.enter()?;
        // Listed whether or not a transfer runs: one may begin while the
        // batch is written, and it is the check after the write that counts.
        let keys: Vec<(Vec<u8>, Vec<u8>)> = batch
            .ops
            .iter()
            .map(|op| {
                let (b, k) = op.bucket_key();
                (b.to_vec(), k.to_vec())
            })
            .collect();
        self.inner.write(batch, opts)?;
        keys.iter().for_each(|(b, k)| self.written(b, k));
        Ok(())
    }

    fn put(
        &self,
        bucket: &[u8],
        key: &[u8],
        value: &[u8],
        indexes: &[IndexSpec],
        opts: WriteOptions,
    ) -> Result<(), StorageError> {
        let _writing = self.enter()?;
        self.inner.put(bucket, key, value, indexes, opts)?;
        self.written(bucket, key);
        Ok(())
    }

    fn delete(&self, bucket: &[u8], key: &[u8], opts: WriteOptions) -> Result<(), StorageError> {
        let _writing = self.enter()?;
        self.inner.delete(bucket, key, opts)?;
        self.written(bucket, key);
        Ok(())
    }

    fn fold_keys(&self, opts: &FoldOptions, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.inner.fold_keys(opts, f)
    }

    fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.inner.fold_objects(opts, f)
    }

    fn index_range(&self, query: &IndexQuery, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.inner.index_range(query, f)
    }

    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        let _writing = self.enter()?;
        self.inner.drop_bucket(bucket)?;
        self.overflow();
        Ok(())
    }

    fn is_empty(&self) -> Result<bool, StorageError> {
        self.inner.is_empty()
    }

    fn sync(&self) -> Result<(), StorageError> {
        self.inner.sync()
    }

    fn status(&self) -> Result<BackendStatus, StorageError> {
        self.inner.status()
    }

    fn recovery_report(&self) -> eddy_storage::RecoveryReport {
        self.inner.recovery_report()
    }

    fn close(&self) -> Result<(), StorageError> {
        self.inner.close()
    }

    fn close_discarding(&self) -> Result<(), StorageError> {
        self.inner.close_discarding()
    }

    /// A shared engine cannot be destroyed through one handle: a handed-off
    /// partition is destroyed by [`super::PartitionStore::destroy`].
    fn destroy(self: Box<Self>) -> Result<(), StorageError> {
        self.inner.close()?;
        Err(StorageError::Config(
            "a watched backend is destroyed by its partition store".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_storage::memory::{MemoryBackend, MemoryConfig};

    fn key(k: &[u8]) -> StorageKey {
        StorageKey {
            bucket: b"b".to_vec(),
            key: k.to_vec(),
        }
    }

    #[test]
    fn writes_are_recorded_while_tracked_and_refused_while_sealed() {
        let watch = Watch::new();
        let inner: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        let backend = watch.wrap(Partition(1), inner);
        let watched = watch.of(Partition(1), &backend).expect("its own backend");
        let put = |k: &[u8]| backend.put(b"b", k, b"v", &[], WriteOptions::NO_SYNC);

        put(b"before").unwrap();
        watched.track();
        put(b"x").unwrap();
        backend
            .delete(b"b", b"before", WriteOptions::NO_SYNC)
            .unwrap();
        let mut batch = WriteBatch::default();
        batch.put(b"b", b"y", b"v", Vec::new(), None);
        backend.write(batch, WriteOptions::NO_SYNC).unwrap();
        let written = watched.take_dirty();
        assert_eq!(written.keys, vec![key(b"before"), key(b"x"), key(b"y")]);
        assert!(watched.take_dirty().keys.is_empty(), "taken");

        watched.restore_dirty(written);
        watched.seal();
        assert!(matches!(put(b"z"), Err(StorageError::Closed)));
        assert_eq!(backend.get(b"b", b"z").unwrap(), None, "refused whole");
        watched.unseal();
        put(b"z").unwrap();
        assert_eq!(watched.take_dirty().keys.len(), 4);

        backend.drop_bucket(b"b").unwrap();
        assert!(
            watched.take_dirty().overflowed,
            "a dropped bucket lists no keys"
        );
        watched.untrack();
        put(b"after").unwrap();
        assert_eq!(watched.take_dirty(), Written::default());

        let other: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        assert!(
            watch.of(Partition(1), &other).is_none(),
            "not the watched one"
        );
    }
}
