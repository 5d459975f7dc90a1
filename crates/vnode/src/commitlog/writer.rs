//! A mapped segment: a segment file of fixed size, allocated on disk and
//! mapped shared, that appends copy their records into.
//!
//! A record copied into the mapping is in the kernel's page cache at once:
//! a crash of the process cannot lose it, and no `write(2)` is needed. The
//! file's blocks are allocated when it is created, so writing to the
//! mapping never needs space the disk does not have (which would be a
//! SIGBUS). An fdatasync of the file makes what was copied durable.
//!
//! Only a window of the file ([`WINDOW`] bytes) is mapped at a time. A
//! window that filled is handed to the syncer, which unmaps it before its
//! next fdatasync: writing back a page that is still mapped makes the kernel
//! write-protect it and flush it from every CPU's TLB (an interrupt to the
//! other CPUs for each page), which an unmapped page does not need. The
//! syncer also maps the window after the current one ahead of time, with
//! its pages faulted in writable ([`Lookahead`]), so that an append (which
//! holds the log's state lock) rarely takes a page fault.
//!
//! Under `o_sync` a segment is not mapped: appends `pwrite` their frames.
//! There an fdatasync follows every few appends, and each would
//! write-protect the pages written since the last one (a TLB-flush
//! interrupt each) only for the next append to fault them back in.
//!
//! Invariant: records are copied in log order, each whole before the next
//! (the caller holds the log's state lock); the bytes after the last record
//! are zero, which is how a reader finds the end.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use memmap2::{Advice, MmapMut, MmapOptions};

use super::{Lsn, segment};

/// The bytes of a segment mapped at a time (a multiple of the page size).
pub(super) const WINDOW: usize = 1 << 20;

/// A segment being filled.
pub(super) struct Segment {
    pub seq: u64,
    /// The open file, shared so that a sync needs no lock.
    pub file: Arc<File>,
    /// The mapped window: the file's bytes from `window_at` (none: appends
    /// write with `pwrite`).
    map: Option<MmapMut>,
    window_at: usize,
    /// The file's size.
    capacity: usize,
    /// Bytes in use: the header and the records.
    used: usize,
    /// Windows filled since the syncer last took them.
    retired: Vec<MmapMut>,
    /// The window after `map`, mapped ahead by the syncer.
    ahead: Option<MmapMut>,
}

/// The window after a segment's current one, for the syncer to map ahead.
pub(super) struct Lookahead {
    seq: u64,
    file: Arc<File>,
    at: usize,
    capacity: usize,
}

impl Lookahead {
    /// Which window this is: the segment and the window's offset.
    pub fn at(&self) -> (u64, usize) {
        (self.seq, self.at)
    }

    /// Maps the window and faults its pages in writable (best effort:
    /// where the kernel cannot, appends fault them in as they go).
    pub fn map(&self) -> io::Result<MmapMut> {
        map_window(&self.file, self.at, self.capacity)
    }
}

/// A full segment, still to be synced and checkpointed.
pub(super) struct Closed {
    pub seq: u64,
    pub file: Arc<File>,
    /// Its mapped windows, to be unmapped before the sync.
    pub maps: Vec<MmapMut>,
    /// The log position after its last record.
    pub end: Lsn,
}

