//! Freeing a large file without stalling everyone's fdatasync.
//!
//! On a file system mounted with `discard` (common on cloud disks, and on
//! this project's machines), unlinking a large file makes the next journal
//! commit trim all of its blocks, and every fdatasync on the file system
//! waits for that commit: 60–90 ms for a 64 MiB commit-log segment,
//! measured (design note 005), and more for a 2 GiB bitcask file. A file
//! that is no longer needed is instead shrunk from its end a slice at a
//! time, a pause between slices, and then unlinked, so each commit trims
//! at most about a slice. Callers rename the file out of their namespace
//! first, so that a crash leaves a name their open deletes.
//!
//! Invariant: the caller holds the file's only use; no one maps or reads
//! it while it shrinks (a mapping's reader would fault past the new end).

use std::io;
use std::path::Path;
use std::time::Duration;

/// Bytes freed at a time.
pub const SLICE_BYTES: u64 = 1 << 20;
/// The pause between two slices: up to 500 MB/s freed.
pub const PAUSE: Duration = Duration::from_millis(2);

/// Frees `path` `slice` bytes at a time from its end, pausing `pause`
/// between slices, then unlinks it; once `hurry` says so, unlinks the
/// rest at once (its owner is closing).
pub fn shrink_away(
    path: &Path,
    slice: u64,
    pause: Duration,
    hurry: impl Fn() -> bool,
) -> io::Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut len = file.metadata()?.len();
    while len > slice && !hurry() {
        len -= slice;
        file.set_len(len)?;
        std::thread::sleep(pause);
    }
    drop(file);
    std::fs::remove_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn a_file_shrinks_a_slice_at_a_time_then_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(10 * 4096 + 100)
            .unwrap();
        // The length seen at each check: one slice less each time.
        let seen = RefCell::new(Vec::new());
        shrink_away(&path, 4096, Duration::ZERO, || {
            seen.borrow_mut()
                .push(std::fs::metadata(&path).unwrap().len());
            false
        })
        .unwrap();
        let seen = seen.into_inner();
        assert_eq!(seen.first(), Some(&(10 * 4096 + 100)));
        assert!(seen.windows(2).all(|w| w[0] - w[1] == 4096), "{seen:?}");
        assert_eq!(seen.last(), Some(&(4096 + 100)));
        assert!(!path.exists());
    }

    #[test]
    fn a_hurry_unlinks_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        shrink_away(&path, 4096, Duration::ZERO, || true).unwrap();
        assert!(!path.exists());
        assert!(shrink_away(&path, 4096, Duration::ZERO, || true).is_err());
    }
}
