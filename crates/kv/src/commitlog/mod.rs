//! The node's commit log: one append-only log in front of every vnode's
//! backend, so that one fdatasync makes the writes of all vnodes durable
//! (group commit across the node, design note 005).
//!
//! A vnode writes its backend without syncing and appends a [`Record`] of
//! that write here, both under its key lock, so records of one key are in
//! the order the backend saw them. A reply that promises durability (`dw`)
//! waits for [`CommitLog::when_durable`]. The syncer thread writes what was
//! appended and fdatasyncs whenever someone waits; when a segment is full it
//! starts the next one, and the checkpointer syncs every backend and then
//! deletes the full segments. At start, [`recover`] replays what is left
//! into the backends (a record is the key's whole stored value, so
//! replaying in order is idempotent).
//!
//! Invariants:
//! - a waiter is answered `Ok` only after an fdatasync that covered its
//!   record; after a failed write or sync the log is poisoned and every
//!   waiter and append fails;
//! - a segment is deleted only after every backend synced, and every record
//!   in it was applied to its backend before it was appended.
//!
//! Files: [`record`] (one record's frame), [`segment`] (segment files),
//! [`syncer`] (the threads), [`recover`] (replay at start).

pub mod record;
pub mod recover;
pub mod segment;
mod syncer;

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

/// Called once with the outcome of the sync that covers a record.
pub type Waiter = Box<dyn FnOnce(Result<(), String>) + Send>;

/// Syncs every backend (the checkpoint); the error names what failed.
pub type SyncAll = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// Sizes and intervals of a commit log.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// A segment this large is closed and checkpointed.
    pub segment_bytes: u64,
    /// Appends wait while this many bytes are not yet written.
    pub pending_bytes_max: usize,
    /// Writes nobody waits for reach the file at least this often.
    pub flush_interval: Duration,
    /// ...and are synced at least this often.
    pub sync_interval: Duration,
    /// Pause between two backends' syncs in a checkpoint (spreads its
    /// writeback so the log's fdatasyncs do not queue behind it).
    pub checkpoint_pace: Duration,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
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
    /// Everything before this position is on stable storage.
    synced: Lsn,
    waiters: Vec<(Lsn, Waiter)>,
    stopping: bool,
    failed: Option<String>,
}

struct Shared {
    state: Mutex<State>,
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
            state: Mutex::new(State {
                buf: Vec::with_capacity(1 << 20),
                appended: 0,
                synced: 0,
                waiters: Vec::new(),
                stopping: false,
                failed: None,
            }),
            work: Condvar::new(),
            room: Condvar::new(),
            fail_next_sync: std::sync::atomic::AtomicBool::new(false),
            opts,
        });
        let threads = syncer::start(shared.clone(), dir, first_seq, file, sync_all)?;
        Ok(CommitLog {
            shared,
            dir: dir.to_path_buf(),
            threads: Mutex::new(threads),
        })
    }

    /// Fails if the log can take no more records (poisoned or stopping).
    /// Vnodes call this before writing their backend.
    pub fn check(&self) -> Result<(), KvError> {
        refusal(&self.shared.state.lock()).map_or(Ok(()), Err)
    }

    /// Appends a record and returns the position after it. Waits while the
    /// syncer is `pending_bytes_max` behind.
    pub fn append(&self, record: &Record<'_>) -> Result<Lsn, KvError> {
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
        let before = st.buf.len();
        record.encode_into(&mut st.buf);
        st.appended += (st.buf.len() - before) as u64;
        if before < syncer::FLUSH_BYTES && st.buf.len() >= syncer::FLUSH_BYTES {
            self.shared.work.notify_one();
        }
        Ok(st.appended)
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

    /// Calls `waiter` once everything before `lsn` is synced (at once if it
    /// already is), or with the error that poisoned the log.
    pub fn when_durable(&self, lsn: Lsn, waiter: Waiter) {
        let mut st = self.shared.state.lock();
        if let Some(e) = &st.failed {
            let e = e.clone();
            drop(st);
            return waiter(Err(e));
        }
        if lsn <= st.synced {
            drop(st);
            return waiter(Ok(()));
        }
        st.waiters.push((lsn, waiter));
        self.shared.work.notify_one();
    }

    /// Writes and syncs everything appended, answers every waiter and stops
    /// the threads. Appends fail afterwards.
    pub fn close(&self) -> Result<(), String> {
        self.shared.state.lock().stopping = true;
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

fn refusal(st: &State) -> Option<KvError> {
    if let Some(e) = &st.failed {
        return Some(KvError::Storage(eddy_storage::StorageError::Poisoned(
            format!("commit log: {e}"),
        )));
    }
    st.stopping.then_some(KvError::ShuttingDown)
}
