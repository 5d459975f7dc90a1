//! The commit log's two threads.
//!
//! The syncer fdatasyncs when the policy asks (someone waits with
//! `o_sync`, the sync interval passed, a segment filled, the log stops),
//! each fdatasync a round of the log's [`eddy_storage::GroupCommit`] (which
//! marks what it covered and answers the waiters), maps the next window of
//! the current segment ahead of appends, and creates the next segment ahead of time (retrying with backoff while
//! creation fails: [`super::spare`]). A segment that filled is
//! synced and goes to the checkpointer, which syncs every backend and then
//! retires it (renamed out of the log and freed a slice at a time:
//! [`super::retire`]).

use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::spare::{RETRY_FIRST, RETRY_MAX};
use super::{Lsn, Shared, SyncAll, SyncPolicy, retire, writer};

/// How often the syncer looks at the clock when nothing wakes it.
const TICK: Duration = Duration::from_millis(100);

/// Starts the syncer and the checkpointer.
pub(super) fn start(
    shared: Arc<Shared>,
    sync_all: SyncAll,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let (closed_tx, closed_rx) = channel();
    let checkpointer = std::thread::Builder::new()
        .name("commitlog-checkpoint".into())
        .spawn({
            let shared = shared.clone();
            move || checkpoint_loop(&shared, closed_rx, sync_all)
        })?;
    let syncer = Syncer {
        shared,
        synced: 0,
        last_sync: Instant::now(),
        closed: closed_tx,
        ahead_failed: None,
        retry: None,
    };
    let syncer = std::thread::Builder::new()
        .name("commitlog-sync".into())
        .spawn(move || syncer.run())?;
    Ok(vec![syncer, checkpointer])
}

struct Syncer {
    shared: Arc<Shared>,
    /// Everything before this position is synced.
    synced: Lsn,
    last_sync: Instant,
    closed: Sender<u64>,
    /// A window that could not be mapped ahead (it is not tried again).
    ahead_failed: Option<(u64, usize)>,
    /// After a failed segment creation: when to try again, and the pause
    /// that led there (doubled at each failure, up to [`RETRY_MAX`]).
    retry: Option<(Instant, Duration)>,
}

/// One round's work, taken from the shared state at once.
struct Round {
    closed: Vec<writer::Closed>,
    current: (Arc<File>, u64),
    /// Filled windows of the current segment, to unmap.
    retired: Vec<memmap2::MmapMut>,
    /// The window to map ahead, if it is not mapped yet.
    ahead: Option<writer::Lookahead>,
    appended: Lsn,
    waited: bool,
    stopping: bool,
    /// There is no spare segment and it is time to create one.
    spare_due: bool,
}

impl Syncer {
    fn run(mut self) {
        self.prepare_next();
        loop {
            let round = self.wait();
            let stopping = round.stopping;
            if let Err(e) = self.round(round) {
                return self.shared.poison(e);
            }
            if stopping || self.shared.state.lock().failed.is_some() {
                return;
            }
        }
    }

    /// Waits for a wake-up, something due, or a tick, and takes the round.
    fn wait(&self) -> Round {
        let opts = &self.shared.opts;
        let mut st = self.shared.state.lock();
        // Waiters register under the state lock: none is missed between
        // this look and the sleep below.
        let waited = || self.shared.group.waited();
        let sync_due = st.appended > self.synced && self.sync_due();
        let ahead_due = self.ahead(&st).is_some();
        let spare_due = st.next.is_none() && self.retry_due();
        let due = sync_due || ahead_due || spare_due;
        if !(st.stopping || waited() || !st.closed.is_empty() || due) {
            let retry_in = self
                .retry
                .map_or(TICK, |(at, _)| at.saturating_duration_since(Instant::now()));
            self.shared
                .work
                .wait_for(&mut st, TICK.min(opts.sync_interval).min(retry_in));
        }
        Round {
            closed: std::mem::take(&mut st.closed),
            current: (st.current.file.clone(), st.current.seq),
            retired: st.current.take_retired(),
            ahead: self.ahead(&st),
            appended: st.appended,
            waited: waited(),
            stopping: st.stopping || st.failed.is_some(),
            spare_due: st.next.is_none() && self.retry_due(),
        }
    }

    /// Whether a failed segment creation may be retried now.
    fn retry_due(&self) -> bool {
        self.retry.is_none_or(|(at, _)| Instant::now() >= at)
    }

    /// The window to map ahead of appends, unless it could not be mapped
    /// before.
    fn ahead(&self, st: &super::State) -> Option<writer::Lookahead> {
        st.current
            .lookahead()
            .filter(|a| Some(a.at()) != self.ahead_failed)
    }

