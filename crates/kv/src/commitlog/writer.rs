//! The current segment file and the one move that fills it: taking every
//! appended byte out of the shared buffer and writing it to the file.
//!
//! Invariant: bytes are taken from the buffer only while the
//! [`Writer`] is locked, and written before it is unlocked, so they reach
//! the files in log order whichever thread writes them.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use super::{Lsn, Shared, segment};

/// The segment being written.
pub(super) struct Writer {
    /// Its sequence number.
    pub seq: u64,
    /// The open file (shared so that a sync needs no lock).
    pub file: Arc<File>,
    /// Its size in bytes, header included.
    pub segment_bytes: u64,
    /// Everything before this position is in the files.
    pub written: Lsn,
    /// The next segment, created ahead so that a roll is a swap.
    pub next: Option<File>,
    /// An empty buffer to leave in place of the one taken.
    spare: Vec<u8>,
}

impl Writer {
    /// The writer of freshly created segment `seq`.
    pub fn new(seq: u64, file: File) -> Writer {
        Writer {
            seq,
            file: Arc::new(file),
            segment_bytes: segment::HEADER.len() as u64,
            written: 0,
            next: None,
            spare: Vec::with_capacity(1 << 20),
        }
    }

    /// Whether the segment reached its size and should be rolled.
    pub fn is_full(&self, segment_bytes_max: u64) -> bool {
        self.segment_bytes >= segment_bytes_max
    }
}

impl Shared {
    /// Writes everything appended so far to `w`'s segment and returns the
    /// position it is written up to.
    pub(super) fn write_out(&self, w: &mut Writer) -> Result<Lsn, String> {
        let (mut bytes, end) = {
            let mut st = self.state.lock();
            if st.buf.is_empty() {
                return Ok(w.written);
            }
            let spare = std::mem::take(&mut w.spare);
            (std::mem::replace(&mut st.buf, spare), st.appended)
        };
        self.room.notify_all();
        let outcome = (&*w.file).write_all(&bytes);
        let len = bytes.len() as u64;
        bytes.clear();
        w.spare = bytes;
        outcome.map_err(|e| format!("write to segment {}: {e}", w.seq))?;
        w.segment_bytes += len;
        w.written = end;
        Ok(end)
    }
}
