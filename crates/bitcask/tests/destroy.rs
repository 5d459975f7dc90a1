//! Destroying a partition is crash-atomic: a destroy interrupted after its
//! rename (the step that makes it durable) leaves no data for the next open
//! to find, and that open removes the leftovers; over a multi backend, a
//! crash between destroying one sub-backend and the next never brings the
//! partition back half full.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::multi::MultiBackend;
use eddy_storage::{Backend, StorageError, WriteOptions, destroy};

fn config() -> BitcaskConfig {
    BitcaskConfig {
        merge_check_interval_ms: 0,
        ..BitcaskConfig::default()
    }
}

/// Opens `dir`, writes a synced key and closes it.
fn populated(dir: &Path) {
    let b = Bitcask::open(dir, config()).unwrap();
    b.put(b"b", b"k", b"value", &[], WriteOptions::SYNC)
        .unwrap();
    b.close().unwrap();
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_destroy_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bitcask");
    let b = Bitcask::open(&dir, config()).unwrap();
    b.put(b"b", b"k", b"value", &[], WriteOptions::NO_SYNC)
        .unwrap();
    Box::new(b).destroy().unwrap();
    assert!(entries(root.path()).is_empty());
}

#[test]
fn a_destroy_interrupted_after_its_rename_is_finished_at_open() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bitcask");
    populated(&dir);
    // The crash: the rename made it durable, the delete never ran.
    destroy::begin(&dir).unwrap();
    assert_eq!(entries(root.path()), ["bitcask.destroying"]);

    let b = Bitcask::open(&dir, config()).unwrap();
    assert!(b.is_empty().unwrap(), "the data is never read again");
    assert_eq!(b.get(b"b", b"k").unwrap(), None);
    assert_eq!(entries(root.path()), ["bitcask"], "the leftover is gone");
}

/// A multi backend of two bitcasks under `root`, destroyed crash-atomically
/// through `root/destroy.marker`.
fn multi(root: &Path) -> Result<MultiBackend, StorageError> {
    let open_subs = || {
        let mut subs: BTreeMap<String, Box<dyn Backend>> = BTreeMap::new();
        for name in ["a", "b"] {
            let b = Bitcask::open(&root.join(name), config())?;
            subs.insert(name.to_string(), Box::new(b));
        }
        Ok(subs)
    };
    MultiBackend::open(&marker(root), "a", &open_subs)
}

fn marker(root: &Path) -> PathBuf {
    root.join("destroy.marker")
}

#[test]
fn a_multi_destroy_interrupted_between_sub_backends_comes_back_empty() {
    let root = tempfile::tempdir().unwrap();
    populated(&root.path().join("a"));
    populated(&root.path().join("b"));
    // The crash: the marker was made durable and only `a` was destroyed.
    std::fs::write(marker(root.path()), b"").unwrap();
    let a: Box<dyn Backend> = Box::new(Bitcask::open(&root.path().join("a"), config()).unwrap());
    a.destroy().unwrap();

    let m = multi(root.path()).unwrap();
    assert!(m.is_empty().unwrap(), "b's data went too");
    assert!(!marker(root.path()).exists());
    m.put(b"b", b"k2", b"new life", &[], WriteOptions::SYNC)
        .unwrap();
    m.close().unwrap();
    let m = multi(root.path()).unwrap();
    assert_eq!(
        m.get(b"b", b"k2").unwrap().as_deref(),
        Some(&b"new life"[..])
    );
}

#[test]
fn a_multi_destroy_removes_every_sub_backend_and_its_marker() {
    let root = tempfile::tempdir().unwrap();
    let m = multi(root.path()).unwrap();
    m.put(b"b", b"k", b"v", &[], WriteOptions::SYNC).unwrap();
    Box::new(m).destroy().unwrap();
    assert!(entries(root.path()).is_empty());
}

#[test]
fn a_close_before_destroy_writes_no_hint_and_releases_the_directory() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bitcask");
    let b = Bitcask::open(&dir, config()).unwrap();
    b.put(b"b", b"k", b"value", &[], WriteOptions::NO_SYNC)
        .unwrap();
    b.close_discarding().unwrap();
    assert!(
        !entries(&dir).iter().any(|name| name.contains("hint")),
        "no hint file: {:?}",
        entries(&dir)
    );
    assert!(matches!(b.get(b"b", b"k"), Err(StorageError::Closed)));
    // The lock is released: the partition store can destroy the directory,
    // and an open would not be refused.
    destroy::destroy_dir(&dir).unwrap();
    assert!(entries(root.path()).is_empty());

    // A plain close writes the hint the next open reads.
    let b = Bitcask::open(&dir, config()).unwrap();
    b.put(b"b", b"k", b"value", &[], WriteOptions::NO_SYNC)
        .unwrap();
    b.close().unwrap();
    assert!(entries(&dir).iter().any(|name| name.contains("hint")));
}
