//! A mapped segment: a segment file of fixed size, allocated on disk and
//! mapped shared, that appends copy their records into.
//!
//! A record copied into the mapping is in the kernel's page cache at once:
//! a crash of the process cannot lose it, and no `write(2)` is needed. The
//! file's blocks are allocated when it is created, so writing to the
//! mapping never needs space the disk does not have (which would be a
//! SIGBUS). An fdatasync of the file makes what was copied durable.
//!
//! Invariant: records are copied in log order, each whole before the next
//! (the caller holds the log's state lock); the bytes after the last record
//! are zero, which is how a reader finds the end.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use memmap2::{MmapMut, MmapOptions};

use super::{Lsn, segment};

/// A segment being filled (or full, until it is synced and checkpointed).
pub(super) struct Segment {
    pub seq: u64,
    /// The open file, shared so that a sync needs no lock.
    pub file: Arc<File>,
    map: MmapMut,
    /// Bytes in use: the header and the records.
    used: usize,
}

/// A full segment, still to be synced and checkpointed.
pub(super) struct Closed {
    pub segment: Segment,
    /// The log position after its last record.
    pub end: Lsn,
}

impl Segment {
    /// Creates segment `seq` in `dir` with room for `capacity` bytes
    /// (rounded up to whole pages): allocated, its header written and
    /// synced with the directory, then mapped with its pages faulted in.
    pub fn create(dir: &Path, seq: u64, capacity: usize) -> io::Result<Segment> {
        let capacity = capacity.max(segment::HEADER.len()).next_multiple_of(4096);
        let path = segment::path(dir, seq);
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)?;
        allocate(&file, capacity as u64)?;
        file.write_all_at(segment::HEADER, 0)?;
        file.sync_all()?;
        File::open(dir)?.sync_all()?;
        // SAFETY: the file is ours (created just now, under a name no one
        // else writes); it is never truncated while mapped, and its blocks
        // are allocated, so accesses within `capacity` cannot fault.
        let map = unsafe { MmapOptions::new().len(capacity).populate().map_mut(&file)? };
        Ok(Segment {
            seq,
            file: Arc::new(file),
            map,
            used: segment::HEADER.len(),
        })
    }

    /// Bytes left for records.
    pub fn room(&self) -> usize {
        self.map.len() - self.used
    }

    /// Unmaps and deletes a segment that was never written to (a spare
    /// that lost its place). Best effort: a leftover holds no records.
    pub fn discard(self, dir: &Path) {
        let path = segment::path(dir, self.seq);
        drop(self);
        let _ = std::fs::remove_file(path);
    }

    /// Copies `frame` in after the last record. The caller checked the room.
    pub fn put(&mut self, frame: &[u8]) {
        let end = self.used + frame.len();
        self.map[self.used..end].copy_from_slice(frame);
        self.used = end;
    }
}

/// Gives `file` `len` bytes of allocated, zeroed blocks.
#[cfg(target_os = "linux")]
fn allocate(file: &File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(len).map_err(io::Error::other)?;
    // SAFETY: fallocate reads no memory of ours; the descriptor is open.
    match unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Gives `file` `len` bytes of allocated, zeroed blocks (by writing them,
/// where there is no fallocate).
#[cfg(not(target_os = "linux"))]
fn allocate(file: &File, len: u64) -> io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    let mut at = 0;
    while at < len {
        let n = zeros.len().min((len - at) as usize);
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}
