//! Eddy's bitcask backend: append-only data files, an in-memory keydir,
//! hint files, merge, TTL, group commit and crash recovery
//! (docs/design/002-bitcask.md, format in docs/formats/bitcask.md).
//!
//! Modules, bottom up: [`format`] (record bytes), [`scan`] (damage-tolerant
//! file scans), [`hint`] (hint files), [`datafile`] (files and the write
//! buffer), [`keydir`] (memory), `state` (the keydir plus the file table),
//! `recovery` (open), `engine` (write path, group commit), `read` (get,
//! folds, status), [`merge`], `background` (the hint, sync and merge
//! threads every instance of the process shares).
//!
//! Bitcask keeps no secondary-index entries: its capabilities say
//! `indexes: false`, a write with index specs is refused with
//! [`StorageError::NoIndexes`], and an index scan answers nothing. A vnode
//! keeps its buckets' entries in its side store (design note 027).
//!
//! Invariants:
//! - Replaying the data files in id order rebuilds exactly the keydir the
//!   writes built: merges keep replay order (see [`merge`]).
//! - A record is returned only after its CRC and key have been checked.
//! - A write with `sync` returns only after an fdatasync covering it; after
//!   a failed fsync every write fails with `StorageError::Poisoned`.
//! - A deleted or dropped key never reappears, across merges and restarts.

mod background;
mod config;
pub mod datafile;
mod engine;
pub mod format;
pub mod hint;
pub mod keydir;
mod lock;
pub mod merge;
mod read;
mod recovery;
pub mod scan;
mod state;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use eddy_storage::{
    Backend, BackendStatus, BatchOp, Capabilities, FoldOptions, IndexQuery, IndexSpec, KeyVisitor,
    ObjectVisitor, StorageError, WriteBatch, WriteOptions, destroy, limits,
};

pub use config::{BitcaskConfig, MergeWindow};
pub use merge::MergeStats;
pub use recovery::{Damage, OpenReport, Rejected};

use datafile::{ActiveFile, data_path, sync_dir};
use engine::{Inner, Writer};
use state::FileInfo;

/// One bitcask instance (one partition's store).
pub struct Bitcask {
    inner: Arc<Inner>,
}

impl Bitcask {
    /// Opens (creating if needed) the instance in `dir`, recovering what the
    /// data files hold, after deleting what an interrupted destroy of `dir`
    /// left (never read as data). Fails with [`StorageError::Locked`] when
    /// another open instance holds the directory.
    pub fn open(dir: &Path, config: BitcaskConfig) -> Result<Bitcask, StorageError> {
        config.validate()?;
        destroy::finish_interrupted(dir)?;
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        let lock = lock::lock_dir(dir)?;
        let recovered = recovery::recover(dir)?;
        let mut state = recovered.state;
        let id = recovered.next_writer_id;
        let mut active = ActiveFile::create(data_path(dir, id), id, config.max_file_size_bytes)?;
        active
            .flush()
            .map_err(|e| StorageError::io(&active.file.path, e))?;
        sync_dir(dir)?;
        state.files.insert(id, FileInfo::new(active.file.clone()));
        let mut inner = Inner::new(dir.to_path_buf(), config, state, Writer::new(active));
        inner.report = recovered.report;
        *inner.lock_file.lock() = Some(lock);
        let inner = Arc::new(inner);
        let membership = background::join(&inner).map_err(|e| StorageError::io(dir, e))?;
        let _ = inner.membership.set(membership);
        for id in recovered.unhinted {
            inner.queue_hint(id);
        }
        Ok(Bitcask { inner })
    }

    /// Merges now, blocking until done: files chosen by the thresholds, or
    /// every immutable file with `force`. Reads and writes go on meanwhile.
    pub fn merge(&self, force: bool) -> Result<MergeStats, StorageError> {
        merge::merge(&self.inner, force)
    }

    /// What recovery found when this instance was opened.
    pub fn open_report(&self) -> &OpenReport {
        &self.inner.report
    }

    /// Bytes the keydir allocates (arena plus hash table).
    pub fn keydir_memory_bytes(&self) -> usize {
        self.inner.state.read().keydir.memory_bytes()
    }

    /// Makes the next fdatasync fail, to test poisoning. Not for production.
    #[doc(hidden)]
    pub fn inject_sync_failure(&self) {
        self.inner.fail_next_sync();
    }

    /// While `Some(errno)`, every write of buffered bytes to a data file
    /// fails with that OS error (ENOSPC: a full disk), until `None`. Not for
    /// production.
    #[doc(hidden)]
    pub fn inject_flush_failure(&self, errno: Option<i32>) {
        self.inner.fail_flushes(errno);
    }

    /// Flushes of the write buffer that failed for lack of disk space or
    /// descriptors (their records stayed buffered).
    pub fn flush_failures(&self) -> u64 {
        self.inner.flush_failures.load(Ordering::Relaxed)
    }

    /// Stops (or resumes) the background syncs of files closed by rollover,
    /// leaving them to the next durable write. Not for production.
    #[doc(hidden)]
    pub fn pause_background_syncs(&self, paused: bool) {
        self.inner.pause_background_syncs(paused);
    }

