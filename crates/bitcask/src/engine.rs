//! The shared core of an instance ([`Inner`]) and its write path.
//!
//! Locking: `writer` (a mutex) serialises appends; `state` (a read-write
//! lock) guards keydir and file table. A writer holds `writer` while it
//! appends the record and applies it to `state`, so keydir updates happen
//! in append order. Nobody takes `writer` while holding `state`. Readers
//! take only `state`, and `writer` briefly when a record is still in the
//! write buffer.
//!
//! Durability: `appended` counts every byte ever appended (a log sequence
//! number). A durable write waits until `durable` covers its end; one waiter
//! at a time leads, flushing the buffer and running one fdatasync for
//! everyone queued behind it (group commit). Rollover does not sync: it
//! queues the file it closes in `unsynced`, which the hint thread syncs in
//! the background, so a writer never waits for a disk flush it did not ask
//! for. The group-commit leader syncs whatever is still queued (and the
//! directory) before the active file, so its fdatasync of the active file
//! completes a sync of every byte before the LSN it covers. A closed file
//! leaves the queue only after its fdatasync and the directory's succeeded.
//! Every fdatasync of a data file made for durability runs under
//! `fsync_lock`, so no two race on one file (on a writeback error only one
//! of two concurrent callers would be told). A failed fsync (or a write
//! that fails for another reason than an exhausted resource) poisons the
//! instance: every later write fails with `StorageError::Poisoned`, and no
//! later fsync is trusted.
//!
//! Index specs: bitcask keeps no index entries (a vnode keeps them in its
//! side store, design note 027), so a write that gives it specs is refused
//! whole with `StorageError::NoIndexes` before anything is appended.
//!
//! Out of disk or descriptors (docs/design/008-transient-failures.md): a
//! flush that fails with `StorageError::Exhausted` keeps the buffer (a
//! retry rewrites it whole at the same offset) and does not poison. No
//! write is half-applied and reported failed: a write is refused before
//! anything is appended while the buffer holds more than
//! [`MAX_UNFLUSHED_BYTES`] that cannot be flushed, and a durable write
//! flushes the buffer before it appends; the flush after an applied record
//! is opportunistic and its failure is only counted (the next write, sync
//! or the background sync retries it). Rollover that cannot create the
//! next file removes what it created and refuses the write the same way.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use eddy_storage::clock::effective_expiry;
use eddy_storage::{
    BatchOp, GroupCommit, StorageError, SyncPolicy, WriteBatch, WriteOptions, limits,
};
use parking_lot::{Mutex, RwLock};

use crate::background::{Activity, Membership};
use crate::config::BitcaskConfig;
use crate::datafile::{ActiveFile, DataFile, ID_STRIDE, MAX_UNFLUSHED_BYTES, data_path, sync_dir};
use crate::format::{FLAG_DROP, FLAG_LZ4, FLAG_TOMBSTONE, NewRecord};
use crate::format::{compress_value, encode_drop_position, encode_record};
use crate::keydir::{Entry, expiry_to_u32};
use crate::recovery::OpenReport;
use crate::state::{FileInfo, State};

/// The appender: the active file and the byte count so far.
pub struct Writer {
    pub active: ActiveFile,
    /// Bytes appended since open, across files (the log sequence number).
    pub appended: u64,
    scratch: Vec<u8>,
}

impl Writer {
    pub fn new(active: ActiveFile) -> Self {
        Writer {
            active,
            appended: 0,
            scratch: Vec::new(),
        }
    }
}

/// Tells background work on an instance to stop (merges abort, no new
/// job starts).
#[derive(Default)]
pub struct Stop(AtomicBool);

