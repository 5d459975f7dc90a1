//! Merge: never resurrects deleted, expired or dropped keys (also across
//! reopen), drops expired data, honours the merge window, and runs while
//! readers and writers go on.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eddy_bitcask::{Bitcask, BitcaskConfig, MergeWindow};
use eddy_storage::{Backend, BatchOp, Clock, ManualClock, WriteBatch, WriteOptions};

const T0: u64 = 1_700_000_000;

/// Small files; merge only files at least half dead, never small ones.
fn config(clock: &Arc<ManualClock>) -> BitcaskConfig {
    BitcaskConfig {
        max_file_size_bytes: 4096,
        frag_merge_trigger: 50,
        frag_threshold: 50,
        small_file_threshold: 0,
        merge_check_interval_ms: 0,
        clock: clock.clone(),
        ..BitcaskConfig::default()
    }
}

fn open(dir: &Path, clock: &Arc<ManualClock>) -> Bitcask {
    Bitcask::open(dir, config(clock)).expect("open")
}

/// Fills one whole file with live keys `fill-<tag>-<i>` that stay live.
fn fill_live(b: &Bitcask, tag: &str) {
    for i in 0..40 {
        let key = format!("fill-{tag}-{i}");
        b.put(
            b"b",
            key.as_bytes(),
            &[7u8; 100],
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
    }
}

/// Writes enough overwrites of one key to make the current file mostly dead.
fn churn(b: &Bitcask) {
    for _ in 0..40 {
        b.put(b"b", b"churn", &[1u8; 100], &[], WriteOptions::NO_SYNC)
            .unwrap();
    }
}

fn status_value(b: &Bitcask, name: &str) -> u64 {
    let st = b.status().unwrap();
    st.extra
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// Riak's bug: the tombstone's (fragmented) file is merged, the older
/// value's (healthy) file is not; the key must stay deleted, also after a
/// reopen and after later merges.
#[test]
fn merged_tombstone_never_resurrects_older_value() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = open(dir.path(), &clock);
    b.put(b"b", b"victim", b"old value", &[], WriteOptions::NO_SYNC)
        .unwrap();
    fill_live(&b, "a");
    b.delete(b"b", b"victim", WriteOptions::NO_SYNC).unwrap();
    churn(&b);
    let stats = b.merge(false).unwrap();
    assert!(stats.input_files > 0, "the churned files should be merged");
    assert!(
        stats.tombstones_kept >= 1,
        "the tombstone must be kept: {stats:?}"
    );
    assert_eq!(b.get(b"b", b"victim").unwrap(), None);
    b.close().unwrap();
    drop(b);

    let b = open(dir.path(), &clock);
    assert_eq!(
        b.get(b"b", b"victim").unwrap(),
        None,
        "resurrected on reopen"
    );
    churn(&b);
    b.merge(false).unwrap();
    b.close().unwrap();
    drop(b);
    let b = open(dir.path(), &clock);
    assert_eq!(b.get(b"b", b"victim").unwrap(), None);
    // A full merge may finally drop the tombstone: nothing older survives.
    let stats = b.merge(true).unwrap();
    assert_eq!(stats.tombstones_kept, 0, "{stats:?}");
    b.close().unwrap();
    drop(b);
    let b = open(dir.path(), &clock);
    assert_eq!(b.get(b"b", b"victim").unwrap(), None);
    assert!(b.get(b"b", b"fill-a-3").unwrap().is_some());
}

/// An expired value dropped by merge must not uncover an older value in a
/// file the merge left alone.
#[test]
fn merged_expiry_never_resurrects_older_value() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = open(dir.path(), &clock);
    b.put(b"b", b"k", b"forever", &[], WriteOptions::NO_SYNC)
        .unwrap();
    fill_live(&b, "a");
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"k", b"short-lived", vec![], Some(T0 + 10));
    b.write(batch, WriteOptions::NO_SYNC).unwrap();
    churn(&b);
    clock.advance(11);
    assert_eq!(b.get(b"b", b"k").unwrap(), None);
    let keys_before = b.status().unwrap().keys;
    b.merge(false).unwrap();
    assert_eq!(
        b.status().unwrap().keys,
        keys_before - 1,
        "expired key reclaimed"
    );
    assert_eq!(b.get(b"b", b"k").unwrap(), None);
    b.close().unwrap();
    drop(b);
    let b = open(dir.path(), &clock);
    assert_eq!(b.get(b"b", b"k").unwrap(), None, "older value came back");
}

