//! Data files on disk: names, positioned reads, and the active file's
//! userspace write buffer.
//!
//! File ids order the files for replay. Files written by the writer get ids
//! that are multiples of [`ID_STRIDE`]; a merge writes its outputs into the
//! gap just below the active file, so they replay after every file that
//! existed when the merge started and before every file written since.
//!
//! Invariants: bytes below [`DataFile::flushed_len`] are in the kernel and
//! readable with `pread`; bytes from there to [`ActiveFile::len`] are only
//! in the active file's buffer. A data file never changes below its flushed
//! length.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use eddy_storage::StorageError;

use crate::format::{FILE_HEADER_BYTES, KIND_DATA, file_header};

/// Distance between the ids of consecutive writer files.
pub const ID_STRIDE: u32 = 4096;
/// Flush the write buffer once it holds this many bytes.
const FLUSH_THRESHOLD_BYTES: usize = 256 * 1024;

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

/// A data file open for positioned reads.
#[derive(Debug)]
pub struct DataFile {
    pub id: u32,
    pub path: PathBuf,
    file: File,
    flushed_len: AtomicU64,
}

impl DataFile {
    /// Opens an existing data file read-only.
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
        })
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
    /// Creates a new file `path` (which must not exist) for data file `id`.
    pub fn create(path: PathBuf, id: u32) -> Result<ActiveFile, StorageError> {
        let write_handle = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| StorageError::io(&path, e))?;
        let read = write_handle
            .try_clone()
            .map_err(|e| StorageError::io(&path, e))?;
        let file = Arc::new(DataFile {
            id,
            path,
            file: read,
            flushed_len: AtomicU64::new(0),
        });
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

    /// True once the buffer is worth a write syscall.
    pub fn wants_flush(&self) -> bool {
        self.buf.len() >= FLUSH_THRESHOLD_BYTES
    }

    /// Hands the buffered bytes to the kernel.
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
