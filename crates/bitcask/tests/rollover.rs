//! Rollover leaves the closed file's fdatasync to the background, without
//! weakening durable writes; reads of records in every state (buffered,
//! flushed in the active file, in closed files, moved by merges).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, StorageError, WriteOptions};

const FILE_BYTES: u64 = 8192;

fn open(dir: &Path) -> Bitcask {
    let config = BitcaskConfig {
        max_file_size_bytes: FILE_BYTES,
        merge_check_interval_ms: 0,
        ..BitcaskConfig::default()
    };
    Bitcask::open(dir, config).expect("open")
}

fn status_value(b: &Bitcask, name: &str) -> u64 {
    let st = b.status().unwrap();
    let (_, v) = st.extra.iter().find(|(k, _)| k == name).unwrap();
    v.parse().unwrap()
}

fn value(i: u32) -> Vec<u8> {
    format!("value {i} ")
        .repeat(1 + (i % 7) as usize)
        .into_bytes()
}

/// Puts keys without sync until the instance has rolled over once; returns
/// how many keys it wrote.
fn fill_past_rollover(b: &Bitcask) -> u32 {
    let mut i = 0u32;
    while b.unsynced_file_ids().is_empty() {
        b.put(
            b"b",
            &i.to_be_bytes(),
            &value(i),
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
        i += 1;
        assert!(u64::from(i) < FILE_BYTES, "no rollover after {i} puts");
    }
    i
}

/// Polls `cond` until it holds; panics after a generous deadline.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn rollover_does_not_sync_on_the_writers_path() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    b.pause_background_syncs(true);
    let n = fill_past_rollover(&b);
    assert_eq!(b.unsynced_file_ids(), vec![4096]);
    assert_eq!(status_value(&b, "syncs"), 0);
    for i in 0..n {
        assert_eq!(b.get(b"b", &i.to_be_bytes()).unwrap(), Some(value(i)));
    }
}

#[test]
fn a_durable_write_after_rollover_syncs_the_closed_file_first() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    b.pause_background_syncs(true);
    fill_past_rollover(&b);
    b.put(b"b", b"durable", b"v", &[], WriteOptions::SYNC)
        .unwrap();
    // The closed file leaves the queue only once its fdatasync succeeded,
    // and the durable put returned after that.
    assert!(b.unsynced_file_ids().is_empty());
    assert!(status_value(&b, "syncs") >= 2);
}

#[test]
fn sync_covers_closed_files() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    b.pause_background_syncs(true);
    fill_past_rollover(&b);
    fill_past_rollover_again(&b);
    assert_eq!(b.unsynced_file_ids().len(), 2);
    b.sync().unwrap();
    assert!(b.unsynced_file_ids().is_empty());
}

fn fill_past_rollover_again(b: &Bitcask) {
    let before = b.unsynced_file_ids().len();
    let mut i = 0u32;
    while b.unsynced_file_ids().len() == before {
        b.put(
            b"c",
            &i.to_be_bytes(),
            &value(i),
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
        i += 1;
    }
}

#[test]
fn a_failed_sync_of_a_closed_file_fails_the_durable_write() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    b.pause_background_syncs(true);
    fill_past_rollover(&b);
    b.inject_sync_failure();
    let err = b.put(b"b", b"durable", b"v", &[], WriteOptions::SYNC);
    assert!(matches!(err, Err(StorageError::Poisoned(_))), "{err:?}");
    assert_eq!(b.unsynced_file_ids(), vec![4096]);
    assert!(matches!(b.sync(), Err(StorageError::Poisoned(_))));
    assert_eq!(b.get(b"b", &0u32.to_be_bytes()).unwrap(), Some(value(0)));
}

#[test]
fn the_background_syncs_closed_files_and_writes_their_hints() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let n = fill_past_rollover(&b);
    wait_until("closed file synced", || b.unsynced_file_ids().is_empty());
    let hint = dir.path().join("0000004096.bitcask.hint");
    wait_until("hint written", || hint.exists());
    drop(b);
    let b = open(dir.path());
    assert!(b.open_report().hints_used >= 1);
    for i in 0..n {
        assert_eq!(b.get(b"b", &i.to_be_bytes()).unwrap(), Some(value(i)));
    }
}

#[test]
fn close_syncs_closed_files() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    b.pause_background_syncs(true);
    fill_past_rollover(&b);
    b.close().unwrap();
    assert!(b.unsynced_file_ids().is_empty());
}

#[test]
fn reads_see_buffered_flushed_and_closed_records() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    // Enough for many rollovers and buffer flushes.
    for i in 0..2000u32 {
        b.put(
            b"b",
            &i.to_be_bytes(),
            &value(i),
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
        // Still in the write buffer.
        assert_eq!(b.get(b"b", &i.to_be_bytes()).unwrap(), Some(value(i)));
    }
    let big = vec![9u8; 300 * 1024];
    // Past the reserved map length: read by pread.
    b.put(b"b", b"big", &big, &[], WriteOptions::NO_SYNC)
        .unwrap();
    b.put(b"b", b"after", b"a", &[], WriteOptions::SYNC)
        .unwrap();
    assert_eq!(b.get(b"b", b"big").unwrap(), Some(big.clone()));
    for i in 0..2000u32 {
        assert_eq!(b.get(b"b", &i.to_be_bytes()).unwrap(), Some(value(i)));
    }
    drop(b);
    let b = open(dir.path());
    assert_eq!(b.get(b"b", b"big").unwrap(), Some(big));
    for i in 0..2000u32 {
        assert_eq!(b.get(b"b", &i.to_be_bytes()).unwrap(), Some(value(i)));
    }
}

#[test]
fn reads_go_on_while_merges_delete_the_files_they_map() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(open(dir.path()));
    for i in 0..500u32 {
        b.put(
            b"b",
            &i.to_be_bytes(),
            &value(i),
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let (b, stop) = (b.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) || reads < 1000 {
                    let i = (reads as u32 * 7 + t) % 500;
                    let got = b.get(b"b", &i.to_be_bytes()).unwrap();
                    assert_eq!(got, Some(value(i)), "key {i}");
                    reads += 1;
                }
            })
        })
        .collect();
    let mut deleted = 0;
    for round in 0..5u32 {
        // Rewrite every key with the same value so the old files are dead.
        for i in (round % 2..500).step_by(2) {
            b.put(
                b"b",
                &i.to_be_bytes(),
                &value(i),
                &[],
                WriteOptions::NO_SYNC,
            )
            .unwrap();
        }
        deleted += b.merge(true).unwrap().input_files;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert!(deleted > 0);
    for i in 0..500u32 {
        assert_eq!(b.get(b"b", &i.to_be_bytes()).unwrap(), Some(value(i)));
    }
}