impl Stop {
    pub fn request(&self) {
        self.0.store(true, Ordering::Release);
    }

    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Everything one instance shares between the handle and its threads.
pub struct Inner {
    pub dir: PathBuf,
    pub config: BitcaskConfig,
    pub state: RwLock<State>,
    pub writer: Mutex<Writer>,
    pub report: OpenReport,
    pub closed: AtomicBool,
    pub merge_lock: Mutex<()>,
    pub stop: Stop,
    pub lock_file: Mutex<Option<File>>,
    /// Its place in the shared background service (set once at open).
    pub membership: OnceLock<Membership>,
    /// The background jobs running on this instance now.
    pub activity: Activity,
    /// Records skipped by folds because they failed their CRC.
    pub corrupt_reads: AtomicU64,
    /// fdatasync calls made for durable writes and `sync()`.
    pub syncs: AtomicU64,
    /// The highest merge output id handed out (ids are never reused).
    pub last_merge_id: Mutex<u32>,
    /// Files closed by rollover whose fdatasync has not succeeded yet,
    /// oldest first.
    unsynced: Mutex<VecDeque<Arc<DataFile>>>,
    /// Held around every fdatasync of a data file made for durability.
    fsync_lock: Mutex<()>,
    /// Test hook: the hint thread leaves `unsynced` to durable writes.
    background_syncs_paused: AtomicBool,
    /// Shares fdatasyncs among writers waiting for durability.
    group: GroupCommit,
    poisoned: AtomicBool,
    poison_reason: Mutex<String>,
    fail_next_sync: AtomicBool,
    /// Flushes of the write buffer that failed for lack of a resource.
    pub flush_failures: AtomicU64,
    /// Test hook: while non-zero, every write of buffered bytes to a data
    /// file fails with this errno.
    flush_errno: AtomicI32,
}

/// The on-disk form of an expiry: 0 = none, and never 0 for a real one.
pub fn disk_expiry(expiry: Option<u64>) -> u64 {
    expiry.map_or(0, |e| e.max(1))
}

/// Seconds as a keydir timestamp.
pub fn tstamp(now_secs: u64) -> u32 {
    u32::try_from(now_secs).unwrap_or(u32::MAX)
}

impl Inner {
    pub fn new(dir: PathBuf, config: BitcaskConfig, state: State, writer: Writer) -> Self {
        Inner {
            dir,
            config,
            state: RwLock::new(state),
            writer: Mutex::new(writer),
            report: OpenReport::default(),
            closed: AtomicBool::new(false),
            merge_lock: Mutex::new(()),
            stop: Stop::default(),
            lock_file: Mutex::new(None),
            membership: OnceLock::new(),
            activity: Activity::default(),
            corrupt_reads: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            last_merge_id: Mutex::new(0),
            unsynced: Mutex::new(VecDeque::new()),
            fsync_lock: Mutex::new(()),
            background_syncs_paused: AtomicBool::new(false),
            group: GroupCommit::default(),
            poisoned: AtomicBool::new(false),
            poison_reason: Mutex::new(String::new()),
            fail_next_sync: AtomicBool::new(false),
            flush_failures: AtomicU64::new(0),
            flush_errno: AtomicI32::new(0),
        }
    }

    pub fn now(&self) -> u64 {
        self.config.clock.now_secs()
    }

