//! The node's commit log: one append-only log in front of every vnode's
//! backend, so that the writes of all vnodes become durable together (and,
//! with `o_sync`, one fdatasync covers them all: group commit across the
//! node; design note 005).
//!
//! A vnode writes its backend without syncing and appends a [`Record`] of
//! that write here, both under its key lock, so records of one key are in
//! the order the backend saw them. An append copies the record into the
//! current segment, which is preallocated and mapped shared: once appended,
//! a record is in the kernel's page cache and survives a crash of the
//! process. A reply that promises durability (`dw`) waits, by the
//! [`SyncPolicy`]:
//! - `interval` (the default) and `none`: for nothing more. `interval` also
//!   fdatasyncs the log every `sync_interval`;
//! - `o_sync`: for an fdatasync that covered the record
//!   ([`CommitLog::when_durable`]). The syncer syncs whenever someone
//!   waits, so one fdatasync answers everyone who gathered while the last
//!   one ran (its rounds and waiters are `eddy_storage`'s
//!   [`GroupCommit`], which bitcask and lsm use too).
//!
//! When a record does not fit, the append starts the next segment (created
//! ahead of time by the syncer); the syncer syncs the full one and the
//! checkpointer syncs every backend and then deletes it. At start,
//! [`recover()`] replays what is left into the backends (a record is the
//! key's whole stored value, so replaying in order is idempotent).
//!
//! Each record names the vnode incarnation that wrote it; a vnode that
//! drops its data appends a drop record ([`CommitLog::append_drop`]) first,
//! and replay skips every record of a dropped incarnation, and of any
//! incarnation the caller says is not live ([`recover_live`]).
//!
//! Invariants:
//! - records reach the files in log order, each whole before the next:
//!   they are copied under the state lock;
//! - a waiter is answered `Ok` only once its record is appended (and, with
//!   `o_sync`, synced); after a failed sync (or a failed copy into a
//!   segment, which may leave a torn record) the log is poisoned and every
//!   waiter and append fails;
//! - failing to create a segment poisons nothing: the syncer retries (with
//!   backoff), and while there is no spare segment and the current one has
//!   less than half its room left, [`CommitLog::check`] refuses writes with
//!   [`eddy_storage::StorageError::Exhausted`] before any backend is touched; they resume
//!   by themselves once a segment can be created (design note 008);
//! - a segment is deleted only after every backend synced, and every record
//!   in it was applied to its backend before it was appended.
//!
//! Files: [`record`] (one record's frame), [`segment`] (names and reading),
//! `writer` (the mapped segment appends copy into), `syncer` (the
//! threads), [`mod@recover`] (replay at start), [`figures`] (what
//! `/metrics` counts).

pub mod figures;
pub mod record;
pub mod recover;
mod retire;
pub mod segment;
mod spare;
mod syncer;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use eddy_storage::GroupCommit;
pub use eddy_storage::SyncPolicy;
use parking_lot::{Condvar, Mutex};

pub use figures::LogFigures;
pub use record::{Dropped, Entry, FIRST_INCARNATION, Op, Position, Record, Synced};
pub use recover::{Recovered, recover, recover_live};

use eddy_model::error::KvError;
pub use spare::Refusals;

/// A position in the log: the number of record bytes appended before it.
pub type Lsn = u64;

/// Where an appended record lies in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The position of its first byte: what a later record refers to.
    pub start: Lsn,
    /// The position after it: what a durable reply waits for.
    pub end: Lsn,
}

/// Called once with the outcome of waiting for a record to be durable.
pub type Waiter = eddy_storage::SyncWaiter;

