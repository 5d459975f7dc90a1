//! The lsm backend's own behaviour: order, index semantics, TTL, drop-bucket,
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

fn index(b: &dyn Backend, query: &IndexQuery) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    b.index_range(query, &mut |term, key| {
        out.push((term.to_vec(), key.to_vec()));
        FoldControl::Continue
    })
    .unwrap();
    out
}

fn all_terms(b: &dyn Backend, bucket: &[u8], field: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    index(b, &IndexQuery::range(bucket, field, b"", &[0xFF; 8]))
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
fn index_entries_follow_the_live_object() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    let add = IndexSpec::add;
    let rm = IndexSpec::remove;
    b.put(b"b", b"k1", b"v", &[add(b"f", b"x"), add(b"f", b"y")], SYNC)
        .unwrap();
    b.put(b"b", b"k2", b"v", &[add(b"f", b"x")], SYNC).unwrap();
    // A put without specs keeps the key's terms.
    b.put(b"b", b"k1", b"v2", &[], SYNC).unwrap();
    assert_eq!(
        all_terms(&b, b"b", b"f"),
        pairs(&[(b"x", b"k1"), (b"x", b"k2"), (b"y", b"k1")])
    );
    // Removes apply before adds.
    b.put(
        b"b",
        b"k1",
        b"v3",
        &[add(b"f", b"z"), rm(b"f", b"x"), rm(b"f", b"z")],
        SYNC,
    )
    .unwrap();
    assert_eq!(
        all_terms(&b, b"b", b"f"),
        pairs(&[(b"x", b"k2"), (b"y", b"k1"), (b"z", b"k1")])
    );
    b.delete(b"b", b"k1", SYNC).unwrap();
    assert_eq!(all_terms(&b, b"b", b"f"), pairs(&[(b"x", b"k2")]));
    // Deleted means no terms: a new put starts from none.
    b.put(b"b", b"k1", b"v", &[], SYNC).unwrap();
    assert_eq!(all_terms(&b, b"b", b"f"), pairs(&[(b"x", b"k2")]));
    // Other fields and buckets are separate.
    b.put(b"b\x00", b"k9", b"v", &[add(b"f", b"x")], SYNC)
        .unwrap();
    b.put(b"b", b"k8", b"v", &[add(b"f\x00", b"x")], SYNC)
        .unwrap();
    assert_eq!(all_terms(&b, b"b", b"f"), pairs(&[(b"x", b"k2")]));
}

#[test]
fn index_ranges_and_continuations() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    let terms: [&[u8]; 5] = [b"", b"\x00", b"a", b"a\x00", b"b"];
    for (i, term) in terms.iter().enumerate() {
        for key in [b"k1", b"k2"] {
            let mut own_key = key.to_vec();
            own_key.push(i as u8);
            b.put(b"b", &own_key, b"v", &[IndexSpec::add(b"f", term)], SYNC)
                .unwrap();
        }
    }
    let got = index(&b, &IndexQuery::range(b"b", b"f", b"\x00", b"a\x00"));
    let got_terms: Vec<_> = got.iter().map(|(t, _)| t.clone()).collect();
    assert_eq!(
        got_terms,
        [
            b"\x00".to_vec(),
            b"\x00".to_vec(),
            b"a".to_vec(),
            b"a".to_vec(),
            b"a\x00".to_vec(),
            b"a\x00".to_vec()
        ]
    );
    let mut query = IndexQuery::range(b"b", b"f", b"\x00", b"a\x00");
    query.start_after = Some(got[2].clone());
    assert_eq!(index(&b, &query), got[3..].to_vec());
    assert_eq!(
        index(&b, &IndexQuery::eq(b"b", b"f", b"a")),
        got[2..4].to_vec()
    );
    assert!(index(&b, &IndexQuery::range(b"b", b"f", b"b", b"a")).is_empty());
}

#[test]
fn one_batch_sees_its_own_earlier_ops() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"k", b"1", vec![IndexSpec::add(b"f", b"a")], None);
    batch.put(b"b", b"k", b"2", vec![IndexSpec::add(b"f", b"b")], None);
    batch.delete(b"b", b"j");
    batch.put(b"b", b"j", b"3", vec![IndexSpec::add(b"f", b"c")], None);
    batch.delete(b"b", b"j");
    b.write(batch, SYNC).unwrap();
    assert_eq!(b.get(b"b", b"k").unwrap(), Some(b"2".to_vec()));
    assert_eq!(b.get(b"b", b"j").unwrap(), None);
    assert_eq!(
        all_terms(&b, b"b", b"f"),
        pairs(&[(b"a", b"k"), (b"b", b"k")])
    );
}