    /// Ids of data files closed by rollover whose fdatasync has not
    /// succeeded yet (tests).
    #[doc(hidden)]
    pub fn unsynced_file_ids(&self) -> Vec<u32> {
        self.inner.unsynced_file_ids()
    }

    /// Writes the hint files still pending and waits for them (tests and
    /// tools that want a fast next open).
    pub fn write_pending_hints(&self) -> Result<(), StorageError> {
        let ids: Vec<u32> = {
            let active = self.inner.writer.lock().active.id();
            let st = self.inner.state.read();
            let dir = &self.inner.dir;
            st.files
                .range(..active)
                .map(|(id, _)| id)
                .filter(|id| !datafile::hint_path(dir, **id).exists())
                .copied()
                .collect()
        };
        ids.into_iter()
            .try_for_each(|id| background::write_hint(&self.inner, id))
    }

    fn shutdown(&self) -> Result<(), StorageError> {
        self.stop(true)
    }

    /// Stops the background work and releases the directory; with
    /// `keep`, first makes every write durable and writes the active
    /// file's hint (a shutdown), else leaves the files as they are (the
    /// data is about to be destroyed).
    fn stop(&self, keep: bool) -> Result<(), StorageError> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.stop.request();
        if let Some(m) = self.inner.membership.get() {
            m.leave(&self.inner);
        }
        let result = match keep {
            true => self.close_active(),
            false => Ok(()),
        };
        self.inner.lock_file.lock().take();
        result
    }

    /// Syncs the closed files still unsynced, flushes and syncs the active
    /// file and writes its hint.
    fn close_active(&self) -> Result<(), StorageError> {
        self.inner.sync_closed()?;
        let (file, empty) = {
            let mut w = self.inner.writer.lock();
            w.active
                .flush()
                .map_err(|e| StorageError::io(&w.active.file.path, e))?;
            (w.active.file.clone(), w.active.is_empty())
        };
        self.inner.sync_data_file(&file)?;
        if !empty {
            background::write_hint(&self.inner, file.id)?;
        }
        Ok(())
    }
}

impl Drop for Bitcask {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl Backend for Bitcask {
    fn name(&self) -> &'static str {
        "bitcask"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            ordered: false,
            indexes: false,
            ttl: true,
            kv_separation: false,
            persistent: true,
            expires: self.inner.config.expiry_secs > 0,
        }
    }

    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.inner.get(bucket, key)
    }

    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        self.inner.write(batch, opts)
    }

    fn put(
        &self,
        bucket: &[u8],
        key: &[u8],
        value: &[u8],
        indexes: &[IndexSpec],
        opts: WriteOptions,
    ) -> Result<(), StorageError> {
        check_put(bucket, key, value, indexes)?;
        self.inner.put((bucket, key, value), None, opts)
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

    /// Answers nothing: bitcask keeps no index entries.
    fn index_range(
        &self,
        _query: &IndexQuery,
        _f: &mut KeyVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.inner.check_open()
    }

    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        self.inner.drop_bucket(bucket)
    }

    fn is_empty(&self) -> Result<bool, StorageError> {
        self.inner.is_empty()
    }

    fn sync(&self) -> Result<(), StorageError> {
        self.inner.sync_all()
    }

    fn status(&self) -> Result<BackendStatus, StorageError> {
        self.inner.status()
    }

    fn recovery_report(&self) -> eddy_storage::RecoveryReport {
        self.inner.report.summary()
    }

    fn close(&self) -> Result<(), StorageError> {
        self.shutdown()
    }

    fn close_discarding(&self) -> Result<(), StorageError> {
        self.stop(false)
    }

    /// Stops the background work and releases the directory (flushing and
    /// syncing nothing: the data goes), then renames it out of use durably
    /// before deleting it ([`destroy::destroy_dir`]); [`Bitcask::open`]
    /// finishes a destroy a crash interrupted.
    fn destroy(self: Box<Self>) -> Result<(), StorageError> {
        let _ = self.stop(false);
        destroy::destroy_dir(&self.inner.dir)
    }
}

/// The limits of a put: the hot path checks lengths against the same
/// constants `limits::check_op` uses, without copying. A put with index
/// specs goes through `check_op` itself (an oversized spec is `TooLarge`,
/// as on every backend), then is refused: bitcask keeps no index entries.
fn check_put(
    bucket: &[u8],
    key: &[u8],
    value: &[u8],
    indexes: &[IndexSpec],
) -> Result<(), StorageError> {
    let checks = [
        ("bucket", bucket.len(), limits::BUCKET_BYTES_MAX),
        ("key", key.len(), limits::KEY_BYTES_MAX),
        ("value", value.len(), limits::VALUE_BYTES_MAX),
    ];
    for (what, size, max) in checks {
        if size > max {
            return Err(StorageError::TooLarge { what, size, max });
        }
    }
    if indexes.is_empty() {
        return Ok(());
    }
    limits::check_op(&BatchOp::Put {
        bucket: bucket.to_vec(),
        key: key.to_vec(),
        value: Vec::new(),
        indexes: indexes.to_vec(),
        expires_at_secs: None,
    })?;
    Err(StorageError::NoIndexes { backend: "bitcask" })
}