impl Segment {
    /// Creates segment `seq` in `dir` with room for `capacity` bytes
    /// (rounded up to whole pages): allocated, its header written and
    /// synced with the directory, and its first window mapped if `mapped`
    /// (else appends write with `pwrite`).
    pub fn create(dir: &Path, seq: u64, capacity: usize, mapped: bool) -> io::Result<Segment> {
        let capacity = capacity.max(segment::HEADER.len()).next_multiple_of(4096);
        let path = segment::path(dir, seq);
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&path)?;
        let map = match prepare(dir, &file, capacity, mapped) {
            Ok(map) => map,
            Err(e) => {
                // Out of disk or descriptors part-way: leave no file
                // behind for recovery to meet (best effort).
                drop(file);
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        Ok(Segment {
            seq,
            file: Arc::new(file),
            map,
            window_at: 0,
            capacity,
            used: segment::HEADER.len(),
            retired: Vec::new(),
            ahead: None,
        })
    }

    /// Bytes left for records.
    /// Bytes in use: the header and the records.
    pub fn used(&self) -> usize {
        self.used
    }

    pub fn room(&self) -> usize {
        self.capacity - self.used
    }

    /// The windows that filled since the last call, for the syncer to
    /// unmap.
    pub fn take_retired(&mut self) -> Vec<MmapMut> {
        std::mem::take(&mut self.retired)
    }

    /// The window the syncer should map ahead: the next one, if the
    /// segment is mapped, has one and it is not mapped yet.
    pub fn lookahead(&self) -> Option<Lookahead> {
        let at = self.window_at + self.map.as_ref()?.len();
        (self.ahead.is_none() && at < self.capacity).then(|| Lookahead {
            seq: self.seq,
            file: self.file.clone(),
            at,
            capacity: self.capacity,
        })
    }

    /// Takes a window the syncer mapped for `ahead`, unless appends moved
    /// past it meanwhile (then it is given back, to be unmapped).
    pub fn install(&mut self, ahead: &Lookahead, map: MmapMut) -> Option<MmapMut> {
        match self.lookahead() {
            Some(now) if now.at() == ahead.at() => {
                self.ahead = Some(map);
                None
            }
            _ => Some(map),
        }
    }

    /// The segment as a full one that ends the log at `end`.
    pub fn close(mut self, end: Lsn) -> Closed {
        self.retired.extend(self.map);
        self.retired.extend(self.ahead);
        Closed {
            seq: self.seq,
            file: self.file,
            maps: self.retired,
            end,
        }
    }

    /// Unmaps and deletes a segment that was never written to (a spare
    /// that lost its place). Best effort: a leftover holds no records.
    pub fn discard(self, dir: &Path) {
        let path = segment::path(dir, self.seq);
        drop(self);
        let _ = std::fs::remove_file(path);
    }

    /// Copies `frame` in after the last record, moving to the next windows
    /// as it goes (the one mapped ahead, else a new mapping), and says
    /// whether it moved; or writes it, if the segment is not mapped. The
    /// caller checked the room. An error (the next window could not be
    /// mapped, the write failed) may leave part of the frame in the file:
    /// the caller must take no more appends (a reader sees a torn last
    /// record).
    pub fn put(&mut self, frame: &[u8]) -> io::Result<bool> {
        let Some(mut map) = self.map.take() else {
            self.file.write_all_at(frame, self.used as u64)?;
            self.used += frame.len();
            return Ok(false);
        };
        let moved = self.copy(&mut map, frame);
        self.map = Some(map);
        moved
    }

    /// [`Segment::put`] into the mapped `map`.
    fn copy(&mut self, map: &mut MmapMut, frame: &[u8]) -> io::Result<bool> {
        let mut rest = frame;
        let mut moved = false;
        while !rest.is_empty() {
            let window_end = self.window_at + map.len();
            if self.used == window_end {
                let next = match self.ahead.take() {
                    Some(ahead) => ahead,
                    None => map_window(&self.file, window_end, self.capacity)?,
                };
                moved = true;
                self.retired.push(std::mem::replace(map, next));
                self.window_at = window_end;
            }
            let at = self.used - self.window_at;
            let n = rest.len().min(map.len() - at);
            map[at..at + n].copy_from_slice(&rest[..n]);
            self.used += n;
            rest = &rest[n..];
        }
        Ok(moved)
    }
}

/// Allocates a new segment file, writes its header, syncs it with `dir`
/// and maps its first window if `mapped`.
fn prepare(dir: &Path, file: &File, capacity: usize, mapped: bool) -> io::Result<Option<MmapMut>> {
    allocate(file, capacity as u64)?;
    file.write_all_at(segment::HEADER, 0)?;
    file.sync_all()?;
    File::open(dir)?.sync_all()?;
    match mapped {
        true => Ok(Some(map_window(file, 0, capacity)?)),
        false => Ok(None),
    }
}

/// Maps the window of `file` (of `capacity` bytes) that starts at `at` (a
/// multiple of [`WINDOW`]) and faults its pages in writable (best effort:
/// where the kernel cannot, appends fault them in as they go).
#[allow(unsafe_code, reason = "maps and preallocates the log's segments")]
fn map_window(file: &File, at: usize, capacity: usize) -> io::Result<MmapMut> {
    let len = WINDOW.min(capacity - at);
    // SAFETY: the file is ours (created by `Segment::create` under a name no
    // one else writes); it is never truncated while mapped, and its blocks
    // are allocated, so accesses within `capacity` cannot fault.
    let map = unsafe {
        MmapOptions::new()
            .offset(at as u64)
            .len(len)
            .map_mut(file)?
    };
    let _ = map.advise(Advice::PopulateWrite);
    Ok(map)
}

/// Gives `file` `len` bytes of allocated, zeroed blocks.
#[cfg(target_os = "linux")]
#[allow(unsafe_code, reason = "maps and preallocates the log's segments")]
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A window mapped ahead is refused once appends moved past it, and
    /// taken (and used) while it is still the next one.
    #[test]
    fn a_stale_window_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = Segment::create(dir.path(), 1, WINDOW * 3, true).unwrap();
        let stale = seg.lookahead().unwrap();
        assert!(
            seg.put(&vec![7; WINDOW]).unwrap(),
            "it moved into the second window"
        );
        let map = stale.map().unwrap();
        assert!(seg.install(&stale, map).is_some(), "appends moved past it");
        let next = seg.lookahead().unwrap();
        assert_eq!(next.at().1, WINDOW * 2);
        assert!(seg.install(&next, next.map().unwrap()).is_none());
        assert!(seg.lookahead().is_none(), "the next window is mapped");
        assert!(seg.put(&vec![9; WINDOW]).unwrap(), "it moved into it");
        drop(seg.close(0));
        let bytes = std::fs::read(segment::path(dir.path(), 1)).unwrap();
        let h = segment::HEADER.len();
        assert!(bytes[h..h + WINDOW].iter().all(|b| *b == 7));
        assert!(bytes[h + WINDOW..h + 2 * WINDOW].iter().all(|b| *b == 9));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Frames of any size, straddling windows or larger than one, reach
        /// the file whole and in order, with zeros after the last; retired
        /// and closed windows can be unmapped in any order without losing
        /// a byte.
        #[test]
        fn frames_cross_windows_intact(
            sizes in proptest::collection::vec(1usize..(WINDOW * 5 / 2), 1..8),
            take_between in any::<bool>(),
            mapped in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut seg = Segment::create(dir.path(), 1, WINDOW * 4, mapped).unwrap();
            let mut expect = segment::HEADER.to_vec();
            let mut unmapped = Vec::new();
            for (i, size) in sizes.into_iter().enumerate() {
                if size > seg.room() {
                    break;
                }
                let frame: Vec<u8> = (0..size).map(|b| (b * 31 + i * 7 + 1) as u8).collect();
                if let Some(ahead) = seg.lookahead().filter(|_| i % 2 == 0) {
                    let map = ahead.map().unwrap();
                    prop_assert!(seg.install(&ahead, map).is_none());
                }
                seg.put(&frame).unwrap();
                expect.extend_from_slice(&frame);
                if take_between {
                    unmapped.extend(seg.take_retired());
                }
                prop_assert_eq!(seg.room(), WINDOW * 4 - expect.len());
            }
            drop(unmapped);
            let closed = seg.close(expect.len() as u64);
            drop(closed.maps);
            let bytes = std::fs::read(segment::path(dir.path(), 1)).unwrap();
            prop_assert_eq!(bytes.len(), WINDOW * 4);
            prop_assert!(bytes[..expect.len()] == expect[..]);
            prop_assert!(bytes[expect.len()..].iter().all(|b| *b == 0));
        }
    }
}
