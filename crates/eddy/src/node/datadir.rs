//! The node's data directory: an exclusive lock so two nodes never share
//! it, the pid file `eddy stop` reads, the clean-shutdown marker, and each
//! partition's actor id.
//!
//! Invariants: the clean-shutdown marker exists only between a shutdown
//! that closed the log and every backend cleanly and the next start, which
//! removes it (and syncs the removal) before anything is opened; an actor
//! file is replaced atomically (written and synced beside it, then renamed
//! over it, then the directory synced), so it never holds a partial id.

use std::fs::{File, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use eddy_object::Actor;
use eddy_ring::Partition;

/// Why the data directory could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataDirError {
    /// Another process holds the lock.
    #[error(
        "data directory {0} is in use by another eddy node (pid {1}); stop it first or choose another platform_data_dir"
    )]
    InUse(PathBuf, String),
    /// The directory or one of its files could not be read or written.
    #[error("data directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DataDirError + '_ {
    move |source| DataDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A locked data directory; the lock is released when this is dropped.
pub struct DataDir {
    root: PathBuf,
    _lock: File,
}

impl DataDir {
    /// Creates (if needed) and locks `root`, then writes the pid file.
    pub fn lock(root: &Path) -> Result<DataDir, DataDirError> {
        std::fs::create_dir_all(root).map_err(io(root))?;
        let lock_path = root.join("eddy.lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let pid = std::fs::read_to_string(root.join("eddy.pid")).unwrap_or_default();
                return Err(DataDirError::InUse(
                    root.to_path_buf(),
                    pid.trim().to_string(),
                ));
            }
            Err(TryLockError::Error(e)) => return Err(io(&lock_path)(e)),
        }
        let pid_path = root.join("eddy.pid");
        let mut pid = File::create(&pid_path).map_err(io(&pid_path))?;
        write!(pid, "{}", std::process::id()).map_err(io(&pid_path))?;
        Ok(DataDir {
            root: root.to_path_buf(),
            _lock: lock,
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the last run ended with a clean shutdown: takes the marker
    /// [`DataDir::mark_clean`] left, and syncs its removal, so that a crash
    /// of this run is never mistaken for a clean stop.
    pub fn take_clean_marker(&self) -> Result<bool, DataDirError> {
        let path = self.root.join(CLEAN_MARKER);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                sync_dir(&self.root)?;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(DataDirError::Io { path, source }),
        }
    }

    /// Records that this run shut down cleanly: every write it
    /// acknowledged is on stable storage. Call only after the log and
    /// every backend closed without error.
    pub fn mark_clean(&self) -> Result<(), DataDirError> {
        let path = self.root.join(CLEAN_MARKER);
        let mut file = File::create(&path).map_err(io(&path))?;
        writeln!(file, "clean shutdown of pid {}", std::process::id()).map_err(io(&path))?;
        file.sync_all().map_err(io(&path))?;
        sync_dir(&self.root)
    }

    /// Whether any partition has a directory yet (a data directory that
    /// never held partitions has nothing a crash could have lost).
    pub fn holds_partitions(&self, partitions_dir: &Path) -> Result<bool, DataDirError> {
        match std::fs::read_dir(partitions_dir) {
            Ok(mut entries) => Ok(entries.next().is_some()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(DataDirError::Io {
                path: partitions_dir.to_path_buf(),
                source,
            }),
        }
    }

    /// Partition `p`'s actor id: read from its file, or made up and saved.
    /// A partition whose data is wiped gets a fresh actor with it, so its
    /// counters never restart under an old id.
    pub fn actor(&self, partition_dir: &Path, p: Partition) -> Result<Actor, DataDirError> {
        std::fs::create_dir_all(partition_dir).map_err(io(partition_dir))?;
        let path = partition_dir.join("actor");
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(id) = u64::from_str_radix(text.trim(), 16)
        {
            return Ok(Actor(id));
        }
        self.renew_actor(partition_dir, p)
    }

    /// Gives partition `p` a fresh actor id and saves it: after its files
    /// lost records, its old actor's counters may have been used for
    /// writes it no longer holds (Riak's kv679), so they must not be
    /// reused for new ones.
    pub fn renew_actor(&self, partition_dir: &Path, p: Partition) -> Result<Actor, DataDirError> {
        fresh_actor(partition_dir, p)
    }
}

/// Gives partition `p` a fresh actor id in `partition_dir` and saves it
/// (temp file, fsync, rename, directory fsync).
pub fn fresh_actor(partition_dir: &Path, p: Partition) -> Result<Actor, DataDirError> {
    let id = rand::random::<u64>() ^ u64::from(p.0);
    write_id(partition_dir, "actor", id)?;
    Ok(Actor(id))
}

/// Writes `id` as hex to `partition_dir/name`, durably.
pub fn write_id(partition_dir: &Path, name: &str, id: u64) -> Result<(), DataDirError> {
    std::fs::create_dir_all(partition_dir).map_err(io(partition_dir))?;
    let path = partition_dir.join(name);
    let fresh = partition_dir.join(format!("{name}.new"));
    let mut file = File::create(&fresh).map_err(io(&fresh))?;
    write!(file, "{id:016x}").map_err(io(&fresh))?;
    file.sync_all().map_err(io(&fresh))?;
    std::fs::rename(&fresh, &path).map_err(io(&path))?;
    sync_dir(partition_dir)
}

/// Reads a hex id `write_id` wrote; `None` if absent or unreadable.
pub fn read_id(partition_dir: &Path, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(partition_dir.join(name)).ok()?;
    u64::from_str_radix(text.trim(), 16).ok()
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.root.join("eddy.pid"));
    }
}

/// The file whose presence at start says the last run stopped cleanly.
pub const CLEAN_MARKER: &str = "clean-shutdown";

/// Makes the entries of `dir` (files created, renamed or removed in it)
/// durable.
fn sync_dir(dir: &Path) -> Result<(), DataDirError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// True while a process holds `root`'s lock. The lock is released as soon
/// as its holder exits, even before the exit is reaped.
pub fn is_locked(root: &Path) -> bool {
    let Ok(file) = File::options().write(true).open(root.join("eddy.lock")) else {
        return false;
    };
    // Taking it ourselves for a moment tells; closing `file` releases it.
    file.try_lock().is_err()
}

/// The pid of the node holding `root`, from its pid file.
pub fn running_pid(root: &Path) -> Option<i32> {
    std::fs::read_to_string(root.join("eddy.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}
