//! Commit-log records name their vnode incarnation: replay never brings
//! back the data of an incarnation that was dropped (wherever its drop
//! record lies in the log), applies the records of a partition created
//! again later, skips what the caller says is not live, and still replays
//! the formats without incarnations as the partition's first life.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use eddy_vnode::commitlog::{
    self, CommitLog, Dropped, FIRST_INCARNATION, LogFigures, LogOptions, Op, Record, Recovered,
};
use proptest::prelude::*;

/// (partition, incarnation, key) → value (`None`: deleted).
type Applied = BTreeMap<(u32, u64, Vec<u8>), Option<Vec<u8>>>;

fn small_segments() -> LogOptions {
    LogOptions {
        segment_bytes: 4096,
        ..LogOptions::default()
    }
}

/// A log whose checkpoints fail, so that every segment stays for replay
/// (as after a crash before the backends synced).
fn open(dir: &Path) -> CommitLog {
    let keep = Box::new(|| Err("the test keeps every segment".to_string()));
    CommitLog::open(dir, 0, small_segments(), keep, LogFigures::unregistered()).unwrap()
}

fn put(log: &CommitLog, partition: u32, incarnation: u64, key: &str, value: &[u8]) {
    let record = Record {
        partition,
        incarnation,
        bucket: b"b",
        key: key.as_bytes(),
        op: Op::Put { value },
    };
    log.append(&record, None).unwrap();
}

/// Replays `dir` with `is_live`, as a node's start would.
fn replay(dir: &Path, is_live: impl Fn(u32, u64) -> bool) -> (Applied, Recovered) {
    let mut applied = Applied::new();
    let out = commitlog::recover_live(dir, is_live, |r| {
        let value = match r.op {
            Op::Put { value } => Some(value.to_vec()),
            Op::Delete => None,
            Op::PutSame { .. } => return Err("unresolved put-same".into()),
        };
        applied.insert((r.partition, r.incarnation, r.key.to_vec()), value);
        Ok(())
    })
    .unwrap();
    (applied, out)
}

#[test]
fn a_dropped_incarnation_never_comes_back_and_its_successor_replays() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    put(&log, 5, 1, "k1", b"handed off");
    put(&log, 3, 1, "k1", b"stays");
    log.append_drop(5, 1).unwrap();
    // The partition comes back later as a new incarnation.
    put(&log, 5, 2, "k3", b"new life");
    log.close().unwrap();

    let (applied, out) = replay(dir.path(), |_, _| true);
    let keys: Vec<_> = applied.keys().map(|(p, i, _)| (*p, *i)).collect();
    assert_eq!(keys, [(3, 1), (5, 2)]);
    assert_eq!(out.skipped, 1);
    let dropped = Dropped {
        partition: 5,
        incarnation: 1,
    };
    assert_eq!(out.dropped, BTreeSet::from([dropped]));
}

#[test]
fn a_drop_covers_records_in_earlier_and_later_segments() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let value = vec![7u8; 1000];
    for i in 0..10 {
        put(&log, 9, 4, &format!("before{i}"), &value);
    }
    log.append_drop(9, 4).unwrap();
    // A write that raced the drop lands after it, in a later segment.
    for i in 0..10 {
        put(&log, 9, 4, &format!("after{i}"), &value);
    }
    put(&log, 1, 1, "other", b"v");
    log.close().unwrap();
    assert!(
        commitlog::segment::list(dir.path()).unwrap().len() >= 3,
        "the drop lies between segments"
    );

    let (applied, out) = replay(dir.path(), |_, _| true);
    assert_eq!(applied.len(), 1, "only partition 1's record");
    assert_eq!(out.skipped, 20);
}

#[test]
fn records_of_incarnations_the_node_does_not_hold_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    put(
        &log,
        2,
        4,
        "k",
        b"old life, destroyed without a drop record",
    );
    put(&log, 2, 5, "k", b"current");
    log.close().unwrap();
    let (applied, out) = replay(dir.path(), |p, i| (p, i) == (2, 5));
    let expected = Applied::from([((2, 5, b"k".to_vec()), Some(b"current".to_vec()))]);
    assert_eq!(applied, expected);
    assert_eq!((out.records, out.skipped), (1, 1));
}

#[test]
fn the_version_2_format_replays_as_each_partitions_first_incarnation() {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/commitlog-v2/commit-0000000000000000.log"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture, commitlog::segment::path(dir.path(), 0)).unwrap();
    let (applied, out) = replay(dir.path(), |_, i| i == FIRST_INCARNATION);
    assert_eq!(out.records, 4);
    assert!(applied.keys().all(|(_, i, _)| *i == FIRST_INCARNATION));
    // Partition 17 lives on in a later incarnation: its old records go.
    let (applied, out) = replay(dir.path(), |p, i| p != 17 || i == 3);
    assert_eq!((applied.len(), out.skipped), (3, 1));
}

/// One step of a random history of vnodes on a node.
#[derive(Clone, Debug)]
enum Step {
    /// The partition's live incarnation writes (or deletes) a key.
    Write {
        partition: u32,
        key: u8,
        value: Option<u8>,
    },
    /// The partition's data is dropped (handed off) and, if `again`, it is
    /// created again as a new incarnation.
    Drop { partition: u32, again: bool },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u32..3, 0u8..4, proptest::option::of(any::<u8>()))
            .prop_map(|(partition, key, value)| Step::Write { partition, key, value }),
        1 => (0u32..3, any::<bool>()).prop_map(|(partition, again)| Step::Drop { partition, again }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Replay applies exactly the last write of each key of each live
    /// incarnation, whatever drops happened in between (the model keeps
    /// only the incarnations alive at the end), whether the caller says
    /// which incarnations are live or the drop records alone decide.
    #[test]
    fn replay_matches_a_model_of_live_incarnations(steps in proptest::collection::vec(step(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let log = open(dir.path());
        let mut live: BTreeMap<u32, Option<u64>> = (0..3).map(|p| (p, Some(FIRST_INCARNATION))).collect();
        let mut next = FIRST_INCARNATION + 1;
        let mut model = Applied::new();
        for s in &steps {
            match *s {
                Step::Write { partition, key, value } => {
                    let Some(inc) = live[&partition] else { continue };
                    let key = vec![key];
                    let bytes = value.map(|v| vec![v; 300]);
                    let op = match &bytes {
                        Some(v) => Op::Put { value: v },
                        None => Op::Delete,
                    };
                    let record = Record { partition, incarnation: inc, bucket: b"b", key: &key, op };
                    log.append(&record, None).unwrap();
                    model.insert((partition, inc, key), bytes);
                }
                Step::Drop { partition, again } => {
                    if let Some(inc) = live[&partition] {
                        log.append_drop(partition, inc).unwrap();
                        model.retain(|(p, i, _), _| (*p, *i) != (partition, inc));
                    }
                    let new = again.then(|| { next += 1; next });
                    live.insert(partition, new);
                }
            }
        }
        log.close().unwrap();
        // The node's vnodes: each partition's incarnation alive at the end.
        let (applied, _) = replay(dir.path(), |p, i| live.get(&p) == Some(&Some(i)));
        prop_assert_eq!(&applied, &model);
        // Every other incarnation was dropped with a record saying so: the
        // log alone keeps their data out.
        let (applied, _) = replay(dir.path(), |_, _| true);
        prop_assert_eq!(&applied, &model);
    }
}
