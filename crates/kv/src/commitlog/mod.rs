//! The node's commit log: one append-only log in front of every vnode's
//! backend, so that one write (and, with `o_sync`, one fdatasync) makes the
//! writes of all vnodes durable: group commit across the node (design note
//! 005).
//!
//! A vnode writes its backend without syncing and appends a [`Record`] of
//! that write here, both under its key lock, so records of one key are in
//! the order the backend saw them. A reply that promises durability (`dw`)
//! waits for [`CommitLog::when_durable`], which means, by the
//! [`SyncStrategy`]:
//! - `interval` (the default) and `none`: the record was written to the
//!   segment file (`write(2)`, so it survives a crash of the process, not
//!   of the machine). The caller writes what is pending itself
//!   ([`CommitLog::flush`]): no thread hop. `interval` also fdatasyncs the
//!   log every `sync_interval`;
//! - `o_sync`: an fdatasync covered the record. The syncer thread writes
//!   and syncs whenever someone waits, so one fdatasync answers everyone
//!   who gathered while the last one ran.
//!
//! When a segment is full the syncer starts the next (created ahead of
//! time), and the checkpointer syncs every backend and then deletes the
//! full segments. At start, [`recover`] replays what is left into the
//! backends (a record is the key's whole stored value, so replaying in
//! order is idempotent).
//!
//! Invariants:
//! - bytes reach the files in log order: only the holder of the writer
//!   lock takes bytes from the append buffer, and it writes them before
//!   releasing the lock;
//! - a waiter is answered `Ok` only once its record is written (and, with
//!   `o_sync`, synced); after a failed write or sync the log is poisoned and
//!   every waiter and append fails;
//! - a segment is deleted only after every backend synced, and every record
//!   in it was applied to its backend before it was appended.
//!
//! Files: [`record`] (one record's frame), [`segment`] (segment files),
//! [`writer`] (the current segment and writing to it), [`syncer`] (the
//! threads), [`recover`] (replay at start).

pub mod record;
pub mod recover;
pub mod segment;
mod syncer;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

pub use record::{Op, Record};
pub use recover::{Recovered, recover};

use crate::error::KvError;

/// A position in the log: the number of record bytes appended before it.
pub type Lsn = u64;

/// Rounds of writing one [`CommitLog::flush`] does for others before it
/// leaves the rest to the syncer.
const FLUSH_ROUNDS_MAX: usize = 4;

/// How long [`CommitLog::flush`] waits for another thread's write.
const WRITER_SPIN: Duration = Duration::from_micros(30);

/// Where an appended record lies in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The position of its first byte: what a later record refers to.
    pub start: Lsn,
    /// The position after it: what a durable reply waits for.
    pub end: Lsn,
}

/// Called once with the outcome of the sync that covers a record.
pub type Waiter = Box<dyn FnOnce(Result<(), String>) + Send>;

/// Syncs every backend (the checkpoint); the error names what failed.
pub type SyncAll = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What a durable (`dw`) reply waits for; bitcask's `sync_strategy` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncStrategy {
    /// The record's write to the segment file; the OS writes it back, and
    /// the log is synced at segment ends and at shutdown.
    None,
    /// The record's write; the log is also fdatasynced every
    /// `sync_interval`, which bounds what a machine crash can lose.
    Interval,
    /// An fdatasync that covered the record (group commit).
    OSync,
}

/// Sizes and intervals of a commit log.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// What a durable reply waits for.
    pub sync: SyncStrategy,
    /// A segment this large is closed and checkpointed.
    pub segment_bytes: u64,
    /// Appends wait while this many bytes are not yet written.
    pub pending_bytes_max: usize,
    /// Writes nobody waits for reach the file at least this often.
    pub flush_interval: Duration,
    /// The log is synced at least this often (`interval` and `o_sync`).
    pub sync_interval: Duration,
    /// Pause between two backends' syncs in a checkpoint (spreads its
    /// writeback so the log's fdatasyncs do not queue behind it).
    pub checkpoint_pace: Duration,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            sync: SyncStrategy::Interval,
            segment_bytes: 64 << 20,
            pending_bytes_max: 32 << 20,
            flush_interval: Duration::from_millis(100),
            sync_interval: Duration::from_secs(1),
            checkpoint_pace: Duration::from_millis(5),
        }
    }
}