/// A dropped bucket stays dropped through partial merges and reopens, while
/// keys written to it after the drop survive.
#[test]
fn dropped_bucket_stays_dropped_through_merge() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = open(dir.path(), &clock);
    for i in 0..30 {
        let key = format!("x{i}");
        b.put(
            b"gone",
            key.as_bytes(),
            &[3u8; 100],
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
    }
    fill_live(&b, "a");
    b.drop_bucket(b"gone").unwrap();
    b.put(b"gone", b"after", b"new", &[], WriteOptions::NO_SYNC)
        .unwrap();
    churn(&b);
    b.merge(false).unwrap();
    let check = |b: &Bitcask| {
        assert_eq!(b.get(b"gone", b"x3").unwrap(), None);
        assert_eq!(b.get(b"gone", b"after").unwrap(), Some(b"new".to_vec()));
    };
    check(&b);
    b.close().unwrap();
    drop(b);
    let b = open(dir.path(), &clock);
    check(&b);
    b.merge(true).unwrap();
    check(&b);
    b.close().unwrap();
    drop(b);
    check(&open(dir.path(), &clock));
}

/// The background thread merges only inside the window (hour from the
/// injected clock).
#[test]
fn background_merge_honours_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let midnight = T0 - T0 % 86_400;
    let clock = ManualClock::new(midnight + 12 * 3600);
    let config = BitcaskConfig {
        merge_check_interval_ms: 5,
        merge_window: MergeWindow::Hours { start: 2, end: 3 },
        frag_merge_trigger: 10,
        frag_threshold: 10,
        ..config(&clock)
    };
    let b = Bitcask::open(dir.path(), config).unwrap();
    for _ in 0..4 {
        churn(&b);
    }
    let dead = |b: &Bitcask| b.status().unwrap().dead_bytes;
    let before = dead(&b);
    assert!(before > 0);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(dead(&b), before, "merged outside the window");
    clock.advance(14 * 3600); // 02:00 the next day
    assert_eq!(clock.now_secs() / 3600 % 24, 2);
    let deadline = Instant::now() + Duration::from_secs(10);
    while dead(&b) >= before {
        assert!(Instant::now() < deadline, "no merge inside the window");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(b.get(b"b", b"churn").unwrap(), Some(vec![1u8; 100]));
}

/// Reads and writes continue during merges and see a consistent store.
#[test]
fn merge_runs_beside_readers_and_writers() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = Arc::new(open(dir.path(), &clock));
    let writer = {
        let b = b.clone();
        std::thread::spawn(move || {
            for round in 0..30u32 {
                let mut batch = WriteBatch::default();
                for k in 0..50u32 {
                    let value = format!("{k}:{round}");
                    batch.put(b"b", &k.to_be_bytes(), value.as_bytes(), vec![], None);
                }
                b.write(batch, WriteOptions::NO_SYNC).unwrap();
                for k in 0..50u32 {
                    let got = b.get(b"b", &k.to_be_bytes()).unwrap().unwrap();
                    assert_eq!(got, format!("{k}:{round}").into_bytes());
                }
            }
        })
    };
    while !writer.is_finished() {
        b.merge(true).unwrap();
    }
    writer.join().unwrap();
    b.merge(true).unwrap();
    for k in 0..50u32 {
        let got = b.get(b"b", &k.to_be_bytes()).unwrap().unwrap();
        assert_eq!(got, format!("{k}:29").into_bytes());
    }
    let st = b.status().unwrap();
    assert_eq!(st.keys, 50);
    assert_eq!(status_value(&b, "corrupt_reads"), 0);
    let ops: Vec<BatchOp> = (0..50u32)
        .map(|k| BatchOp::Delete {
            bucket: b"b".to_vec(),
            key: k.to_be_bytes().to_vec(),
        })
        .collect();
    b.write(WriteBatch { ops }, WriteOptions::SYNC).unwrap();
    b.merge(true).unwrap();
    assert!(b.is_empty().unwrap());
}

/// A merge's inputs go away whole: out of the directory once the merge
/// returns (freed a slice at a time), with no temporary name left over.
#[test]
fn merged_inputs_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = open(dir.path(), &clock);
    for _ in 0..6 {
        churn(&b);
    }
    let names = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let before = names();
    let stats = b.merge(true).unwrap();
    assert!(stats.input_files >= 5, "{stats:?}");
    let after = names();
    assert!(after.iter().all(|n| !n.ends_with(".tmp")), "{after:?}");
    let gone = before.iter().filter(|n| !after.contains(n)).count();
    assert!(gone >= stats.input_files, "{before:?} -> {after:?}");
    assert_eq!(b.get(b"b", b"churn").unwrap(), Some(vec![1u8; 100]));
    drop(b);
    let b = open(dir.path(), &clock);
    assert_eq!(b.get(b"b", b"churn").unwrap(), Some(vec![1u8; 100]));
}
