//! Data files on disk: names, reads through a memory map (or `pread`),
//! and the active file's userspace write buffer.
//!
//! File ids order the files for replay. Files written by the writer get ids
//! that are multiples of [`ID_STRIDE`]; a merge writes its outputs into the
//! gap just below the active file, so they replay after every file that
//! existed when the merge started and before every file written since.
//!
//! Invariants: bytes below [`DataFile::flushed_len`] are in the kernel and
//! readable with `pread` and through the file's map; bytes from there to
//! [`ActiveFile::len`] are only in the active file's buffer. A data file
//! never changes below its flushed length.
//!
//! Maps: a file is mapped read-only and shared once its length is final
//! for reading — a recovered file after open's replay (and after its torn
//! tail, if any, was cut), the active file and merge outputs at creation,
//! with the most bytes they may grow to (`max_file_size_bytes`) reserved,
//! so that appended bytes become readable through the same map as they are
//! flushed. The map lives as long as the [`DataFile`], which readers hold
//! by `Arc`: a merge that unlinks the file leaves the pages of a reader's
//! map valid (Linux frees them with the last map). A mapped file is never
//! truncated ([`DataFile::truncate`] refuses), and a read through the map
//! is served only below `flushed_len`, never from the part of the map past
//! the end of the file (touching that raises SIGBUS). Where a map cannot
//! be made, or a record lies past the reserved length, reads fall back to
//! `pread`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use eddy_storage::StorageError;
use memmap2::{Advice, Mmap, MmapOptions};

use crate::format::{FILE_HEADER_BYTES, KIND_DATA, file_header};

/// Distance between the ids of consecutive writer files.
pub const ID_STRIDE: u32 = 4096;
/// Flush the write buffer once it holds this many bytes. Small enough that
/// the put which flushes pays tens of microseconds, not hundreds (at 256 KiB
/// that put was a visible part of the node's p99), large enough that the
/// syscall is a small share of the copy.
const FLUSH_THRESHOLD_BYTES: usize = 32 * 1024;
/// The most a write buffer may hold that could not be flushed (disk full)
/// before writes are refused: bounds the memory and the records a crash
/// could lose while the disk is full.
pub const MAX_UNFLUSHED_BYTES: usize = 4 * FLUSH_THRESHOLD_BYTES;

/// What a file in the data directory is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Data(u32),
    Hint(u32),
    /// Unfinished output of a merge or hint writer; deleted at open.
    Temp,
    Lock,
}

/// Path of data file `id`.
pub fn data_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("{id:010}.bitcask.data"))
}

/// Path of the hint file of data file `id`.
pub fn hint_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("{id:010}.bitcask.hint"))
}

/// Path a file is written under before it is renamed into place.
pub fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Classifies a directory entry by name; `None` for files that are not ours.
pub fn classify(name: &str) -> Option<FileKind> {
    if name == "LOCK" {
        return Some(FileKind::Lock);
    }
    if name.ends_with(".tmp") && name.contains(".bitcask.") {
        return Some(FileKind::Temp);
    }
    let (id, rest) = name.split_once('.')?;
    let id: u32 = id.parse().ok().filter(|_| id.len() == 10)?;
    match rest {
        "bitcask.data" => Some(FileKind::Data(id)),
        "bitcask.hint" => Some(FileKind::Hint(id)),
        _ => None,
    }
}

/// Makes the directory's entries (new, renamed, deleted files) durable.
pub fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

/// A data file open for reads.
#[derive(Debug)]
pub struct DataFile {
    pub id: u32,
    pub path: PathBuf,
    file: File,
    flushed_len: AtomicU64,
    map: OnceLock<Mmap>,
}