/// State shared by appenders and the syncer.
struct State {
    /// Appended, not yet handed to the syncer.
    buf: Vec<u8>,
    /// The position after the last append.
    appended: Lsn,
    /// Everything before this position is in the segment files.
    written: Lsn,
    /// Everything before this position is on stable storage.
    synced: Lsn,
    /// Where the segment that appends go to begins. Appends decide the
    /// segments: a record that would start past `segment_bytes` starts the
    /// next one, so every record's segment is known when it is encoded.
    segment_start: Lsn,
    /// Segment starts the writer has not reached yet, in order.
    rolls: Vec<Lsn>,
    waiters: Vec<(Lsn, Waiter)>,
    stopping: bool,
    failed: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    /// The current segment; held while bytes move from `buf` to it.
    writer: Mutex<writer::Writer>,
    /// The next unused segment sequence number.
    next_seq: std::sync::atomic::AtomicU64,
    /// Set once the log is poisoned or stopping, so that [`CommitLog::check`]
    /// needs no lock while all is well.
    refusing: std::sync::atomic::AtomicBool,
    /// `State::durable` as of the last progress, readable without the lock.
    durable: std::sync::atomic::AtomicU64,
    /// Fault injection: the next fdatasync fails (tests of the poisoned log).
    fail_next_sync: std::sync::atomic::AtomicBool,
    /// Wakes the syncer.
    work: Condvar,
    /// Wakes appenders waiting for room.
    room: Condvar,
    opts: LogOptions,
}

/// The running commit log of a node.
pub struct CommitLog {
    shared: Arc<Shared>,
    dir: PathBuf,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl CommitLog {
    /// Starts a log in `dir` whose first segment is `first_seq` (one past
    /// the last segment [`recover`] saw). `sync_all` is the checkpoint.
    pub fn open(
        dir: &Path,
        first_seq: u64,
        opts: LogOptions,
        sync_all: SyncAll,
    ) -> std::io::Result<CommitLog> {
        std::fs::create_dir_all(dir)?;
        let file = segment::create(dir, first_seq)?;
        let shared = Arc::new(Shared {
            writer: Mutex::new(writer::Writer::new(dir, first_seq, file)),
            next_seq: std::sync::atomic::AtomicU64::new(first_seq + 1),
            refusing: std::sync::atomic::AtomicBool::new(false),
            durable: std::sync::atomic::AtomicU64::new(0),
            state: Mutex::new(State {
                buf: Vec::with_capacity(1 << 20),
                appended: 0,
                written: 0,
                synced: 0,
                segment_start: 0,
                rolls: Vec::new(),
                waiters: Vec::new(),
                stopping: false,
                failed: None,
            }),
            work: Condvar::new(),
            room: Condvar::new(),
            fail_next_sync: std::sync::atomic::AtomicBool::new(false),
            opts,
        });
        let threads = syncer::start(shared.clone(), dir, sync_all)?;
        Ok(CommitLog {
            shared,
            dir: dir.to_path_buf(),
            threads: Mutex::new(threads),
        })
    }

    /// Fails if the log can take no more records (poisoned or stopping).
    /// Vnodes call this before writing their backend.
    pub fn check(&self) -> Result<(), KvError> {
        if !self
            .shared
            .refusing
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Ok(());
        }
        refusal(&self.shared.state.lock()).map_or(Ok(()), Err)
    }

