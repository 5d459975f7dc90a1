//! The lsm backend's own behaviour: order, batches, TTL, drop-bucket,
//! environments and partitions, reopen, limits.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use eddy_lsm::{LsmBackend, LsmConfig, LsmEnv};
use eddy_storage::{
    Backend, FoldControl, FoldOptions, IndexQuery, IndexSpec, ManualClock, StorageError,
    WriteBatch, WriteOptions,
};

const SYNC: WriteOptions = WriteOptions::SYNC;

fn config(clock: &Arc<ManualClock>, expiry_secs: u64) -> LsmConfig {
    LsmConfig {
        expiry_secs,
        clock: clock.clone(),
        kv_separation_threshold_bytes: Some(64),
        ..LsmConfig::default()
    }
}

fn open(dir: &Path, clock: &Arc<ManualClock>) -> LsmBackend {
    LsmBackend::open(dir, config(clock, 0)).unwrap()
}

fn keys(b: &dyn Backend, opts: &FoldOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    b.fold_keys(opts, &mut |bucket, key| {
        out.push((bucket.to_vec(), key.to_vec()));
        FoldControl::Continue
    })
    .unwrap();
    out
}

fn objects(b: &dyn Backend) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    b.fold_objects(&FoldOptions::all(), &mut |bucket, key, value| {
        out.push((bucket.to_vec(), key.to_vec(), value.to_vec()));
        FoldControl::Continue
    })
    .unwrap();
    out
}

fn pairs(items: &[(&[u8], &[u8])]) -> Vec<(Vec<u8>, Vec<u8>)> {
    items
        .iter()
        .map(|(a, b)| (a.to_vec(), b.to_vec()))
        .collect()
}

#[test]
fn puts_gets_deletes_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let big = vec![7u8; 10_000];
    {
        let b = open(dir.path(), &clock);
        b.put(b"b", b"k1", b"v1", &[], SYNC).unwrap();
        b.put(b"b", b"k2", &big, &[], SYNC).unwrap();
        b.put(b"b", b"k3", b"v3", &[], SYNC).unwrap();
        b.put(b"b", b"k1", b"v1b", &[], SYNC).unwrap();
        b.delete(b"b", b"k3", SYNC).unwrap();
        b.delete(b"b", b"missing", SYNC).unwrap();
        assert_eq!(b.get(b"b", b"k1").unwrap(), Some(b"v1b".to_vec()));
        assert_eq!(b.get(b"b", b"k3").unwrap(), None);
        assert!(!b.is_empty().unwrap());
        b.close().unwrap();
        assert!(matches!(b.get(b"b", b"k1"), Err(StorageError::Closed)));
    }
    let b = open(dir.path(), &clock);
    assert_eq!(b.get(b"b", b"k1").unwrap(), Some(b"v1b".to_vec()));
    assert_eq!(b.get(b"b", b"k2").unwrap(), Some(big.clone()));
    assert_eq!(b.get(b"b", b"k3").unwrap(), None);
    b.compact().unwrap();
    assert_eq!(b.get(b"b", b"k2").unwrap(), Some(big));
    assert_eq!(
        keys(&b, &FoldOptions::all()),
        pairs(&[(b"b", b"k1"), (b"b", b"k2")])
    );
}

#[test]
fn folds_follow_tuple_order_even_with_zero_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    let mut expected = BTreeSet::new();
    let buckets: [&[u8]; 5] = [b"a", b"a\x00", b"a\x00\x00", b"", b"\xFF"];
    let keys_: [&[u8]; 4] = [b"", b"\x00", b"k", b"\x00\xFF"];
    for bucket in buckets {
        for key in keys_ {
            b.put(bucket, key, b"v", &[], WriteOptions::NO_SYNC)
                .unwrap();
            expected.insert((bucket.to_vec(), key.to_vec()));
        }
    }
    let expected: Vec<_> = expected.into_iter().collect();
    assert_eq!(keys(&b, &FoldOptions::all()), expected);
    let only_a: Vec<_> = expected
        .iter()
        .filter(|(bk, _)| bk == b"a")
        .cloned()
        .collect();
    assert_eq!(keys(&b, &FoldOptions::bucket(b"a")), only_a);
    let ranged = FoldOptions {
        bucket: Some(b"a\x00".to_vec()),
        key_start: Some(b"\x00".to_vec()),
        key_end: Some(b"k".to_vec()),
    };
    assert_eq!(
        keys(&b, &ranged),
        pairs(&[
            (b"a\x00", b"\x00"),
            (b"a\x00", b"\x00\xFF"),
            (b"a\x00", b"k")
        ])
    );
    let backwards = FoldOptions {
        key_start: Some(b"z".to_vec()),
        key_end: Some(b"a".to_vec()),
        ..ranged
    };
    assert!(keys(&b, &backwards).is_empty());
    assert_eq!(objects(&b).len(), expected.len());
}

