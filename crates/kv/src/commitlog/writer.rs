//! The current segment file and the one move that fills it: taking every
//! appended byte out of the shared buffer and writing it to the segments,
//! starting a new segment at each position appends chose (`State::rolls`).
//!
//! Invariant: bytes are taken from the buffer only while the
//! [`Writer`] is locked, and written before it is unlocked, so they reach
//! the files in log order whichever thread writes them.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Lsn, Shared, segment};

/// The segment being written.
pub(super) struct Writer {
    dir: PathBuf,
    /// Its sequence number.
    pub seq: u64,
    /// The open file (shared so that a sync needs no lock).
    pub file: Arc<File>,
    /// Everything before this position is in the files.
    pub written: Lsn,
    /// The next segment and its sequence number, created ahead so that a
    /// roll is a swap.
    pub next: Option<(u64, File)>,
    /// Segments finished since the syncer last looked: it syncs and
    /// checkpoints them.
    pub closed: Vec<Closed>,
    /// An empty buffer to leave in place of the one taken.
    spare: Vec<u8>,
}

/// A finished segment, still to be synced and checkpointed.
pub(super) struct Closed {
    pub seq: u64,
    pub file: Arc<File>,
    /// The position after its last record.
    pub end: Lsn,
}

impl Writer {
    /// The writer of freshly created segment `seq` in `dir`.
    pub fn new(dir: &Path, seq: u64, file: File) -> Writer {
        Writer {
            dir: dir.to_path_buf(),
            seq,
            file: Arc::new(file),
            written: 0,
            next: None,
            closed: Vec::new(),
            spare: Vec::with_capacity(1 << 20),
        }
    }

    /// Writes `bytes`, which start at `written`, splitting them at `rolls`.
    fn write(&mut self, bytes: &[u8], rolls: &[Lsn], next_seq: &AtomicU64) -> Result<(), String> {
        let mut rest = bytes;
        for &at in rolls {
            let (head, tail) = rest.split_at((at - self.written) as usize);
            self.write_here(head)?;
            self.roll(next_seq)?;
            rest = tail;
        }
        self.write_here(rest)
    }

    fn write_here(&mut self, bytes: &[u8]) -> Result<(), String> {
        (&*self.file)
            .write_all(bytes)
            .map_err(|e| format!("write to segment {}: {e}", self.seq))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Starts the next segment (the one created ahead, or a new one with
    /// the next unused sequence number).
    fn roll(&mut self, next_seq: &AtomicU64) -> Result<(), String> {
        let (seq, file) = match self.next.take() {
            Some(next) => next,
            None => {
                let seq = next_seq.fetch_add(1, Ordering::SeqCst);
                let file = segment::create(&self.dir, seq)
                    .map_err(|e| format!("create segment {seq}: {e}"))?;
                (seq, file)
            }
        };
        let old = std::mem::replace(&mut self.file, Arc::new(file));
        self.closed.push(Closed {
            seq: self.seq,
            file: old,
            end: self.written,
        });
        self.seq = seq;
        Ok(())
    }
}

impl Shared {
    /// Writes everything appended so far to `w`'s segments and returns the
    /// position it is written up to.
    pub(super) fn write_out(&self, w: &mut Writer) -> Result<Lsn, String> {
        let (mut bytes, rolls) = {
            let mut st = self.state.lock();
            if st.buf.is_empty() {
                return Ok(w.written);
            }
            let spare = std::mem::take(&mut w.spare);
            let rolls = match st.rolls.is_empty() {
                true => Vec::new(),
                false => std::mem::take(&mut st.rolls),
            };
            (std::mem::replace(&mut st.buf, spare), rolls)
        };
        self.room.notify_all();
        let outcome = w.write(&bytes, &rolls, &self.next_seq);
        bytes.clear();
        w.spare = bytes;
        outcome.map(|()| w.written)
    }
}