    /// Appends a record and returns where it starts and ends. Waits while
    /// the syncer is `pending_bytes_max` behind.
    ///
    /// A put whose value is the one a put record starting at `same_as`
    /// holds, for the same bucket and key, is logged as a reference to that
    /// record when both land in one segment ([`Op::PutSame`]).
    pub fn append(&self, record: &Record<'_>, same_as: Option<Lsn>) -> Result<Appended, KvError> {
        let mut st = self.shared.state.lock();
        loop {
            if let Some(e) = refusal(&st) {
                return Err(e);
            }
            if st.buf.len() < self.shared.opts.pending_bytes_max {
                break;
            }
            self.shared.work.notify_one();
            self.shared.room.wait(&mut st);
        }
        let start = st.appended;
        let used = start - st.segment_start + segment::HEADER.len() as u64;
        if used >= self.shared.opts.segment_bytes {
            st.rolls.push(start);
            st.segment_start = start;
        }
        let before = st.buf.len();
        match (same_as, &record.op) {
            (Some(at), Op::Put { .. }) if at >= st.segment_start && at < start => Record {
                op: Op::PutSame { back: start - at },
                ..record.clone()
            }
            .encode_into(&mut st.buf),
            _ => record.encode_into(&mut st.buf),
        }
        st.appended += (st.buf.len() - before) as u64;
        if before < syncer::FLUSH_BYTES && st.buf.len() >= syncer::FLUSH_BYTES {
            self.shared.work.notify_one();
        }
        Ok(Appended {
            start,
            end: st.appended,
        })
    }