impl DataFile {
    /// Opens an existing data file read-only, not mapped yet (see
    /// [`DataFile::map`]).
    pub fn open(dir: &Path, id: u32) -> Result<DataFile, StorageError> {
        let path = data_path(dir, id);
        let file = File::open(&path).map_err(|e| StorageError::io(&path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StorageError::io(&path, e))?
            .len();
        Ok(DataFile {
            id,
            path,
            file,
            flushed_len: AtomicU64::new(len),
            map: OnceLock::new(),
        })
    }

    /// Maps the file's first `len_bytes` bytes (which may reach past its
    /// current end) for reads. Without a map, reads use `pread`: a failure
    /// here costs speed, not correctness, so it is not an error.
    #[allow(
        unsafe_code,
        reason = "maps the data file to read records without a copy"
    )]
    pub fn map(&self, len_bytes: u64) {
        let Ok(len) = usize::try_from(len_bytes) else {
            return;
        };
        if len == 0 || self.map.get().is_some() {
            return;
        }
        // SAFETY: the map is read-only and only read below `flushed_len`,
        // bytes that exist in the file and never change (module doc); the
        // file is never truncated while mapped (`truncate` refuses).
        // Another process truncating or rewriting our files could still
        // fault a reader (SIGBUS): docs/design/002-bitcask.md.
        let Ok(map) = (unsafe { MmapOptions::new().len(len).map(&self.file) }) else {
            return;
        };
        // Gets are random: fault in only the page a record is on, not a
        // read-ahead window (when the page is not cached).
        let _ = map.advise(Advice::Random);
        let _ = self.map.set(map);
    }

    /// True once the file is mapped.
    pub fn is_mapped(&self) -> bool {
        self.map.get().is_some()
    }

    /// The `len` bytes at `offset` through the map, when the file is mapped
    /// and they are flushed and inside the map; `None` means use `pread`
    /// (or the write buffer).
    pub fn mapped(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len as u64)?;
        if end > self.flushed_len() {
            return None;
        }
        let map = self.map.get()?;
        map.get(usize::try_from(offset).ok()?..usize::try_from(end).ok()?)
    }

    /// Cuts the file to `len` bytes (open's torn-tail repair) and syncs it.
    /// Refused for a mapped file, whose readers would fault past the cut.
    pub fn truncate(&self, len: u64) -> Result<(), StorageError> {
        let io = |e| StorageError::io(&self.path, e);
        if self.is_mapped() {
            return Err(io(io::Error::other(
                "refusing to truncate a mapped data file",
            )));
        }
        let f = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(io)?;
        f.set_len(len).map_err(io)?;
        f.sync_all().map_err(io)?;
        self.flushed_len.store(len, Ordering::Release);
        Ok(())
    }

    /// Bytes readable through the file descriptor.
    pub fn flushed_len(&self) -> u64 {
        self.flushed_len.load(Ordering::Acquire)
    }

    /// The file handle, for scans.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Reads `len` bytes at `offset`.
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>, StorageError> {
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| StorageError::io(&self.path, e))?;
        Ok(buf)
    }

    /// Makes the file's data durable.
    pub fn sync_data(&self) -> Result<(), StorageError> {
        self.file
            .sync_data()
            .map_err(|e| StorageError::io(&self.path, e))
    }
}

/// The file being appended to, with its write buffer.
pub struct ActiveFile {
    pub file: Arc<DataFile>,
    write_handle: File,
    buf: Vec<u8>,
    len: u64,
}

impl ActiveFile {
    /// Creates a new file `path` (which must not exist) for data file `id`,
    /// mapped with `map_len_bytes` reserved for its growth.
    pub fn create(path: PathBuf, id: u32, map_len_bytes: u64) -> Result<ActiveFile, StorageError> {
        ActiveFile::create_at(&path, &path, id, map_len_bytes)
    }

    /// Like [`ActiveFile::create`], but written under `path`'s temporary
    /// name ([`temp_path`]) until its writer renames it into place (a
    /// merge's output); the file is known by `path` from the start.
    pub fn create_staged(
        path: PathBuf,
        id: u32,
        map_len_bytes: u64,
    ) -> Result<ActiveFile, StorageError> {
        ActiveFile::create_at(&temp_path(&path), &path, id, map_len_bytes)
    }

    fn create_at(
        at: &Path,
        path: &Path,
        id: u32,
        map_len_bytes: u64,
    ) -> Result<ActiveFile, StorageError> {
        let write_handle = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(at)
            .map_err(|e| StorageError::io(at, e))?;
        let read = match write_handle.try_clone() {
            Ok(read) => read,
            Err(e) => {
                // Out of descriptors: leave nothing a retry would trip on.
                drop(write_handle);
                let _ = std::fs::remove_file(at);
                return Err(StorageError::io(at, e));
            }
        };
        let file = Arc::new(DataFile {
            id,
            path: path.to_path_buf(),
            file: read,
            flushed_len: AtomicU64::new(0),
            map: OnceLock::new(),
        });
        file.map(map_len_bytes);
        let mut active = ActiveFile {
            file,
            write_handle,
            buf: Vec::with_capacity(FLUSH_THRESHOLD_BYTES * 2),
            len: 0,
        };
        active.append(&file_header(KIND_DATA, id));
        Ok(active)
    }

    /// The file's id.
    pub fn id(&self) -> u32 {
        self.file.id
    }

