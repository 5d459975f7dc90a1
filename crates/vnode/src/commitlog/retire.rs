//! Deleting checkpointed segments without stalling the log.
//!
//! On a file system mounted with `discard`, unlinking a 64 MiB segment
//! made every `o_sync` writer wait 60–90 ms for the trim (design note
//! 005). So a checkpointed segment is *retired*: renamed out of the log
//! (`retired-<seq>.log`, a name replay never reads) and freed a slice at a
//! time ([`eddy_storage::retire`]).
//!
//! Invariants: a segment is retired only after the checkpoint that covers
//! it (its records are durable in the backends), so a retired file holds
//! nothing replay needs and may be deleted at any moment; leftovers of a
//! crash are deleted at the next start ([`remove_leftovers`]).

use std::io;
use std::path::{Path, PathBuf};

use super::segment;

pub use eddy_storage::retire::{PAUSE, SLICE_BYTES, shrink_away};

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

    fn file_of(dir: &Path, seq: u64, len: u64) {
        std::fs::File::create(segment::path(dir, seq))
            .unwrap()
            .set_len(len)
            .unwrap();
    }

    #[test]
    fn a_retired_segment_leaves_the_log() {
        let dir = tempfile::tempdir().unwrap();
        file_of(dir.path(), 7, 10 * 4096 + 100);
        file_of(dir.path(), 8, 4096);
        let retired = retire(dir.path(), 7).unwrap();
        assert_eq!(
            segment::list(dir.path()).unwrap(),
            vec![8],
            "replay no longer sees it"
        );
        shrink_away(&retired, 4096, std::time::Duration::ZERO, || false).unwrap();
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
        shrink_away(&one, 4096, std::time::Duration::ZERO, || true).unwrap();
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
