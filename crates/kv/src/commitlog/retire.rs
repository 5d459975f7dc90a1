//! Deleting checkpointed segments without stalling the log.
//!
//! On a file system mounted with `discard` (common on cloud disks, and on
//! this project's machines), unlinking a 64 MiB segment makes the next
//! journal commit trim all of its blocks, and every fdatasync waits for
//! that commit: with `o_sync`, every writer stalled 60–90 ms after each
//! checkpoint (design note 005). So a checkpointed segment is *retired*:
//! renamed out of the log (`retired-<seq>.log`, a name replay never reads)
//! and shrunk from its end a slice at a time, a pause between slices,
//! then unlinked; each commit trims at most about a slice.
//!
//! Invariants: a segment is retired only after the checkpoint that covers
//! it (its records are durable in the backends), so a retired file holds
//! nothing replay needs and may be deleted at any moment; leftovers of a
//! crash are deleted at the next start ([`remove_leftovers`]).

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::segment;

/// Bytes freed at a time.
pub const SLICE_BYTES: u64 = 1 << 20;
/// The pause between two slices.
pub const PAUSE: Duration = Duration::from_millis(2);

/// The name segment `seq` has once retired.
fn path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("retired-{seq:016x}.log"))
}

fn is_retired(name: &str) -> bool {
    name.starts_with("retired-") && name.ends_with(".log")
}

/// Takes segment `seq` out of the log; returns its new path.
pub fn retire(dir: &Path, seq: u64) -> io::Result<PathBuf> {
    let to = path(dir, seq);
    std::fs::rename(segment::path(dir, seq), &to)?;
    Ok(to)
}

/// Frees `path` `slice` bytes at a time from its end, pausing `pause`
/// between slices, then unlinks it; once `hurry` says so, unlinks the
/// rest at once (the log is stopping).
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

/// Deletes the retired files a stop or a crash left behind (at start,
/// when nothing waits on the disk).
pub fn remove_leftovers(dir: &Path) -> io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_name().to_str().is_some_and(is_retired) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn file_of(dir: &Path, seq: u64, len: u64) {
        std::fs::File::create(segment::path(dir, seq))
            .unwrap()
            .set_len(len)
            .unwrap();
    }

    #[test]
    fn a_retired_segment_leaves_the_log_and_shrinks_a_slice_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        file_of(dir.path(), 7, 10 * 4096 + 100);
        file_of(dir.path(), 8, 4096);
        let retired = retire(dir.path(), 7).unwrap();
        assert_eq!(
            segment::list(dir.path()).unwrap(),
            vec![8],
            "replay no longer sees it"
        );
        // The length seen at each pause: one slice less each time.
        let seen = Cell::new(Vec::new());
        shrink_away(&retired, 4096, Duration::ZERO, || {
            let mut v = seen.take();
            v.push(std::fs::metadata(&retired).unwrap().len());
            seen.set(v);
            false
        })
        .unwrap();
        let seen = seen.take();
        assert_eq!(seen.first(), Some(&(10 * 4096 + 100)));
        assert!(seen.windows(2).all(|w| w[0] - w[1] == 4096), "{seen:?}");
        assert_eq!(seen.last(), Some(&(4096 + 100)));
        assert!(!retired.exists());
        assert_eq!(segment::list(dir.path()).unwrap(), vec![8]);
    }

    #[test]
    fn a_hurry_unlinks_at_once_and_leftovers_go_at_start() {
        let dir = tempfile::tempdir().unwrap();
        file_of(dir.path(), 1, 64 << 20);
        file_of(dir.path(), 2, 64 << 20);
        file_of(dir.path(), 3, 4096);
        let one = retire(dir.path(), 1).unwrap();
        shrink_away(&one, 4096, Duration::ZERO, || true).unwrap();
        assert!(!one.exists());
        retire(dir.path(), 2).unwrap();
        remove_leftovers(dir.path()).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["commit-0000000000000003.log".to_string()]);
        remove_leftovers(&dir.path().join("missing")).unwrap();
    }
}
