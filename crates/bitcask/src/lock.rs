//! The directory lock: one process (and one instance) per data directory.
//!
//! An exclusive, non-blocking [`File::try_lock`] on `<dir>/LOCK` (`flock`
//! on Linux), held for as long as the returned file is open. The lock
//! belongs to the open file, so a second open of the same directory fails
//! even within one process.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use eddy_storage::StorageError;

/// Takes the lock of `dir`, or fails with [`StorageError::Locked`].
pub fn lock_dir(dir: &Path) -> Result<File, StorageError> {
    let path = dir.join("LOCK");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StorageError::Locked(dir.to_path_buf())),
        Err(TryLockError::Error(err)) => Err(StorageError::io(&path, err)),
    }
}