/// Syncs every backend (the checkpoint); the error names what failed.
pub type SyncAll = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// Sizes and intervals of a commit log.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// What a durable reply waits for: with `None`, the record's append (it
    /// is then in the segment file, in the page cache; the OS writes it
    /// back, and the log is synced at segment ends and at shutdown); with
    /// `Interval`, the append, and the log is also fdatasynced every
    /// `sync_interval`, which bounds what a machine crash can lose; with
    /// `OSync`, an fdatasync that covered the record (group commit).
    pub sync: SyncPolicy,
    /// The size of a segment: when the next record does not fit, the
    /// segment is closed and checkpointed. (A record larger than this gets
    /// a segment of its own size.)
    pub segment_bytes: u64,
    /// The log is synced at least this often (`interval` and `o_sync`).
    pub sync_interval: Duration,
    /// Pause between two backends' syncs in a checkpoint (spreads its
    /// writeback so the log's fdatasyncs do not queue behind it).
    pub checkpoint_pace: Duration,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            sync: SyncPolicy::Interval,
            segment_bytes: 64 << 20,
            sync_interval: Duration::from_secs(1),
            checkpoint_pace: Duration::from_millis(5),
        }
    }
}

impl LogOptions {
    /// Whether appends copy into mapped segments (else they `pwrite`): not
    /// under `o_sync`, where every sync would write-protect the pages.
    fn mapped(&self) -> bool {
        self.sync != SyncPolicy::OSync
    }
}

/// State shared by appenders and the syncer.
struct State {
    /// The segment appends copy their records into.
    current: writer::Segment,
    /// The next segment, created ahead by the syncer so that a roll is a
    /// swap.
    next: Option<writer::Segment>,
    /// Segments filled since the syncer last looked: it syncs and
    /// checkpoints them.
    closed: Vec<writer::Closed>,
    /// Where a record is encoded before it is copied in.
    scratch: Vec<u8>,
    /// The position after the last append. A record is in the file (the
    /// page cache) once appended.
    appended: Lsn,
    /// Where the current segment begins in the log.
    segment_start: Lsn,
    stopping: bool,
    failed: Option<String>,
    /// Why the last attempt to create a segment failed, until one is
    /// created: writes are refused while the current segment runs low.
    spare_failed: Option<spare::CreateFailure>,
}

struct Shared {
    state: Mutex<State>,
    dir: PathBuf,
    /// The next unused segment sequence number.
    next_seq: std::sync::atomic::AtomicU64,
    /// Set once the log is poisoned or stopping, so that [`CommitLog::check`]
    /// needs no lock while all is well.
    refusing: std::sync::atomic::AtomicBool,
    /// The position after the last append, readable without the lock: what
    /// is durable under `interval` and `none`.
    durable: std::sync::atomic::AtomicU64,
    /// What is on stable storage, and who waits for it: its rounds are the
    /// syncer's fdatasyncs.
    group: GroupCommit,
    /// Fault injection: the next fdatasync fails (tests of the poisoned log).
    fail_next_sync: std::sync::atomic::AtomicBool,
    /// Writes refused for exhaustion, and the fault injection of segment
    /// creation.
    spare: spare::Spare,
    /// Wakes the syncer.
    work: Condvar,
    opts: LogOptions,
    figures: LogFigures,
}

