//! The directory lock: one process (and one instance) per data directory.
//!
//! An exclusive, non-blocking `flock` on `<dir>/LOCK`, held for as long as
//! the returned file is open. flock locks belong to the open file, so a
//! second open of the same directory fails even within one process.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
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
    // SAFETY: flock only reads the descriptor, which `file` keeps open.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(file);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Err(StorageError::Locked(dir.to_path_buf()));
    }
    Err(StorageError::io(&path, err))
}