    /// Fails once the instance is closed.
    pub fn check_open(&self) -> Result<(), StorageError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StorageError::Closed);
        }
        Ok(())
    }

    fn check_not_poisoned(&self) -> Result<(), StorageError> {
        self.check_open()?;
        if self.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned(self.poison_reason.lock().clone()));
        }
        Ok(())
    }

    /// Refuses a write before anything is appended: once poisoned, or while
    /// the buffer holds more than [`MAX_UNFLUSHED_BYTES`] and a flush fails
    /// (`Exhausted`). With `durable`, the buffer is flushed first whatever
    /// its size, so the write's own wait for durability has only its own
    /// bytes left to flush.
    fn check_writable(&self, w: &mut Writer, durable: bool) -> Result<(), StorageError> {
        self.check_not_poisoned()?;
        if durable || w.active.buffered_len() > MAX_UNFLUSHED_BYTES {
            self.flush(w)?;
        }
        Ok(())
    }

    fn wants_durable(&self, opts: WriteOptions) -> bool {
        opts.sync || self.config.sync == SyncPolicy::OSync
    }

    /// Refuses all further writes, remembering why.
    pub fn poison(&self, err: StorageError) -> StorageError {
        let reason = match err {
            StorageError::Poisoned(reason) => reason,
            other => other.to_string(),
        };
        *self.poison_reason.lock() = reason.clone();
        self.poisoned.store(true, Ordering::Release);
        StorageError::Poisoned(reason)
    }

    /// Makes the next fdatasync fail (fault injection for tests).
    pub fn fail_next_sync(&self) {
        self.fail_next_sync.store(true, Ordering::SeqCst);
    }

    /// One fdatasync of `file`; the caller holds `fsync_lock`. Refused once
    /// poisoned: after a failed fsync a retry may report success for pages
    /// the kernel already dropped.
    fn sync_file(&self, file: &DataFile) -> Result<(), StorageError> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned(self.poison_reason.lock().clone()));
        }
        if self.fail_next_sync.swap(false, Ordering::SeqCst) {
            let e = std::io::Error::other("injected fsync failure");
            return Err(self.poison(StorageError::io(&file.path, e)));
        }
        file.sync_data()
            .map_err(|e| self.poison(StorageError::Poisoned(format!("fdatasync failed: {e}"))))
    }

    /// Makes every later write of buffered bytes to a data file fail with
    /// `errno` until called with `None` (fault injection for tests).
    pub fn fail_flushes(&self, errno: Option<i32>) {
        self.flush_errno.store(errno.unwrap_or(0), Ordering::SeqCst);
    }

    /// Runs `write` (one write of buffered bytes), unless a test injected
    /// a failure.
    fn io_write(&self, write: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        match self.flush_errno.load(Ordering::SeqCst) {
            0 => write(),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    /// Hands the buffer to the kernel. Out of a resource, the buffer stays
    /// (a later flush rewrites it whole) and the instance stays writable;
    /// any other failure poisons.
    fn flush(&self, w: &mut Writer) -> Result<(), StorageError> {
        if w.active.buffered_len() == 0 {
            return Ok(());
        }
        let result = self.io_write(|| w.active.flush());
        result.map_err(|e| self.flush_failed(&w.active.file.path, e))
    }

    fn flush_failed(&self, path: &Path, e: io::Error) -> StorageError {
        match StorageError::io(path, e) {
            exhausted @ StorageError::Exhausted { .. } => {
                self.flush_failures.fetch_add(1, Ordering::Relaxed);
                exhausted
            }
            other => self.poison(other),
        }
    }

    /// Applies a batch; with `opts.sync` (or `OSync`) returns once durable.
    /// A batch with index specs is refused whole (module docs).
    pub fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        limits::check_ops_without_indexes(&batch.ops, "bitcask")?;
        let durable = self.wants_durable(opts);
        let lsn = {
            let mut w = self.writer.lock();
            self.check_writable(&mut w, durable)?;
            for op in batch.ops {
                match op {
                    BatchOp::Put {
                        bucket,
                        key,
                        value,
                        expires_at_secs,
                        ..
                    } => self.put_locked(&mut w, (&bucket, &key, &value), expires_at_secs)?,
                    BatchOp::Delete { bucket, key } => self.delete_locked(&mut w, &bucket, &key)?,
                }
            }
            w.appended
        };
        if durable {
            self.wait_durable(lsn)?;
        }
        Ok(())
    }

    /// One put without building a batch (the hot path).
    pub fn put(
        &self,
        op: (&[u8], &[u8], &[u8]),
        expires_at_secs: Option<u64>,
        opts: WriteOptions,
    ) -> Result<(), StorageError> {
        let durable = self.wants_durable(opts);
        let lsn = {
            let mut w = self.writer.lock();
            self.check_writable(&mut w, durable)?;
            self.put_locked(&mut w, op, expires_at_secs)?;
            w.appended
        };
        if durable {
            self.wait_durable(lsn)?;
        }
        Ok(())
    }

    /// Stores `(bucket, key, value)`. Caller holds the writer lock.
    fn put_locked(
        &self,
        w: &mut Writer,
        (bucket, key, value): (&[u8], &[u8], &[u8]),
        expires_at_secs: Option<u64>,
    ) -> Result<(), StorageError> {
        let now = self.now();
        let expiry = disk_expiry(effective_expiry(
            now,
            expires_at_secs,
            self.config.expiry_secs,
        ));
        let compressed = self
            .config
            .compression
            .then(|| compress_value(value))
            .flatten();
        let (flags, payload) = match &compressed {
            Some(c) => (FLAG_LZ4, c.as_slice()),
            None => (0, value),
        };
        let rec = NewRecord {
            tstamp: tstamp(now),
            expiry,
            flags,
            bucket,
            key,
            value: payload,
        };
        let (file_id, offset, size) = self.append(w, &rec)?;
        let entry = Entry {
            file_id,
            offset,
            size,
            tstamp: tstamp(now),
            expiry: expiry_to_u32(expiry),
        };
        self.state.write().apply_value(bucket, key, entry);
        self.maybe_flush(w)
    }

    fn delete_locked(&self, w: &mut Writer, bucket: &[u8], key: &[u8]) -> Result<(), StorageError> {
        // A key the keydir does not hold has nothing on disk that replay
        // would bring back, so it needs no tombstone.
        if self.state.read().keydir.get(bucket, key).is_none() {
            return Ok(());
        }
        let now = self.now();
        let rec = NewRecord {
            tstamp: tstamp(now),
            expiry: 0,
            flags: FLAG_TOMBSTONE,
            bucket,
            key,
            value: &[],
        };
        let (file_id, _, size) = self.append(w, &rec)?;
        self.state
            .write()
            .apply_tombstone(bucket, key, file_id, size);
        self.maybe_flush(w)
    }

    /// Writes a bucket-drop record and forgets every key of `bucket`.
    pub fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        limits::check_op(&BatchOp::Delete {
            bucket: bucket.to_vec(),
            key: Vec::new(),
        })?;
        let lsn = {
            let mut w = self.writer.lock();
            self.check_writable(&mut w, true)?;
            let size = 29 + bucket.len() as u64 + 8;
            self.roll_if_full(&mut w, size)?;
            let position = (w.active.id(), offset_u32(w.active.len())?);
            let value = encode_drop_position(position.0, position.1);
            let rec = NewRecord {
                tstamp: tstamp(self.now()),
                expiry: 0,
                flags: FLAG_DROP,
                bucket,
                key: &[],
                value: &value,
            };
            let (file_id, _, size) = self.append(&mut w, &rec)?;
            let mut st = self.state.write();
            st.apply_drop_record(file_id, size);
            st.drop_before(bucket, position);
            drop(st);
            self.maybe_flush(&mut w)?;
            w.appended
        };
        self.wait_durable(lsn)
    }

    /// Encodes `rec`, rolling over first if it does not fit, and appends it.
    /// Returns `(file_id, offset, size)`.
    fn append(&self, w: &mut Writer, rec: &NewRecord<'_>) -> Result<(u32, u32, u32), StorageError> {
        let mut scratch = std::mem::take(&mut w.scratch);
        scratch.clear();
        let encoded = encode_record(&mut scratch, rec).and_then(|n| u32::try_from(n).ok());
        let Some(size) = encoded else {
            w.scratch = scratch;
            return Err(StorageError::TooLarge {
                what: "record",
                size: usize::MAX,
                max: u32::MAX as usize,
            });
        };
        let rolled = self.roll_if_full(w, size as u64);
        let offset = rolled.and_then(|()| offset_u32(w.active.len()));
        let offset = match offset {
            Ok(o) => o,
            Err(e) => {
                w.scratch = scratch;
                return Err(e);
            }
        };
        w.active.append(&scratch);
        w.appended += size as u64;
        w.scratch = scratch;
        Ok((w.active.id(), offset, size))
    }

    /// The flush after a record was applied: out of a resource, the record
    /// stays buffered (readable, flushed by a later flush) and the write
    /// succeeds; the failure is counted in `flush_failures`.
    fn maybe_flush(&self, w: &mut Writer) -> Result<(), StorageError> {
        if !w.active.wants_flush() {
            return Ok(());
        }
        match self.flush(w) {
            Err(StorageError::Exhausted { .. }) => Ok(()),
            other => other,
        }
    }

    fn roll_if_full(&self, w: &mut Writer, size: u64) -> Result<(), StorageError> {
        if !w.active.is_empty() && w.active.len() + size > self.config.max_file_size_bytes {
            self.rollover(w)?;
        }
        Ok(())
    }

    /// Closes the active file (flushed; synced later, see the module doc)
    /// and starts the next one.
    pub fn rollover(&self, w: &mut Writer) -> Result<(), StorageError> {
        self.flush(w)?;
        let old_id = w.active.id();
        let new_id = (old_id / ID_STRIDE + 1)
            .checked_mul(ID_STRIDE)
            .ok_or_else(|| StorageError::Config("data file ids exhausted".into()))?;
        let active = self.create_active(new_id)?;
        let info = FileInfo::new(active.file.clone());
        self.state.write().files.insert(new_id, info);
        let old = std::mem::replace(&mut w.active, active);
        // Queued before the new file takes a record, under the writer lock:
        // a leader that reads the LSN after this point also sees the file.
        self.unsynced.lock().push_back(old.file.clone());
        self.queue_hint(old_id);
        Ok(())
    }

    /// Creates data file `id` with its header written. On failure nothing
    /// is left behind, so a later rollover can create the same file; the
    /// instance stays writable.
    fn create_active(&self, id: u32) -> Result<ActiveFile, StorageError> {
        let path = data_path(&self.dir, id);
        let mut active = ActiveFile::create(path.clone(), id, self.config.max_file_size_bytes)?;
        if let Err(e) = self.io_write(|| active.flush()) {
            drop(active);
            let _ = std::fs::remove_file(&path);
            return Err(self.flush_failed(&path, e));
        }
        Ok(active)
    }

    /// Syncs the files rollover closed that are still unsynced, then the
    /// directory (which holds the names of the files created after them).
    pub fn sync_closed(&self) -> Result<(), StorageError> {
        let _one_at_a_time = self.fsync_lock.lock();
        self.sync_closed_locked()
    }

    fn sync_closed_locked(&self) -> Result<(), StorageError> {
        let files: Vec<Arc<DataFile>> = self.unsynced.lock().iter().cloned().collect();
        if files.is_empty() {
            return Ok(());
        }
        for file in &files {
            self.syncs.fetch_add(1, Ordering::Relaxed);
            self.sync_file(file)?;
        }
        sync_dir(&self.dir).map_err(|e| self.poison(e))?;
        // Only this function removes entries, under `fsync_lock`, and
        // rollover only appends: the first `files.len()` are the ones synced.
        self.unsynced.lock().drain(..files.len());
        Ok(())
    }

    /// The background share of [`Inner::sync_closed`] (the hint thread's).
    pub fn sync_closed_in_background(&self) -> Result<(), StorageError> {
        if self.background_syncs_paused.load(Ordering::Acquire) {
            return Ok(());
        }
        self.sync_closed()
    }

    /// Syncs a closed data file (before its hint file is written).
    pub fn sync_data_file(&self, file: &DataFile) -> Result<(), StorageError> {
        let _one_at_a_time = self.fsync_lock.lock();
        self.sync_file(file)
    }

    /// Test hook: stops (or resumes) the hint thread's syncs of closed files.
    pub fn pause_background_syncs(&self, paused: bool) {
        self.background_syncs_paused
            .store(paused, Ordering::Release);
    }

    /// Ids of closed files whose fdatasync has not succeeded yet.
    pub fn unsynced_file_ids(&self) -> Vec<u32> {
        self.unsynced.lock().iter().map(|f| f.id).collect()
    }

    /// Asks the background service to write the hint file of closed file
    /// `id` (after syncing it), unless the instance is closing.
    pub fn queue_hint(&self, id: u32) {
        if let Some(m) = self.membership.get().filter(|_| !self.stop.requested()) {
            m.queue_hint(id);
        }
    }

    /// Makes every byte appended so far durable.
    pub fn sync_all(&self) -> Result<(), StorageError> {
        self.check_open()?;
        let lsn = self.writer.lock().appended;
        self.wait_durable(lsn)
    }

    /// Returns once bytes up to `lsn` are durable, sharing fsyncs (group
    /// commit: one round syncs for every writer waiting when it starts).
    pub fn wait_durable(&self, lsn: u64) -> Result<(), StorageError> {
        self.group.wait(lsn, || {
            self.check_not_poisoned()?;
            self.sync_active()
        })
    }

    /// Flushes the buffer and syncs the closed files still unsynced, then
    /// the active file: makes every byte appended before the call durable.
    fn sync_active(&self) -> Result<(), StorageError> {
        let file = {
            let mut w = self.writer.lock();
            self.flush(&mut w)?;
            w.active.file.clone()
        };
        let _one_at_a_time = self.fsync_lock.lock();
        // Every file closed before the flush is in `unsynced` now (or
        // already synced); `file` may have been closed since, which only
        // syncs it twice.
        self.sync_closed_locked()?;
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.sync_file(&file)
    }
}

/// An offset as a keydir `u32`.
fn offset_u32(offset: u64) -> Result<u32, StorageError> {
    u32::try_from(offset).map_err(|_| StorageError::Config("offset beyond 4 GiB".into()))
}
