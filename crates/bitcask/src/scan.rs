//! Sequential scans of data files, tolerant of damage.
//!
//! A scan yields every record whose CRC matches, in file order. Bytes that do
//! not start a valid record are skipped one at a time until a valid record
//! starts again (resynchronisation); the skipped run is reported as
//! [`ScanEvent::Damaged`], or as [`ScanEvent::TornTail`] when no valid record
//! follows it. A corrupt record is therefore never yielded, and damage costs
//! only the records it touches (unless a value happens to contain bytes that
//! form a valid record, a 2^-32 chance per candidate offset).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use eddy_storage::StorageError;

use crate::format::{FILE_HEADER_BYTES, RECORD_HEADER_BYTES, Record, RecordHeader, decode_record};

/// Bytes read per refill.
const READ_CHUNK_BYTES: usize = 1 << 20;

/// One step of a scan.
pub enum ScanEvent<'a> {
    /// A record that passed its CRC, with its raw bytes.
    Record {
        offset: u64,
        raw: &'a [u8],
        record: Record<'a>,
    },
    /// Bytes skipped before a later valid record.
    Damaged { offset: u64, len: u64 },
    /// Bytes at the end of the file that hold no valid record.
    TornTail { offset: u64, len: u64 },
}

/// A window over a file, refilled on demand.
struct Window<'f> {
    file: &'f File,
    file_len: u64,
    buf: Vec<u8>,
    buf_offset: u64,
}

impl Window<'_> {
    /// Bytes `[offset, offset + len)`, which the caller knows lie in the file.
    fn get(&mut self, offset: u64, len: usize) -> io::Result<&[u8]> {
        let covered = offset >= self.buf_offset
            && offset + len as u64 <= self.buf_offset + self.buf.len() as u64;
        if !covered {
            let want = len.max(READ_CHUNK_BYTES) as u64;
            let n = want.min(self.file_len - offset) as usize;
            self.buf.resize(n, 0);
            self.file.read_exact_at(&mut self.buf, offset)?;
            self.buf_offset = offset;
        }
        let from = (offset - self.buf_offset) as usize;
        Ok(&self.buf[from..from + len])
    }

    /// The valid record starting at `offset`, if one does.
    fn record_at(&mut self, offset: u64) -> io::Result<Option<(&[u8], Record<'_>)>> {
        let left = self.file_len - offset;
        if left < RECORD_HEADER_BYTES as u64 {
            return Ok(None);
        }
        let head = self.get(offset, RECORD_HEADER_BYTES)?;
        let Some(header) = RecordHeader::parse(head) else {
            return Ok(None);
        };
        let total = header.total_len();
        if !header.flags_valid() || total > left {
            return Ok(None);
        }
        let raw = self.get(offset, total as usize)?;
        Ok(decode_record(raw).ok().map(|r| (raw, r)))
    }
}

/// Scans `file` (at `path`, of `file_len` bytes) from just after its header, calling
/// `f` for each event in file order.
pub fn scan(
    file: &File,
    path: &Path,
    file_len: u64,
    mut f: impl FnMut(ScanEvent<'_>) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let io = |e| StorageError::io(path, e);
    let mut w = Window {
        file,
        file_len,
        buf: Vec::new(),
        buf_offset: 0,
    };
    let mut offset = FILE_HEADER_BYTES as u64;
    let mut bad_since: Option<u64> = None;
    while offset < file_len {
        let Some((raw, record)) = w.record_at(offset).map_err(io)? else {
            bad_since.get_or_insert(offset);
            offset += 1;
            continue;
        };
        if let Some(start) = bad_since.take() {
            f(ScanEvent::Damaged {
                offset: start,
                len: offset - start,
            })?;
        }
        let len = raw.len() as u64;
        f(ScanEvent::Record {
            offset,
            raw,
            record,
        })?;
        offset += len;
    }
    if let Some(start) = bad_since {
        f(ScanEvent::TornTail {
            offset: start,
            len: file_len - start,
        })?;
    }
    Ok(())
}