#[test]
fn puts_without_specs_keep_terms_when_ttl_is_unused() {
    // With no expiry ever written, such puts skip reading the terms record.
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1);
    let add = IndexSpec::add;
    {
        let b = open(dir.path(), &clock);
        b.put(b"b", b"k", b"v1", &[add(b"f", b"a")], SYNC).unwrap();
        b.put(b"b", b"k", b"v2", &[], SYNC).unwrap();
        assert_eq!(all_terms(&b, b"b", b"f"), pairs(&[(b"a", b"k")]));
        // In one batch, a plain put between two indexed ones of the same key.
        let mut batch = WriteBatch::default();
        batch.put(b"b", b"k", b"v3", vec![add(b"f", b"b")], None);
        batch.put(b"b", b"k", b"v4", vec![], None);
        batch.put(b"b", b"k", b"v5", vec![add(b"f", b"c")], None);
        batch.put(b"b", b"j", b"v", vec![add(b"f", b"d")], None);
        batch.put(b"b", b"j", b"v", vec![], None);
        batch.delete(b"b", b"j");
        b.write(batch, SYNC).unwrap();
        assert_eq!(b.get(b"b", b"k").unwrap(), Some(b"v5".to_vec()));
        assert_eq!(
            all_terms(&b, b"b", b"f"),
            pairs(&[(b"a", b"k"), (b"b", b"k"), (b"c", b"k")])
        );
    }
    let b = open(dir.path(), &clock);
    b.put(b"b", b"k", b"v6", &[], SYNC).unwrap();
    b.delete(b"b", b"k", SYNC).unwrap();
    b.put(b"b", b"k", b"v7", &[], SYNC).unwrap();
    assert!(all_terms(&b, b"b", b"f").is_empty());
    assert_eq!(b.get(b"b", b"k").unwrap(), Some(b"v7".to_vec()));
}

#[test]
fn puts_without_specs_drop_expired_terms_and_move_live_ones_once_ttl_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let add = IndexSpec::add;
    {
        let b = open(dir.path(), &clock);
        b.put(b"b", b"live", b"v", &[add(b"f", b"l")], SYNC)
            .unwrap();
        let mut batch = WriteBatch::default();
        batch.put(b"b", b"k", b"v", vec![add(b"f", b"x")], Some(1_010));
        batch.put(b"b", b"j", b"v", vec![add(b"f", b"y")], Some(1_010));
        b.write(batch, SYNC).unwrap();
        clock.advance(10);
        // No specs and no expiry, but TTL is in use: the expired terms go.
        b.put(b"b", b"k", b"again", &[], SYNC).unwrap();
        b.put(b"b", b"live", b"v2", &[], SYNC).unwrap();
        assert_eq!(all_terms(&b, b"b", b"f"), pairs(&[(b"l", b"live")]));
    }
    // The stored `ttl_in_use` marker keeps this true after a reopen.
    let b = open(dir.path(), &clock);
    b.put(b"b", b"j", b"again", &[], SYNC).unwrap();
    assert_eq!(all_terms(&b, b"b", b"f"), pairs(&[(b"l", b"live")]));
    assert_eq!(b.get(b"b", b"j").unwrap(), Some(b"again".to_vec()));
    // A plain put over a live key with an expiry clears the expiry of its
    // entries too: they outlive the old expiry with the object.
    b.put(b"b", b"m", b"v", &[add(b"f", b"z")], SYNC).unwrap();
    b.write(
        {
            let mut batch = WriteBatch::default();
            batch.put(b"b", b"m", b"v", vec![], Some(2_000));
            batch
        },
        SYNC,
    )
    .unwrap();
    b.put(b"b", b"m", b"forever", &[], SYNC).unwrap();
    clock.advance(5_000);
    assert_eq!(b.get(b"b", b"m").unwrap(), Some(b"forever".to_vec()));
    assert_eq!(
        all_terms(&b, b"b", b"f"),
        pairs(&[(b"l", b"live"), (b"z", b"m")])
    );
}

