//! Mapping fjall's errors onto [`StorageError`].

use std::path::Path;

use eddy_storage::StorageError;

/// Engine name used in [`StorageError::Engine`].
pub const ENGINE: &str = "lsm";

/// Wraps a fjall error; a poisoned database (an fsync failed earlier)
/// becomes [`StorageError::Poisoned`] so callers can tell it apart.
pub fn engine(error: fjall::Error) -> StorageError {
    match error {
        fjall::Error::Poisoned => {
            StorageError::Poisoned("an earlier fjall journal fsync failed".into())
        }
        other => StorageError::Engine {
            engine: ENGINE,
            source: Box::new(other),
        },
    }
}

/// Like [`engine`], but a held lock names the directory.
pub fn map_open_error(error: fjall::Error, dir: &Path) -> StorageError {
    match error {
        fjall::Error::Locked => StorageError::Locked(dir.to_path_buf()),
        other => engine(other),
    }
}

/// A stored key or value that does not decode.
pub fn corrupt(path: &Path, reason: &'static str) -> StorageError {
    StorageError::Corrupt {
        path: path.to_path_buf(),
        offset: 0,
        reason,
    }
}
