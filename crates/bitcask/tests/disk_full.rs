//! A full disk (or no descriptors left) refuses bitcask writes with
//! `Exhausted` and never poisons the instance: the buffered records stay
//! readable, writes resume by themselves once a flush succeeds, and every
//! acknowledged record survives a reopen. A failed fdatasync still poisons.

use std::path::Path;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, Resource, StorageError, WriteOptions};

const ENOSPC: i32 = 28;
const EMFILE: i32 = 24;

fn open(dir: &Path, max_file_size_bytes: u64) -> Bitcask {
    let config = BitcaskConfig {
        max_file_size_bytes,
        merge_check_interval_ms: 0,
        ..BitcaskConfig::default()
    };
    Bitcask::open(dir, config).expect("open")
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i} ").repeat(100).into_bytes()
}

fn put(b: &Bitcask, i: u32, opts: WriteOptions) -> Result<(), StorageError> {
    b.put(b"b", &i.to_be_bytes(), &value(i), &[], opts)
}

fn is_exhausted(r: &Result<(), StorageError>, want: Resource) -> bool {
    matches!(r, Err(StorageError::Exhausted { resource, .. }) if *resource == want)
}

/// Puts from key `from` until one is refused; returns the first refused key
/// (every key before it was acknowledged).
fn put_until_refused(b: &Bitcask, from: u32, want: Resource) -> u32 {
    for i in from..from + 10_000 {
        let r = put(b, i, WriteOptions::NO_SYNC);
        if r.is_err() {
            assert!(is_exhausted(&r, want), "key {i}: {r:?}");
            return i;
        }
    }
    panic!("no put refused while every flush fails");
}

fn assert_all_read(b: &Bitcask, keys: std::ops::Range<u32>) {
    for i in keys {
        assert_eq!(
            b.get(b"b", &i.to_be_bytes()).unwrap(),
            Some(value(i)),
            "key {i}"
        );
    }
}

#[test]
fn a_full_disk_refuses_writes_before_applying_them_and_they_resume() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 64 << 20);
    b.inject_flush_failure(Some(ENOSPC));
    let refused = put_until_refused(&b, 0, Resource::Disk);
    assert!(refused > 0, "the buffer takes some writes before refusing");
    assert!(b.flush_failures() > 0);
    // Refused, not half-applied: the refused key is not there; the
    // acknowledged ones are read from the buffer.
    assert_eq!(b.get(b"b", &refused.to_be_bytes()).unwrap(), None);
    assert_all_read(&b, 0..refused);
    // Still refused, with the same error, while the disk stays full.
    assert!(is_exhausted(
        &put(&b, refused, WriteOptions::NO_SYNC),
        Resource::Disk
    ));
    b.inject_flush_failure(None);
    // Space is back: the next write flushes the backlog and goes through.
    let more = refused + 50;
    for i in refused..more {
        put(&b, i, WriteOptions::NO_SYNC).expect("writes resume");
    }
    b.sync().expect("a sync works once space is back");
    drop(b);
    let b = open(dir.path(), 64 << 20);
    assert_all_read(&b, 0..more);
}

#[test]
fn out_of_descriptors_is_refused_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 64 << 20);
    b.inject_flush_failure(Some(EMFILE));
    let refused = put_until_refused(&b, 0, Resource::Descriptors);
    b.inject_flush_failure(None);
    put(&b, refused, WriteOptions::NO_SYNC).expect("writes resume");
    drop(b);
    let b = open(dir.path(), 64 << 20);
    assert_all_read(&b, 0..refused + 1);
}

#[test]
fn a_durable_write_is_refused_whole_and_a_later_sync_works() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 64 << 20);
    put(&b, 0, WriteOptions::NO_SYNC).unwrap();
    b.inject_flush_failure(Some(ENOSPC));
    let r = put(&b, 1, WriteOptions::SYNC);
    assert!(is_exhausted(&r, Resource::Disk), "{r:?}");
    assert_eq!(
        b.get(b"b", &1u32.to_be_bytes()).unwrap(),
        None,
        "not applied"
    );
    assert!(
        is_exhausted(&b.sync(), Resource::Disk),
        "the sync waits for space"
    );
    b.inject_flush_failure(None);
    put(&b, 1, WriteOptions::SYNC).expect("durable writes resume");
    b.sync().unwrap();
    drop(b);
    let b = open(dir.path(), 64 << 20);
    assert_all_read(&b, 0..2);
}

#[test]
fn a_rollover_that_cannot_create_its_file_refuses_and_heals() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 8192);
    // Fill the first file without a failure, then fail every write: the
    // next rollover cannot flush the old file or write the new header.
    let mut i = 0;
    while b.status().unwrap().files < 2 {
        put(&b, i, WriteOptions::NO_SYNC).unwrap();
        i += 1;
        assert!(i < 1000, "no rollover");
    }
    b.inject_flush_failure(Some(ENOSPC));
    let refused = put_until_refused(&b, i, Resource::Disk);
    b.inject_flush_failure(None);
    let more = refused + 30;
    for i in refused..more {
        put(&b, i, WriteOptions::NO_SYNC).expect("writes resume after rollover healed");
    }
    drop(b);
    let b = open(dir.path(), 8192);
    assert_all_read(&b, 0..more);
}

#[test]
fn a_failed_fdatasync_still_poisons() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 64 << 20);
    put(&b, 0, WriteOptions::NO_SYNC).unwrap();
    b.inject_sync_failure();
    assert!(matches!(b.sync(), Err(StorageError::Poisoned(_))));
    let r = put(&b, 1, WriteOptions::NO_SYNC);
    assert!(matches!(r, Err(StorageError::Poisoned(_))), "{r:?}");
}

#[test]
fn a_new_data_file_that_cannot_be_written_is_removed_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 8192);
    // Flushed, so the rollover below has nothing of the old file to write.
    put(&b, 0, WriteOptions::SYNC).unwrap();
    b.inject_flush_failure(Some(ENOSPC));
    let big = vec![7u8; 7800];
    let r = b.put(b"b", b"big", &big, &[], WriteOptions::NO_SYNC);
    assert!(is_exhausted(&r, Resource::Disk), "{r:?}");
    let next = dir.path().join("0000008192.bitcask.data");
    assert!(!next.exists(), "the half-made file is removed");
    assert_eq!(b.get(b"b", b"big").unwrap(), None);
    b.inject_flush_failure(None);
    b.put(b"b", b"big", &big, &[], WriteOptions::NO_SYNC)
        .expect("the rollover is retried");
    assert!(next.exists());
    drop(b);
    let b = open(dir.path(), 8192);
    assert_all_read(&b, 0..1);
    assert_eq!(b.get(b"b", b"big").unwrap(), Some(big));
}