#[test]
fn expired_objects_and_their_entries_disappear() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let b = open(dir.path(), &clock);
    let add = IndexSpec::add;
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"short", b"v", vec![add(b"f", b"s")], Some(1_010));
    batch.put(
        b"b",
        b"long",
        &[9u8; 500],
        vec![add(b"f", b"l")],
        Some(2_000),
    );
    batch.put(b"b", b"never", b"v", vec![add(b"f", b"n")], None);
    b.write(batch, SYNC).unwrap();
    assert_eq!(keys(&b, &FoldOptions::all()).len(), 3);
    clock.advance(10);
    assert_eq!(b.get(b"b", b"short").unwrap(), None);
    assert_eq!(
        keys(&b, &FoldOptions::all()),
        pairs(&[(b"b", b"long"), (b"b", b"never")])
    );
    assert_eq!(
        all_terms(&b, b"b", b"f"),
        pairs(&[(b"l", b"long"), (b"n", b"never")])
    );
    // A put over the expired key starts with no terms.
    b.put(b"b", b"short", b"again", &[add(b"f", b"t")], SYNC)
        .unwrap();
    assert_eq!(
        all_terms(&b, b"b", b"f"),
        pairs(&[(b"l", b"long"), (b"n", b"never"), (b"t", b"short")])
    );
    clock.advance(1_000);
    b.compact().unwrap();
    assert_eq!(b.get(b"b", b"long").unwrap(), None);
    assert_eq!(objects(&b).len(), 2);
    assert_eq!(
        all_terms(&b, b"b", b"f"),
        pairs(&[(b"n", b"never"), (b"t", b"short")])
    );
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
        b.put(b"b", b"k", b"v", &[IndexSpec::add(b"f", b"t")], SYNC)
            .unwrap();
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
    assert!(all_terms(&b, b"b", b"f").is_empty());
    assert!(b.is_empty().unwrap());
}

#[test]
fn drop_bucket_removes_exactly_one_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    for bucket in [&b"a"[..], b"a\x00", b"ab"] {
        for i in 0..1_500u32 {
            let spec = IndexSpec::add(b"f", &(i % 7).to_be_bytes());
            b.put(
                bucket,
                &i.to_be_bytes(),
                b"v",
                &[spec],
                WriteOptions::NO_SYNC,
            )
            .unwrap();
        }
    }
    b.drop_bucket(b"a").unwrap();
    assert!(keys(&b, &FoldOptions::bucket(b"a")).is_empty());
    assert!(all_terms(&b, b"a", b"f").is_empty());
    assert_eq!(keys(&b, &FoldOptions::bucket(b"a\x00")).len(), 1_500);
    assert_eq!(all_terms(&b, b"ab", b"f").len(), 1_500);
    // A new put in the dropped bucket starts from nothing.
    b.put(b"a", &1u32.to_be_bytes(), b"v", &[], SYNC).unwrap();
    assert!(all_terms(&b, b"a", b"f").is_empty());
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
    p1.put(b"b", b"k", b"1", &[IndexSpec::add(b"f", b"t")], SYNC)
        .unwrap();
    p2.put(b"b", b"k", b"2", &[], SYNC).unwrap();
    assert_eq!(p2.get(b"b", b"k").unwrap(), Some(b"2".to_vec()));
    assert!(all_terms(&p2, b"b", b"f").is_empty());
    Box::new(p1).destroy().unwrap();
    let p1 = env.open_partition("p1").unwrap();
    assert!(p1.is_empty().unwrap());
    assert!(all_terms(&p1, b"b", b"f").is_empty());
    assert_eq!(p2.get(b"b", b"k").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn oversized_keys_are_refused_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), &ManualClock::new(1));
    let long = vec![0u8; 40_000];
    let err = b.put(&long, b"k", b"v", &[], SYNC).unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }), "{err}");
    let spec = IndexSpec::add(b"f", &long);
    let err = b.put(b"b", &long, b"v", &[spec], SYNC).unwrap_err();
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
fn concurrent_writers_keep_index_and_objects_in_step() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(open(dir.path(), &ManualClock::new(1)));
    let threads: Vec<_> = (0..8u8)
        .map(|t| {
            let b = b.clone();
            std::thread::spawn(move || {
                for i in 0..200u32 {
                    let key = (i % 16).to_be_bytes();
                    let term = [t, (i % 5) as u8];
                    let spec = IndexSpec::add(b"f", &term);
                    b.put(
                        b"b",
                        &key,
                        &term,
                        &[spec],
                        WriteOptions { sync: i % 10 == 0 },
                    )
                    .unwrap();
                    if i % 7 == 0 {
                        b.delete(b"b", &key, WriteOptions::NO_SYNC).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Every entry's key is live, and the last writer's term is among its
    // entries.
    for (term, key) in all_terms(&*b, b"b", b"f") {
        assert!(b.get(b"b", &key).unwrap().is_some(), "{term:?} {key:?}");
    }
    for (_, key, value) in objects(&*b) {
        let entries = all_terms(&*b, b"b", b"f");
        assert!(entries.contains(&(value, key)));
    }
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