#[test]
fn a_batch_writes_each_keys_last_op_and_refuses_index_specs_whole() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"k", b"1", vec![], None);
    batch.put(b"b", b"k", b"2", vec![], None);
    batch.delete(b"b", b"j");
    batch.put(b"b", b"j", b"3", vec![], None);
    batch.delete(b"b", b"j");
    batch.delete(b"b", b"i");
    batch.put(b"b", b"i", b"4", vec![], None);
    b.write(batch, SYNC).unwrap();
    assert_eq!(b.get(b"b", b"k").unwrap(), Some(b"2".to_vec()));
    assert_eq!(b.get(b"b", b"j").unwrap(), None);
    assert_eq!(b.get(b"b", b"i").unwrap(), Some(b"4".to_vec()));
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"k", b"5", vec![], None);
    batch.put(b"b", b"n", b"6", vec![IndexSpec::add(b"f", b"t")], None);
    let err = b.write(batch, SYNC).unwrap_err();
    assert!(
        matches!(err, StorageError::NoIndexes { backend: "lsm" }),
        "{err}"
    );
    assert_eq!(b.get(b"b", b"k").unwrap(), Some(b"2".to_vec()));
    assert_eq!(b.get(b"b", b"n").unwrap(), None);
    let all = IndexQuery::range(b"b", b"f", b"", b"\xff");
    let mut entries = 0;
    b.index_range(&all, &mut |_, _| {
        entries += 1;
        FoldControl::Continue
    })
    .unwrap();
    assert_eq!(entries, 0);
}

#[test]
fn expired_objects_disappear() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let b = open(dir.path(), &clock);
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"short", b"v", vec![], Some(1_010));
    batch.put(b"b", b"long", &[9u8; 500], vec![], Some(2_000));
    batch.put(b"b", b"never", b"v", vec![], None);
    b.write(batch, SYNC).unwrap();
    assert_eq!(keys(&b, &FoldOptions::all()).len(), 3);
    clock.advance(10);
    assert_eq!(b.get(b"b", b"short").unwrap(), None);
    assert_eq!(
        keys(&b, &FoldOptions::all()),
        pairs(&[(b"b", b"long"), (b"b", b"never")])
    );
    // A put over the expired key stores it again, without an expiry.
    b.put(b"b", b"short", b"again", &[], SYNC).unwrap();
    clock.advance(1_000);
    b.compact().unwrap();
    assert_eq!(b.get(b"b", b"long").unwrap(), None);
    assert_eq!(b.get(b"b", b"short").unwrap(), Some(b"again".to_vec()));
    assert_eq!(objects(&b).len(), 2);
    let status = b.status().unwrap();
    assert_eq!(
        status.keys, 2,
        "compaction dropped expired objects: {status:?}"
    );
}

#[test]
fn instance_expiry_applies_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    {
        let b = LsmBackend::open(dir.path(), config(&clock, 60)).unwrap();
        b.put(b"b", b"k", b"v", &[], SYNC).unwrap();
        let mut batch = WriteBatch::default();
        batch.put(b"b", b"sooner", b"v", vec![], Some(1_030));
        batch.put(b"b", b"later", b"v", vec![], Some(5_000));
        b.write(batch, SYNC).unwrap();
        clock.advance(30);
        assert_eq!(b.get(b"b", b"sooner").unwrap(), None);
        assert!(b.get(b"b", b"later").unwrap().is_some());
    }
    clock.advance(30);
    // Reopened without instance expiry: the stored expiry still holds, and
    // key folds still check it (the marker was persisted).
    let b = open(dir.path(), &clock);
    assert_eq!(b.get(b"b", b"k").unwrap(), None);
    assert!(keys(&b, &FoldOptions::all()).is_empty());
    assert!(b.is_empty().unwrap());
}