    /// Logical length, buffered bytes included.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the file holds no record yet.
    pub fn is_empty(&self) -> bool {
        self.len <= FILE_HEADER_BYTES as u64
    }

    /// Appends `bytes` to the buffer and returns their offset.
    pub fn append(&mut self, bytes: &[u8]) -> u64 {
        let offset = self.len;
        self.buf.extend_from_slice(bytes);
        self.len += bytes.len() as u64;
        offset
    }

    /// Bytes in the buffer, not yet handed to the kernel.
    pub fn buffered_len(&self) -> usize {
        self.buf.len()
    }

    /// True once the buffer is worth a write syscall.
    pub fn wants_flush(&self) -> bool {
        self.buf.len() >= FLUSH_THRESHOLD_BYTES
    }

    /// Hands the buffered bytes to the kernel. On failure the buffer is
    /// kept whole and a retry rewrites it at the same offset.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let at = self.file.flushed_len();
        self.write_handle.write_all_at(&self.buf, at)?;
        self.file.flushed_len.store(self.len, Ordering::Release);
        self.buf.clear();
        if self.buf.capacity() > FLUSH_THRESHOLD_BYTES * 8 {
            self.buf = Vec::with_capacity(FLUSH_THRESHOLD_BYTES * 2);
        }
        Ok(())
    }

    /// Bytes `[offset, offset + len)` when they are still in the buffer.
    pub fn read_buffered(&self, offset: u64, len: usize) -> Option<Vec<u8>> {
        let start = self.file.flushed_len();
        let from = usize::try_from(offset.checked_sub(start)?).ok()?;
        self.buf.get(from..from + len).map(<[u8]>::to_vec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: u32 = ID_STRIDE;

    fn active(dir: &Path, map_len_bytes: u64) -> ActiveFile {
        ActiveFile::create(data_path(dir, ID), ID, map_len_bytes).expect("create")
    }

    #[test]
    fn the_map_serves_flushed_bytes_and_the_buffer_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = active(dir.path(), 1 << 20);
        let at = a.append(b"just written");
        assert!(a.file.is_mapped());
        assert_eq!(a.file.mapped(at, 12), None, "not flushed yet");
        assert_eq!(
            a.read_buffered(at, 12).as_deref(),
            Some(&b"just written"[..])
        );
        a.flush().unwrap();
        assert_eq!(a.file.mapped(at, 12), Some(&b"just written"[..]));
        assert_eq!(a.read_buffered(at, 12), None);
        let next = a.append(b"more");
        assert_eq!(a.file.mapped(next, 4), None);
        a.flush().unwrap();
        assert_eq!(a.file.mapped(next, 4), Some(&b"more"[..]));
    }

    #[test]
    fn records_past_the_reserved_length_fall_back_to_pread() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = active(dir.path(), 64);
        let at = a.append(&[7u8; 100]);
        a.flush().unwrap();
        assert_eq!(a.file.mapped(at, 100), None);
        assert_eq!(a.file.read_at(at, 100).unwrap(), vec![7u8; 100]);
    }

    #[test]
    fn a_map_outlives_the_unlinked_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = active(dir.path(), 1 << 20);
        let at = a.append(b"still here");
        a.flush().unwrap();
        let reader = a.file.clone();
        drop(a);
        // What a merge does to an input while a reader holds its `Arc`.
        std::fs::remove_file(data_path(dir.path(), ID)).unwrap();
        assert_eq!(reader.mapped(at, 10), Some(&b"still here"[..]));
    }

    #[test]
    fn a_mapped_file_is_never_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = active(dir.path(), 1 << 20);
        a.append(b"record");
        a.flush().unwrap();
        drop(a);
        let closed = DataFile::open(dir.path(), ID).unwrap();
        assert!(!closed.is_mapped());
        closed.truncate(FILE_HEADER_BYTES as u64 + 3).unwrap();
        assert_eq!(closed.flushed_len(), FILE_HEADER_BYTES as u64 + 3);
        closed.map(closed.flushed_len());
        assert!(closed.is_mapped());
        assert!(closed.truncate(FILE_HEADER_BYTES as u64).is_err());
        let len = std::fs::metadata(data_path(dir.path(), ID)).unwrap().len();
        assert_eq!(len, FILE_HEADER_BYTES as u64 + 3);
        let header = closed.mapped(0, FILE_HEADER_BYTES).unwrap();
        assert_eq!(header, &file_header(KIND_DATA, ID)[..]);
    }
}