    /// The writer lock, if it comes free within [`WRITER_SPIN`]: a write
    /// takes microseconds, and waiting that long lets this caller answer
    /// its own request instead of being woken later by the other writer.
    /// A holder that takes longer was preempted; then the bytes are left
    /// to it.
    fn writer_soon(&self) -> Option<parking_lot::MutexGuard<'_, writer::Writer>> {
        if let Some(w) = self.shared.writer.try_lock() {
            return Some(w);
        }
        let start = std::time::Instant::now();
        while start.elapsed() < WRITER_SPIN {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            if let Some(w) = self.shared.writer.try_lock() {
                return Some(w);
            }
        }
        None
    }

    /// Makes the next fdatasync fail, as a failing disk would: the log is
    /// poisoned. For tests of that path; nothing else calls it.
    #[doc(hidden)]
    pub fn inject_sync_failure(&self) {
        self.shared
            .fail_next_sync
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The position after the last append.
    pub fn appended(&self) -> Lsn {
        self.shared.state.lock().appended
    }

    /// Everything before this position is in the segment files.
    pub fn written(&self) -> Lsn {
        self.shared.state.lock().written
    }

    /// Everything before this position is on stable storage.
    pub fn synced(&self) -> Lsn {
        self.shared.state.lock().synced
    }

    /// Everything before this position is durable as the [`SyncStrategy`]
    /// says (written, or synced with `o_sync`). Reads no lock; a reply for
    /// a later position goes through [`CommitLog::when_durable`].
    pub fn durable(&self) -> Lsn {
        self.shared
            .durable
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Calls `waiter` once everything before `lsn` is durable as the
    /// [`SyncStrategy`] says (at once if it already is), or with the error
    /// that poisoned the log. Without `o_sync`, the caller must
    /// [`CommitLog::flush`] afterwards (the syncer would otherwise write it
    /// within `flush_interval`).
    pub fn when_durable(&self, lsn: Lsn, waiter: Waiter) {
        let mut st = self.shared.state.lock();
        if let Some(e) = &st.failed {
            let e = e.clone();
            drop(st);
            return waiter(Err(e));
        }
        if lsn <= self.shared.durable(&st) {
            drop(st);
            return waiter(Ok(()));
        }
        st.waiters.push((lsn, waiter));
        if self.shared.opts.sync == SyncStrategy::OSync {
            self.shared.work.notify_one();
        }
    }

    /// Writes everything appended so far to the segment file, on the
    /// caller's thread, and answers the waiters that covers. Does nothing
    /// with `o_sync`, where the syncer writes as it syncs.
    ///
    /// A caller that finds another writing leaves its bytes to that one:
    /// the writer looks for more pending bytes after it unlocks, so no
    /// thread ever blocks on another's `write(2)` (a writer preempted in
    /// its syscall would otherwise stall every worker behind it).
    pub fn flush(&self) {
        if self.shared.opts.sync == SyncStrategy::OSync {
            return;
        }
        for _ in 0..FLUSH_ROUNDS_MAX {
            let Some(mut w) = self.writer_soon() else {
                return;
            };
            let written = self.shared.write_out(&mut w);
            let rolled = !w.closed.is_empty();
            drop(w);
            if rolled {
                // The syncer syncs and checkpoints the closed segment.
                self.shared.work.notify_one();
            }
            match written {
                Ok(lsn) => self.shared.mark_written(lsn),
                Err(e) => return self.shared.poison(e),
            }
            if self.shared.state.lock().buf.is_empty() {
                return;
            }
        }
        // Still more: others keep appending. The syncer writes the rest
        // rather than keep this caller from its own work.
        self.shared.work.notify_one();
    }

    /// Writes and syncs everything appended, answers every waiter and stops
    /// the threads. Appends fail afterwards.
    pub fn close(&self) -> Result<(), String> {
        self.shared.state.lock().stopping = true;
        self.shared
            .refusing
            .store(true, std::sync::atomic::Ordering::Release);
        self.shared.work.notify_all();
        self.shared.room.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        match &self.shared.state.lock().failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Deletes every segment: call after [`CommitLog::close`] once every
    /// backend closed (synced) cleanly, so the next start replays nothing.
    pub fn remove_segments(&self) -> std::io::Result<()> {
        for seq in segment::list(&self.dir)? {
            std::fs::remove_file(segment::path(&self.dir, seq))?;
        }
        Ok(())
    }
}

impl Drop for CommitLog {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Shared {
    /// How far a waiter counts as durable under this log's strategy.
    fn durable(&self, st: &State) -> Lsn {
        match self.opts.sync {
            SyncStrategy::OSync => st.synced,
            SyncStrategy::Interval | SyncStrategy::None => st.written,
        }
    }

    /// Takes the waiters that are durable now.
    fn ready_waiters(&self, st: &mut State) -> Vec<(Lsn, Waiter)> {
        let durable = self.durable(st);
        if st.waiters.iter().all(|(lsn, _)| *lsn > durable) {
            return Vec::new();
        }
        let (ready, rest) = std::mem::take(&mut st.waiters)
            .into_iter()
            .partition(|(lsn, _)| *lsn <= durable);
        st.waiters = rest;
        ready
    }

    /// Records that everything before `lsn` is in the files and answers
    /// the waiters that makes durable.
    fn mark_written(&self, lsn: Lsn) {
        self.advance(|st| st.written = st.written.max(lsn));
    }

    /// Records that everything before `lsn` is on stable storage and
    /// answers the waiters that makes durable.
    fn mark_synced(&self, lsn: Lsn) {
        self.advance(|st| st.synced = st.synced.max(lsn));
    }

    /// Applies `progress` to the state, then answers (outside the lock) the
    /// waiters it made durable.
    fn advance(&self, progress: impl FnOnce(&mut State)) {
        let ready = {
            let mut st = self.state.lock();
            progress(&mut st);
            self.durable
                .store(self.durable(&st), std::sync::atomic::Ordering::Release);
            self.ready_waiters(&mut st)
        };
        ready.into_iter().for_each(|(_, w)| w(Ok(())));
    }

    /// Poisons the log with `e` (the first error wins) and fails every
    /// waiter.
    fn poison(&self, e: String) {
        let (e, waiters) = {
            let mut st = self.state.lock();
            if st.failed.is_none() {
                tracing::error!("commit log failed, refusing writes: {e}");
            }
            let e = st.failed.get_or_insert(e).clone();
            self.refusing
                .store(true, std::sync::atomic::Ordering::Release);
            (e, std::mem::take(&mut st.waiters))
        };
        self.room.notify_all();
        self.work.notify_all();
        waiters.into_iter().for_each(|(_, w)| w(Err(e.clone())));
    }
}

fn refusal(st: &State) -> Option<KvError> {
    if let Some(e) = &st.failed {
        return Some(KvError::Storage(eddy_storage::StorageError::Poisoned(
            format!("commit log: {e}"),
        )));
    }
    st.stopping.then_some(KvError::ShuttingDown)
}
