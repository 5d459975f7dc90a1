//! Destroying a partition's directory crash-atomically: first renamed to a
//! "being destroyed" name and made durable (the parent directory synced),
//! then deleted. A crash at any point leaves either the whole directory
//! under its own name (nothing happened) or a leftover under the other
//! name, which an open finishes deleting and never reads as data.
//!
//! Invariants:
//! - a directory named `<name>.destroying` ([`SUFFIX`]) is only ever a
//!   leftover of a destroy: no backend opens one, and whatever finds one may
//!   delete it at any moment;
//! - once [`begin`] returns, the rename is durable: a restart never finds
//!   the partition's data under its own name again.
//!
//! Large files in a leftover are shrunk away a slice at a time
//! ([`crate::retire`]), so that a destroy does not stall the fdatasyncs of
//! the node's other partitions on a file system that trims on unlink.

use std::io;
use std::path::{Path, PathBuf};

use crate::StorageError;
use crate::retire::{PAUSE, SLICE_BYTES, shrink_away};

/// What a directory being destroyed has appended to its name.
pub const SUFFIX: &str = ".destroying";

/// The name `dir` has while it is being destroyed.
pub fn destroying_path(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(SUFFIX);
    dir.with_file_name(name)
}

/// Takes `dir` out of use durably: deletes an older leftover of the same
/// name, renames `dir` to [`destroying_path`] and syncs the parent
/// directory. Returns the leftover's path, or `None` if `dir` does not
/// exist.
pub fn begin(dir: &Path) -> Result<Option<PathBuf>, StorageError> {
    let leftover = destroying_path(dir);
    finish(&leftover)?;
    match std::fs::rename(dir, &leftover) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StorageError::io(dir, e)),
    }
    sync_parent(dir)?;
    Ok(Some(leftover))
}

/// Deletes a leftover of a destroy (nothing if there is none), then syncs
/// its parent directory.
pub fn finish(leftover: &Path) -> Result<(), StorageError> {
    match std::fs::symlink_metadata(leftover) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StorageError::io(leftover, e)),
    }
    remove_tree(leftover).map_err(|e| StorageError::io(leftover, e))?;
    sync_parent(leftover)
}

/// Destroys `dir` crash-atomically: [`begin`], then [`finish`].
pub fn destroy_dir(dir: &Path) -> Result<(), StorageError> {
    match begin(dir)? {
        Some(leftover) => finish(&leftover),
        None => Ok(()),
    }
}

/// Finishes a destroy of `dir` that a crash interrupted, if there was one:
/// what an open calls before it looks at `dir`. Says whether it found one.
pub fn finish_interrupted(dir: &Path) -> Result<bool, StorageError> {
    let leftover = destroying_path(dir);
    let found = leftover.exists();
    finish(&leftover)?;
    Ok(found)
}

/// Deletes every leftover of a destroy directly in `parent` (a missing
/// `parent` has none): for partitions that will not be opened again, e.g.
/// at a node's start. Returns how many it deleted.
pub fn remove_leftovers(parent: &Path) -> Result<usize, StorageError> {
    let entries = match std::fs::read_dir(parent) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StorageError::io(parent, e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(|e| StorageError::io(parent, e))?;
        let is_leftover = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.ends_with(SUFFIX) && n.len() > SUFFIX.len());
        if is_leftover {
            finish(&entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Deletes `path` and everything under it, shrinking large files away.
fn remove_tree(path: &Path) -> io::Result<()> {
    if !std::fs::symlink_metadata(path)?.is_dir() {
        return shrink_away(path, SLICE_BYTES, PAUSE, || false);
    }
    for entry in std::fs::read_dir(path)? {
        remove_tree(&entry?.path())?;
    }
    std::fs::remove_dir(path)
}

/// Syncs the directory holding `path`, making a rename or an unlink in it
/// durable.
pub(crate) fn sync_parent(path: &Path) -> Result<(), StorageError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(parent, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn partition(root: &Path, name: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("data"), vec![1u8; 3 * 4096]).unwrap();
        std::fs::write(dir.join("sub/more"), b"x").unwrap();
        dir
    }

    #[test]
    fn a_destroy_renames_then_deletes() {
        let root = tempfile::tempdir().unwrap();
        let dir = partition(root.path(), "p1");
        partition(root.path(), "p2");
        destroy_dir(&dir).unwrap();
        assert_eq!(names(root.path()), ["p2"]);
        destroy_dir(&dir).unwrap();
    }

    #[test]
    fn an_interrupted_destroy_is_finished_and_never_read() {
        let root = tempfile::tempdir().unwrap();
        let dir = partition(root.path(), "p1");
        let leftover = begin(&dir).unwrap().unwrap();
        assert_eq!(names(root.path()), ["p1.destroying"]);
        assert!(!dir.exists(), "the data is no longer under its name");
        // The partition is created again before the leftover went.
        partition(root.path(), "p1");
        assert!(finish_interrupted(&dir).unwrap());
        assert!(!leftover.exists());
        assert!(!finish_interrupted(&dir).unwrap());
        assert_eq!(names(root.path()), ["p1"]);
    }

    #[test]
    fn a_second_destroy_replaces_an_older_leftover() {
        let root = tempfile::tempdir().unwrap();
        let dir = partition(root.path(), "p1");
        begin(&dir).unwrap();
        partition(root.path(), "p1");
        let leftover = begin(&dir).unwrap().unwrap();
        assert_eq!(names(root.path()), ["p1.destroying"]);
        finish(&leftover).unwrap();
        assert!(names(root.path()).is_empty());
    }

    #[test]
    fn leftovers_of_partitions_not_opened_again_are_removed() {
        let root = tempfile::tempdir().unwrap();
        for p in ["p1", "p2"] {
            begin(&partition(root.path(), p)).unwrap();
        }
        partition(root.path(), "p3");
        std::fs::write(root.path().join(SUFFIX), b"not a leftover").unwrap();
        assert_eq!(remove_leftovers(root.path()).unwrap(), 2);
        assert_eq!(names(root.path()), [SUFFIX, "p3"]);
        assert_eq!(remove_leftovers(&root.path().join("missing")).unwrap(), 0);
    }
}
