//! The commit log's two threads.
//!
//! The syncer takes everything appended (and every waiter) at once, writes
//! it to the current segment, fdatasyncs if anyone waits on it, and answers
//! the waiters: while it syncs, the next group gathers. A full segment is
//! closed (synced) and the next one created; the closed one goes to the
//! checkpointer, which syncs every backend and then deletes it.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use std::time::Instant;

use super::{Lsn, Shared, SyncAll, Waiter, segment};

/// Appended bytes that wake the syncer even when nobody waits.
pub(super) const FLUSH_BYTES: usize = 1 << 20;

/// Starts the syncer and the checkpointer.
pub(super) fn start(
    shared: Arc<Shared>,
    dir: &Path,
    seq: u64,
    file: File,
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
        seq,
        file,
        segment_bytes: segment::HEADER.len() as u64,
        written: 0,
        synced: 0,
        last_write: Instant::now(),
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
    seq: u64,
    file: File,
    segment_bytes: u64,
    /// Log position written to the file, and synced.
    written: Lsn,
    synced: Lsn,
    last_write: Instant,
    last_sync: Instant,
    closed: Sender<u64>,
}

/// One round's work, taken from the shared state at once.
struct Round {
    bytes: Vec<u8>,
    end: Lsn,
    waiters: Vec<(Lsn, Waiter)>,
    stopping: bool,
}

impl Syncer {
    fn run(mut self) {
        let mut spare = Vec::with_capacity(1 << 20);
        loop {
            let round = self.take(std::mem::take(&mut spare));
            let stopping = round.stopping;
            let outcome = self.write_and_sync(&round);
            spare = self.finish(round, outcome);
            if stopping || self.shared.state.lock().failed.is_some() {
                return;
            }
        }
    }

    /// Waits until there is something to do and takes it, leaving `spare`
    /// as the new append buffer.
    fn take(&self, spare: Vec<u8>) -> Round {
        let opts = &self.shared.opts;
        let mut st = self.shared.state.lock();
        loop {
            let since_write = self.last_write.elapsed();
            let flush_due = !st.buf.is_empty()
                && (st.buf.len() >= FLUSH_BYTES || since_write >= opts.flush_interval);
            let sync_due =
                self.written > self.synced && self.last_sync.elapsed() >= opts.sync_interval;
            if st.stopping || !st.waiters.is_empty() || flush_due || sync_due {
                break;
            }
            self.shared.work.wait_for(&mut st, opts.flush_interval);
        }
        let bytes = std::mem::replace(&mut st.buf, spare);
        self.shared.room.notify_all();
        Round {
            bytes,
            end: st.appended,
            waiters: std::mem::take(&mut st.waiters),
            stopping: st.stopping,
        }
    }

    /// Writes the round's bytes and syncs if a waiter, the stop or the sync
    /// interval asks for it; rolls to a new segment when this one is full.
    fn write_and_sync(&mut self, round: &Round) -> Result<(), String> {
        if !round.bytes.is_empty() {
            self.file
                .write_all(&round.bytes)
                .map_err(|e| format!("write to segment {}: {e}", self.seq))?;
            self.segment_bytes += round.bytes.len() as u64;
            self.written = round.end;
            self.last_write = Instant::now();
        }
        let waited = round.waiters.iter().any(|(lsn, _)| *lsn > self.synced);
        let interval = self.last_sync.elapsed() >= self.shared.opts.sync_interval;
        if self.written > self.synced && (waited || round.stopping || interval) {
            self.sync()?;
        }
        if self.segment_bytes >= self.shared.opts.segment_bytes && !round.stopping {
            self.roll()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), String> {
        if self.shared.fail_next_sync.swap(false, Ordering::SeqCst) {
            return Err(format!(
                "fdatasync of segment {}: injected failure",
                self.seq
            ));
        }
        self.file
            .sync_data()
            .map_err(|e| format!("fdatasync of segment {}: {e}", self.seq))?;
        self.synced = self.written;
        self.last_sync = Instant::now();
        self.shared.state.lock().synced = self.synced;
        Ok(())
    }

    /// Closes the full segment (synced) and starts the next.
    fn roll(&mut self) -> Result<(), String> {
        if self.written > self.synced {
            self.sync()?;
        }
        let next = self.seq + 1;
        self.file =
            segment::create(&self.dir, next).map_err(|e| format!("create segment {next}: {e}"))?;
        let _ = self.closed.send(self.seq);
        self.seq = next;
        self.segment_bytes = segment::HEADER.len() as u64;
        Ok(())
    }

    /// Answers the round's waiters (or poisons the log) and returns the
    /// round's buffer, emptied, for reuse.
    fn finish(&self, round: Round, outcome: Result<(), String>) -> Vec<u8> {
        let Round {
            mut bytes, waiters, ..
        } = round;
        bytes.clear();
        match outcome {
            Ok(()) => {
                // Every waiter was taken with the bytes it waits on, and
                // `write_and_sync` synced if any of them was past `synced`.
                for (lsn, w) in waiters {
                    debug_assert!(lsn <= self.synced, "waiter past the sync");
                    w(Ok(()));
                }
            }
            Err(e) => {
                tracing::error!("commit log failed, refusing writes: {e}");
                let rest = {
                    let mut st = self.shared.state.lock();
                    st.failed = Some(e.clone());
                    std::mem::take(&mut st.waiters)
                };
                self.shared.room.notify_all();
                waiters
                    .into_iter()
                    .chain(rest)
                    .for_each(|(_, w)| w(Err(e.clone())));
            }
        }
        bytes
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