#[test]
fn drop_bucket_removes_exactly_one_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    for bucket in [&b"a"[..], b"a\x00", b"ab"] {
        for i in 0..1_500u32 {
            b.put(bucket, &i.to_be_bytes(), b"v", &[], WriteOptions::NO_SYNC)
                .unwrap();
        }
    }
    b.drop_bucket(b"a").unwrap();
    assert!(keys(&b, &FoldOptions::bucket(b"a")).is_empty());
    assert_eq!(keys(&b, &FoldOptions::bucket(b"a\x00")).len(), 1_500);
    assert_eq!(keys(&b, &FoldOptions::bucket(b"ab")).len(), 1_500);
    b.put(b"a", &1u32.to_be_bytes(), b"v", &[], SYNC).unwrap();
    assert_eq!(keys(&b, &FoldOptions::bucket(b"a")).len(), 1);
}

#[test]
fn partitions_share_an_env_but_not_data() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1);
    let env = LsmEnv::open(dir.path(), &config(&clock, 0)).unwrap();
    let p1 = env.open_partition("p1").unwrap();
    let p2 = env.open_partition("p2").unwrap();
    assert!(env.open_partition("p1").is_err(), "opened twice");
    assert!(env.open_partition("").is_err());
    p1.put(b"b", b"k", b"1", &[], SYNC).unwrap();
    p1.put(b"b", b"j", b"1", &[], SYNC).unwrap();
    p2.put(b"b", b"k", b"2", &[], SYNC).unwrap();
    assert_eq!(p2.get(b"b", b"k").unwrap(), Some(b"2".to_vec()));
    assert_eq!(p2.get(b"b", b"j").unwrap(), None);
    Box::new(p1).destroy().unwrap();
    let p1 = env.open_partition("p1").unwrap();
    assert!(p1.is_empty().unwrap());
    assert_eq!(p2.get(b"b", b"k").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn oversized_keys_are_refused_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    let long = vec![0u8; 40_000];
    let err = b.put(&long, b"k", b"v", &[], SYNC).unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }), "{err}");
    let err = b.put(&long, &long, b"v", &[], SYNC).unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }), "{err}");
    // A key no write could have stored reads as absent; deleting it is refused
    // like writing it.
    assert_eq!(b.get(&long, b"k").unwrap(), None);
    assert!(matches!(
        b.delete(&long, b"k", SYNC),
        Err(StorageError::TooLarge { .. })
    ));
    assert!(b.is_empty().unwrap(), "a refused batch wrote nothing");
}

#[test]
fn interval_sync_env_closes_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1);
    let interval = LsmConfig {
        sync: eddy_storage::SyncPolicy::Interval,
        sync_interval: std::time::Duration::from_millis(5),
        ..config(&clock, 0)
    };
    for round in 0..3u8 {
        let b = LsmBackend::open(dir.path(), interval.clone()).unwrap();
        b.put(b"b", &[round], b"v", &[], WriteOptions::NO_SYNC)
            .unwrap();
        // Dropping without close must release the directory too.
        if round == 1 {
            b.close().unwrap();
        }
    }
    let b = open(dir.path(), &clock);
    assert_eq!(keys(&b, &FoldOptions::all()).len(), 3);
}

/// A standalone partition's destroy interrupted after the rename of its
/// directory: the next open finds no data and removes the leftover.
#[test]
fn an_interrupted_standalone_destroy_is_finished_at_open() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("lsm");
    {
        let b = LsmBackend::open(&dir, LsmConfig::default()).unwrap();
        b.put(b"b", b"k", b"v", &[], WriteOptions::SYNC).unwrap();
        b.close().unwrap();
    }
    eddy_storage::destroy::begin(&dir).unwrap();
    let b = LsmBackend::open(&dir, LsmConfig::default()).unwrap();
    assert!(b.is_empty().unwrap());
    assert!(!eddy_storage::destroy::destroying_path(&dir).exists());
    Box::new(b).destroy().unwrap();
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}
