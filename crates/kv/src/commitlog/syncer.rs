//! The commit log's two threads.
//!
//! The syncer writes what callers left unwritten (at least every
//! `flush_interval`), fdatasyncs when the strategy asks (someone waits with
//! `o_sync`, the sync interval passed, a segment ended, the log stops), and
//! creates the next segment ahead of time. A segment that ended is synced
//! and goes to the checkpointer, which syncs every backend and then deletes
//! it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Instant;

use super::{Lsn, Shared, SyncAll, SyncStrategy, segment};

/// Appended bytes that wake the syncer even when nobody waits.
pub(super) const FLUSH_BYTES: usize = 1 << 20;

/// Starts the syncer and the checkpointer.
pub(super) fn start(
    shared: Arc<Shared>,
    dir: &Path,
    sync_all: SyncAll,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let (closed_tx, closed_rx) = channel();
    let checkpointer = std::thread::Builder::new()
        .name("commitlog-checkpoint".into())
        .spawn({
            let dir = dir.to_path_buf();
            move || checkpoint_loop(&dir, closed_rx, sync_all)
        })?;
    let syncer = Syncer {
        shared,
        dir: dir.to_path_buf(),
        synced: 0,
        last_sync: Instant::now(),
        closed: closed_tx,
    };
    let syncer = std::thread::Builder::new()
        .name("commitlog-sync".into())
        .spawn(move || syncer.run())?;
    Ok(vec![syncer, checkpointer])
}

struct Syncer {
    shared: Arc<Shared>,
    dir: PathBuf,
    /// Everything before this position is synced.
    synced: Lsn,
    last_sync: Instant,
    closed: Sender<u64>,
}

impl Syncer {
    fn run(mut self) {
        self.prepare_next();
        loop {
            let stopping = self.wait();
            if let Err(e) = self.round(stopping) {
                return self.shared.poison(e);
            }
            if stopping || self.shared.state.lock().failed.is_some() {
                return;
            }
        }
    }

    /// Waits for a wake-up, something due, or `flush_interval`; returns
    /// whether the log is stopping.
    fn wait(&self) -> bool {
        let opts = &self.shared.opts;
        let mut st = self.shared.state.lock();
        let waited = |st: &super::State| opts.sync == SyncStrategy::OSync && !st.waiters.is_empty();
        let sync_due = st.written > self.synced && self.sync_due();
        if !(st.stopping || waited(&st) || st.buf.len() >= FLUSH_BYTES || sync_due) {
            self.shared.work.wait_for(&mut st, opts.flush_interval);
        }
        st.stopping || st.failed.is_some()
    }

    /// Whether the sync interval asks for a sync.
    fn sync_due(&self) -> bool {
        let opts = &self.shared.opts;
        opts.sync != SyncStrategy::None && self.last_sync.elapsed() >= opts.sync_interval
    }

    /// Writes what is pending, syncs and hands over the segments that
    /// ended, and syncs the current one when the strategy asks.
    fn round(&mut self, stopping: bool) -> Result<(), String> {
        let shared = self.shared.clone();
        let opts = &shared.opts;
        let mut w = shared.writer.lock();
        let written = shared.write_out(&mut w)?;
        let closed = std::mem::take(&mut w.closed);
        let (current, current_seq) = (w.file.clone(), w.seq);
        drop(w);
        shared.mark_written(written);
        for c in &closed {
            self.sync(&c.file, c.seq, c.end)?;
        }
        let waited = opts.sync == SyncStrategy::OSync && self.someone_waits_past(self.synced);
        if written > self.synced && (waited || stopping || self.sync_due()) {
            self.sync(&current, current_seq, written)?;
        }
        // Only now the slow parts, so that no waiter waits for them.
        for c in &closed {
            let _ = self.closed.send(c.seq);
        }
        if !closed.is_empty() && !stopping {
            self.prepare_next();
        }
        Ok(())
    }

    fn someone_waits_past(&self, lsn: Lsn) -> bool {
        let st = self.shared.state.lock();
        st.waiters.iter().any(|(l, _)| *l > lsn)
    }

    /// fdatasyncs `file` (segment `seq`), which holds the log up to `end`.
    fn sync(&mut self, file: &File, seq: u64, end: Lsn) -> Result<(), String> {
        if end <= self.synced {
            return Ok(());
        }
        if self.shared.fail_next_sync.swap(false, Ordering::SeqCst) {
            return Err(format!("fdatasync of segment {seq}: injected failure"));
        }
        file.sync_data()
            .map_err(|e| format!("fdatasync of segment {seq}: {e}"))?;
        self.synced = end;
        self.last_sync = Instant::now();
        self.shared.mark_synced(end);
        Ok(())
    }

    /// Creates a segment ahead for the next roll, so that the roll needs no
    /// file creation under the writer lock. A writer that rolled meanwhile
    /// may have created one itself (sequence numbers come from one counter,
    /// so the two never collide); then this one is dropped unless it still
    /// comes after. A failure is left for the roll to meet and report.
    fn prepare_next(&self) {
        if self.shared.writer.lock().next.is_some() {
            return;
        }
        let seq = self.shared.next_seq.fetch_add(1, Ordering::SeqCst);
        let file = match segment::create(&self.dir, seq) {
            Ok(file) => file,
            Err(e) => return tracing::warn!(seq, "creating the next commit log segment: {e}"),
        };
        let mut w = self.shared.writer.lock();
        if w.next.is_none() && seq > w.seq {
            w.next = Some((seq, file));
            return;
        }
        drop(w);
        drop(file);
        let _ = std::fs::remove_file(segment::path(&self.dir, seq));
    }
}

/// Syncs every backend for each batch of closed segments, then deletes
/// them. A failed checkpoint keeps them (they replay at the next start)
/// and is retried with the next closed segment.
fn checkpoint_loop(dir: &Path, closed: Receiver<u64>, sync_all: SyncAll) {
    let mut pending: Vec<u64> = Vec::new();
    while let Ok(seq) = closed.recv() {
        pending.push(seq);
        pending.extend(closed.try_iter());
        if let Err(e) = sync_all() {
            tracing::error!("commit log checkpoint failed, segments kept: {e}");
            continue;
        }
        for seq in pending.drain(..) {
            if let Err(e) = std::fs::remove_file(segment::path(dir, seq)) {
                tracing::warn!(seq, "removing checkpointed segment: {e}");
            }
        }
    }
}