    /// Whether the sync interval asks for a sync.
    fn sync_due(&self) -> bool {
        let opts = &self.shared.opts;
        opts.sync != SyncPolicy::None && self.last_sync.elapsed() >= opts.sync_interval
    }

    /// Syncs the segments that filled, then the current one if the
    /// strategy asks, then hands the filled ones to the checkpointer.
    fn round(&mut self, mut round: Round) -> Result<(), String> {
        // Unmapped first, so that the syncs need not write-protect them.
        drop(std::mem::take(&mut round.retired));
        if let Some(ahead) = round.ahead.take() {
            self.map_ahead(&ahead);
        }
        for c in &mut round.closed {
            c.maps.clear();
        }
        for c in &round.closed {
            self.sync(&c.file, c.seq, c.end)?;
        }
        let (file, seq) = &round.current;
        if round.appended > self.synced && (round.waited || round.stopping || self.sync_due()) {
            self.sync(file, *seq, round.appended)?;
        }
        // Only now the slow parts, so that no waiter waits for them.
        for c in &round.closed {
            let _ = self.closed.send(c.seq);
        }
        if round.spare_due && !round.stopping {
            self.prepare_next();
        }
        Ok(())
    }

    /// Maps the window after the current one and hands it to appends.
    fn map_ahead(&mut self, ahead: &writer::Lookahead) {
        match ahead.map() {
            Ok(map) => {
                let stale = self.shared.state.lock().current.install(ahead, map);
                drop(stale);
            }
            Err(e) => {
                tracing::warn!("mapping the commit log's next window ahead: {e}");
                self.ahead_failed = Some(ahead.at());
            }
        }
    }

    /// fdatasyncs `file` (segment `seq`), which holds the log up to `end`:
    /// one group-commit round, which answers every waiter it covers.
    fn sync(&mut self, file: &File, seq: u64, end: Lsn) -> Result<(), String> {
        if end <= self.synced {
            return Ok(());
        }
        let injected = self.shared.fail_next_sync.swap(false, Ordering::SeqCst);
        let figures = &self.shared.figures;
        self.shared.group.round(end, || {
            if injected {
                return Err(format!("fdatasync of segment {seq}: injected failure"));
            }
            let started = Instant::now();
            let synced = file
                .sync_data()
                .map_err(|e| format!("fdatasync of segment {seq}: {e}"));
            figures.syncs.increment();
            figures.sync_time.record_since(started);
            synced
        })?;
        self.synced = end;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Creates a segment ahead for the next roll, so that the roll needs no
    /// file creation under the state lock. An append that rolled meanwhile
    /// may have created one itself (sequence numbers come from one counter,
    /// so the two never collide); then this one is dropped unless it still
    /// comes after. A failure is remembered (writes are refused once the
    /// current segment runs low) and retried after a pause.
    fn prepare_next(&mut self) {
        if self.shared.state.lock().next.is_some() {
            return;
        }
        let seq = self.shared.next_seq.fetch_add(1, Ordering::SeqCst);
        let capacity = self.shared.opts.segment_bytes as usize;
        let created = self.shared.create_segment(seq, capacity);
        let mut st = self.shared.state.lock();
        match created {
            Ok(segment) => {
                self.retry = None;
                let unused = self.shared.install_spare(&mut st, segment);
                drop(st);
                if let Some(segment) = unused {
                    segment.discard(&self.shared.dir);
                }
            }
            Err(e) => {
                self.shared.create_failed(&mut st, seq, &e);
                let pause = self
                    .retry
                    .map_or(RETRY_FIRST, |(_, p)| (p * 2).min(RETRY_MAX));
                self.retry = Some((Instant::now() + pause, pause));
            }
        }
    }
}

/// Syncs every backend for each batch of closed segments, then retires
/// them. A failed checkpoint keeps them (they replay at the next start)
/// and is retried with the next closed segment. Once the log stops (or
/// fails), what is left of a retired segment is unlinked at once.
fn checkpoint_loop(shared: &Shared, closed: Receiver<u64>, sync_all: SyncAll) {
    let dir = &shared.dir;
    let hurry = || shared.refusing.load(Ordering::Acquire);
    let mut pending: Vec<u64> = Vec::new();
    while let Ok(seq) = closed.recv() {
        pending.push(seq);
        pending.extend(closed.try_iter());
        if let Err(e) = sync_all() {
            tracing::error!("commit log checkpoint failed, segments kept: {e}");
            continue;
        }
        shared.figures.checkpoints.increment();
        for seq in pending.drain(..) {
            let freed = retire::retire(dir, seq).and_then(|path| {
                retire::shrink_away(&path, retire::SLICE_BYTES, retire::PAUSE, hurry)
            });
            if let Err(e) = freed {
                tracing::warn!(seq, "removing checkpointed segment: {e}");
            }
        }
    }
}