/// The running commit log of a node.
pub struct CommitLog {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl CommitLog {
    /// Starts a log in `dir` whose first segment is `first_seq` (one past
    /// the last segment [`recover()`] saw). `sync_all` is the checkpoint;
    /// the log counts its work in `figures`.
    pub fn open(
        dir: &Path,
        first_seq: u64,
        opts: LogOptions,
        sync_all: SyncAll,
        figures: LogFigures,
    ) -> std::io::Result<CommitLog> {
        std::fs::create_dir_all(dir)?;
        let current =
            writer::Segment::create(dir, first_seq, opts.segment_bytes as usize, opts.mapped())?;
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            next_seq: std::sync::atomic::AtomicU64::new(first_seq + 1),
            refusing: std::sync::atomic::AtomicBool::new(false),
            durable: std::sync::atomic::AtomicU64::new(0),
            group: GroupCommit::default(),
            state: Mutex::new(State {
                current,
                next: None,
                closed: Vec::new(),
                scratch: Vec::with_capacity(64 << 10),
                appended: 0,
                segment_start: 0,
                stopping: false,
                failed: None,
                spare_failed: None,
            }),
            work: Condvar::new(),
            fail_next_sync: std::sync::atomic::AtomicBool::new(false),
            spare: spare::Spare::default(),
            opts,
            figures,
        });
        let threads = syncer::start(shared.clone(), sync_all)?;
        Ok(CommitLog {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Fails if the log can take no more records (poisoned, stopping, or
    /// out of segments for now). Vnodes call this before writing their
    /// backend.
    pub fn check(&self) -> Result<(), KvError> {
        if !self
            .shared
            .refusing
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Ok(());
        }
        self.shared
            .refusal(&self.shared.state.lock())
            .map_or(Ok(()), Err)
    }

    /// Appends a record (copies it into the current segment, so it is in
    /// the file at once) and returns where it starts and ends.
    ///
    /// A put whose value is the one a put record starting at `same_as`
    /// holds, for the same bucket and key, is logged as a reference to that
    /// record when both land in one segment ([`Op::PutSame`]).
    pub fn append(&self, record: &Record<'_>, same_as: Option<Lsn>) -> Result<Appended, KvError> {
        self.append_entry(&Entry::Record(record.clone()), same_as)
    }

    /// Appends a drop record: replay will apply no record of `partition`'s
    /// `incarnation`, before or after this one. A vnode that drops its data
    /// appends this, waits until it is durable, then destroys its backend
    /// (design note 005); a start finishes destroying any incarnation
    /// [`Recovered::dropped`] names.
    pub fn append_drop(&self, partition: u32, incarnation: u64) -> Result<Appended, KvError> {
        let dropped = Dropped {
            partition,
            incarnation,
        };
        self.append_entry(&Entry::Dropped(dropped), None)
    }

    /// Where the next append will start, or later: every entry appended so
    /// far lies before it.
    pub fn position(&self) -> Position {
        let st = self.shared.state.lock();
        Position {
            seq: st.current.seq,
            offset: st.current.used() as u64,
        }
    }

    /// Appends a synced mark: replay will apply no record of `partition`'s
    /// `incarnation` that lies before `upto`. A vnode that wrote without
    /// records takes [`CommitLog::position`], syncs its backend, then
    /// appends this and waits until it is synced
    /// ([`CommitLog::when_synced`]) before it calls those writes durable.
    pub fn append_synced(
        &self,
        partition: u32,
        incarnation: u64,
        upto: Position,
    ) -> Result<Appended, KvError> {
        let mark = Synced {
            partition,
            incarnation,
            upto,
        };
        self.append_entry(&Entry::Synced(mark), None)
    }

    fn append_entry(&self, entry: &Entry<'_>, same_as: Option<Lsn>) -> Result<Appended, KvError> {
        let mut st = self.shared.state.lock();
        if let Some(e) = self.shared.refusal(&st) {
            return Err(e);
        }
        let start = st.appended;
        let mut frame = std::mem::take(&mut st.scratch);
        let copied = self.shared.copy_in(&mut st, &mut frame, entry, same_as);
        let len = frame.len() as u64;
        st.scratch = frame;
        let moved = match copied {
            Ok(moved) => moved,
            Err(AppendError::Refused(e)) => return Err(e),
            Err(AppendError::Torn(e)) => {
                drop(st);
                self.shared.poison(e.clone());
                return Err(poisoned(&e));
            }
        };
        if moved {
            // The syncer maps the window after this one.
            self.shared.work.notify_one();
        }
        st.appended += len;
        self.shared.figures.appends.increment();
        self.shared.figures.appended_bytes.add(len);
        if self.shared.opts.sync != SyncPolicy::OSync {
            let appended = st.appended;
            self.shared
                .durable
                .store(appended, std::sync::atomic::Ordering::Release);
        }
        Ok(Appended {
            start,
            end: st.appended,
        })
    }

    /// Makes the next fdatasync fail, as a failing disk would: the log is
    /// poisoned. For tests of that path; nothing else calls it.
    #[doc(hidden)]
    pub fn inject_sync_failure(&self) {
        self.shared
            .fail_next_sync
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Makes every segment creation fail with the OS error `errno` until
    /// called with `None`, as running out of descriptors or disk would.
    /// For tests of that path; nothing else calls it.
    #[doc(hidden)]
    pub fn inject_create_failure(&self, errno: Option<i32>) {
        self.shared.spare.inject(errno);
    }

    /// Why the log refuses writes now, if it does: poisoned, or out of a
    /// resource (then the reason names it).
    pub fn refusing(&self) -> Option<String> {
        let st = self.shared.state.lock();
        match (&st.failed, st.stopping) {
            (Some(e), _) => Some(poisoned(e).to_string()),
            (None, true) => None,
            (None, false) => self.shared.exhausted(&st).map(|e| e.to_string()),
        }
    }

    /// What the log counted (and what replay counted before it opened).
    pub fn figures(&self) -> &LogFigures {
        &self.shared.figures
    }

    /// Writes refused because a resource ran out, by resource.
    pub fn refusals(&self) -> Refusals {
        self.shared.spare.refusals()
    }

    /// The position after the last append.
    pub fn appended(&self) -> Lsn {
        self.shared.state.lock().appended
    }

    /// Everything before this position is on stable storage.
    pub fn synced(&self) -> Lsn {
        self.shared.group.synced()
    }

    /// Everything before this position is durable as the [`SyncPolicy`]
    /// says (appended, or synced with `o_sync`). Reads no lock; a reply for
    /// a later position goes through [`CommitLog::when_durable`].
    pub fn durable(&self) -> Lsn {
        match self.shared.opts.sync {
            SyncPolicy::OSync => self.shared.group.synced(),
            SyncPolicy::Interval | SyncPolicy::None => self
                .shared
                .durable
                .load(std::sync::atomic::Ordering::Acquire),
        }
    }

    /// Calls `waiter` once everything before `lsn` is durable as the
    /// [`SyncPolicy`] says (at once if it already is), or with the error
    /// that poisoned the log.
    pub fn when_durable(&self, lsn: Lsn, waiter: Waiter) {
        let st = self.shared.state.lock();
        if self.shared.opts.sync != SyncPolicy::OSync && st.failed.is_none() && lsn <= st.appended {
            drop(st);
            return waiter(Ok(()));
        }
        self.shared.wait_for_sync(st, lsn, waiter);
    }

    /// Calls `waiter` once everything before `lsn` is on stable storage
    /// (fdatasynced), whatever the [`SyncPolicy`]: the syncer syncs at
    /// once for it rather than at its interval (`sync_on_write`, handoff).
    pub fn when_synced(&self, lsn: Lsn, waiter: Waiter) {
        let st = self.shared.state.lock();
        self.shared.wait_for_sync(st, lsn, waiter);
    }

    /// Syncs everything appended, answers every waiter and stops the
    /// threads. Appends fail afterwards.
    pub fn close(&self) -> Result<(), String> {
        self.shared.state.lock().stopping = true;
        self.shared
            .refusing
            .store(true, std::sync::atomic::Ordering::Release);
        self.shared.work.notify_all();
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
        let dir = &self.shared.dir;
        for seq in segment::list(dir)? {
            std::fs::remove_file(segment::path(dir, seq))?;
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
    /// Has `waiter` called once the syncer's fdatasyncs cover `lsn` (at
    /// once, outside the lock, if they do or the log failed). Registered
    /// under the state lock, so the syncer, which looks for waiters under
    /// it, cannot miss the wake-up between looking and sleeping.
    fn wait_for_sync(&self, st: parking_lot::MutexGuard<'_, State>, lsn: Lsn, waiter: Waiter) {
        let answer = self.group.when_synced(lsn, waiter);
        if answer.is_none() {
            self.work.notify_one();
        }
        drop(st);
        if let Some((waiter, result)) = answer {
            waiter(result);
        }
    }

    /// Poisons the log with `e` (the first error wins) and fails every
    /// waiter.
    fn poison(&self, e: String) {
        let e = {
            let mut st = self.state.lock();
            if st.failed.is_none() {
                tracing::error!("commit log failed, refusing writes: {e}");
            }
            let e = st.failed.get_or_insert(e).clone();
            self.refusing
                .store(true, std::sync::atomic::Ordering::Release);
            e
        };
        self.work.notify_all();
        self.group.fail(e);
    }

    /// Encodes `entry` into `frame` and copies it in after the last
    /// append, starting the next segment first if it does not fit; says
    /// whether the copy moved to the next mapped window.
    fn copy_in(
        &self,
        st: &mut State,
        frame: &mut Vec<u8>,
        entry: &Entry<'_>,
        same_as: Option<Lsn>,
    ) -> Result<bool, AppendError> {
        let start = st.appended;
        encode(frame, entry, same_as, st.segment_start, start);
        if frame.len() > st.current.room() {
            self.roll(st, frame.len())?;
            // The entry starts the new segment: no reference reaches back.
            encode(frame, entry, None, st.segment_start, start);
        }
        st.current
            .put(frame)
            .map_err(|e| AppendError::Torn(format!("copying into segment {}: {e}", st.current.seq)))
    }

    /// Closes the current segment and starts the next (the one created
    /// ahead, if it has room for a frame of `frame_bytes`; else a new one).
    /// Slow only when the syncer has not created the next one yet.
    fn roll(&self, st: &mut State, frame_bytes: usize) -> Result<(), AppendError> {
        let need = segment::HEADER.len() + frame_bytes;
        let next = match st.next.take() {
            Some(next) if next.room() >= frame_bytes => next,
            spare => {
                // Too small for this record: numbers must grow, so it goes.
                if let Some(spare) = spare {
                    spare.discard(&self.dir);
                }
                let seq = self
                    .next_seq
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let capacity = need.max(self.opts.segment_bytes as usize);
                match self.create_segment(seq, capacity) {
                    Ok(segment) => segment,
                    Err(e) => {
                        // Nothing was copied: refuse this record, poison
                        // nothing, and let the syncer retry.
                        let refused = self.create_failed(st, seq, &e).error();
                        self.spare.count(&refused);
                        return Err(AppendError::Refused(refused));
                    }
                }
            }
        };
        let full = std::mem::replace(&mut st.current, next);
        self.figures.segments_filled.increment();
        st.closed.push(full.close(st.appended));
        st.segment_start = st.appended;
        self.work.notify_one();
        Ok(())
    }
}

/// Encodes `entry` into `frame` (cleared first): a put as a reference to
/// the put record at `same_as` when that starts in the current segment
/// (which starts at `segment_start`) before `start`, else whole.
fn encode(
    frame: &mut Vec<u8>,
    entry: &Entry<'_>,
    same_as: Option<Lsn>,
    segment_start: Lsn,
    start: Lsn,
) {
    frame.clear();
    let record = match entry {
        Entry::Record(record) => record,
        Entry::Dropped(_) | Entry::Synced(_) => return entry.encode_into(frame),
    };
    match (same_as, &record.op) {
        (Some(at), Op::Put { .. }) if at >= segment_start && at < start => Record {
            op: Op::PutSame { back: start - at },
            ..record.clone()
        }
        .encode_into(frame),
        _ => record.encode_into(frame),
    }
}

/// Why an append failed.
enum AppendError {
    /// Refused before anything was copied; the log is fine.
    Refused(KvError),
    /// The copy failed part-way: the log must take no more records.
    Torn(String),
}

/// The error a write gets from a log that failed with `e`.
fn poisoned(e: &str) -> KvError {
    KvError::Storage(eddy_storage::StorageError::Poisoned(format!(
        "commit log: {e}"
    )))
}
