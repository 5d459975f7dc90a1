//! The node's commit log: acknowledged durable writes survive backends
//! that lose every write they did not sync, checkpoints drop segments
//! without losing data, and damaged logs never replay a corrupt record.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_ring::Partition;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{
    Backend, BackendStatus, Capabilities, FoldControl, FoldOptions, IndexQuery, KeyVisitor,
    ObjectVisitor, StorageError, WriteBatch, WriteOptions,
};
use eddy_vnode::commitlog::{
    self, CommitLog, Entry, LogFigures, LogOptions, Op, Record, SyncPolicy,
};
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};

mod log_cuts;
use log_cuts::cuts;

const RING: u32 = 8;

/// A persistent-looking backend that keeps only what it synced: writes go
/// to `live` at once and to `durable` (a history of batches) at `sync`.
/// [`Lossy::crashed`] is what a machine crash would leave.
struct Lossy {
    live: MemoryBackend,
    unsynced: Mutex<Vec<WriteBatch>>,
    durable: Mutex<Vec<WriteBatch>>,
}

impl Lossy {
    fn from_history(history: Vec<WriteBatch>) -> Lossy {
        let live = MemoryBackend::new(MemoryConfig::default());
        for batch in &history {
            live.write(batch.clone(), WriteOptions::NO_SYNC).unwrap();
        }
        Lossy {
            live,
            unsynced: Mutex::new(Vec::new()),
            durable: Mutex::new(history),
        }
    }

    fn crashed(&self) -> Lossy {
        Lossy::from_history(self.durable.lock().clone())
    }
}

impl Backend for Lossy {
    fn name(&self) -> &'static str {
        "lossy"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            persistent: true,
            ..self.live.capabilities()
        }
    }
    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.live.get(bucket, key)
    }
    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        self.unsynced.lock().push(batch.clone());
        self.live.write(batch, WriteOptions::NO_SYNC)?;
        if opts.sync {
            self.sync()?;
        }
        Ok(())
    }
    fn fold_keys(&self, opts: &FoldOptions, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.live.fold_keys(opts, f)
    }
    fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.live.fold_objects(opts, f)
    }
    fn index_range(&self, query: &IndexQuery, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.live.index_range(query, f)
    }
    fn drop_bucket(&self, _bucket: &[u8]) -> Result<(), StorageError> {
        unimplemented!("not used by these tests")
    }
    fn is_empty(&self) -> Result<bool, StorageError> {
        self.live.is_empty()
    }
    fn sync(&self) -> Result<(), StorageError> {
        let batches = std::mem::take(&mut *self.unsynced.lock());
        self.durable.lock().extend(batches);
        Ok(())
    }
    fn status(&self) -> Result<BackendStatus, StorageError> {
        self.live.status()
    }
    fn close(&self) -> Result<(), StorageError> {
        self.sync()
    }
    fn destroy(self: Box<Self>) -> Result<(), StorageError> {
        Ok(())
    }
}

fn start(backends: &[Arc<Lossy>], log_dir: &Path, opts: LogOptions) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: RING,
        commit_log_dir: Some(log_dir.to_path_buf()),
        commit_log: opts,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let b: Arc<dyn Backend> = backends[p.0 as usize].clone();
        (b, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

fn fresh_backends() -> Vec<Arc<Lossy>> {
    (0..RING)
        .map(|_| Arc::new(Lossy::from_history(vec![])))
        .collect()
}

/// What a crash leaves: each backend's synced history, and a copy of the
/// log's files as they are on disk now.
fn crash(backends: &[Arc<Lossy>], log_dir: &Path, into: &Path) -> Vec<Arc<Lossy>> {
    std::fs::create_dir_all(into).unwrap();
    for entry in std::fs::read_dir(log_dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), into.join(entry.file_name())).unwrap();
    }
    backends.iter().map(|b| Arc::new(b.crashed())).collect()
}

fn put(key: &str, value: &str, dw: Quorum) -> PutRequest {
    let mut content = Content::new(value.as_bytes().to_vec());
    content.meta.indexes = vec![(b"v_bin".to_vec(), value.as_bytes().to_vec())];
    PutRequest {
        bucket: BucketRef::default_type("b"),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content,
        options: PutOptions {
            dw: Some(dw),
            ..PutOptions::default()
        },
    }
}

async fn value_of(node: &Arc<Node>, key: &str) -> Option<Vec<u8>> {
    let req = GetRequest {
        bucket: BucketRef::default_type("b"),
        key: key.as_bytes().to_vec(),
        options: GetOptions::default(),
    };
    match node.get(req).await.unwrap() {
        GetResponse::Found(o) => Some(o.contents().next().unwrap().value.clone()),
        GetResponse::NotFound { .. } => None,
    }
}

/// Every index entry of bucket `b` on every partition points at a key
/// whose stored value is the entry's term (the tests index the value).
fn check_indexes(node: &Arc<Node>) -> usize {
    let bucket = BucketRef::default_type("b").storage_bucket();
    let mut entries = 0;
    for p in 0..RING {
        let backend = node
            .partition_backend(Partition(p))
            .expect("a local partition");
        let query = IndexQuery::range(&bucket, b"v_bin", b"", &[0xff; 8]);
        let mut found = Vec::new();
        backend
            .index_range(&query, &mut |term, key| {
                found.push((term.to_vec(), key.to_vec()));
                FoldControl::Continue
            })
            .unwrap();
        for (term, key) in found {
            let stored = backend
                .get(&bucket, &key)
                .unwrap()
                .expect("indexed key exists");
            let obj = eddy_object::codec::decode(&stored).unwrap();
            assert_eq!(
                obj.siblings[0].content.value, term,
                "index entry is current"
            );
            entries += 1;
        }
    }
    entries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_durable_writes_survive_losing_unsynced_backend_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (log_dir, copy) = (dir.path().join("log"), dir.path().join("crashed"));
    let backends = fresh_backends();
    let node = start(&backends, &log_dir, LogOptions::default());
    for i in 0..200 {
        let dw = if i % 2 == 0 {
            Quorum::All
        } else {
            Quorum::Quorum
        };
        node.put(put(&format!("k{}", i % 50), &format!("v{i}"), dw))
            .await
            .unwrap();
    }
    // The backends themselves synced nothing yet: every acknowledged write
    // lives in the log alone.
    assert!(backends.iter().all(|b| b.durable.lock().is_empty()));
    let survivors = crash(&backends, &log_dir, &copy);
    node.shutdown();

    let node = start(&survivors, &copy, LogOptions::default());
    for k in 0..50 {
        let last = 150 + k;
        let got = value_of(&node, &format!("k{k}")).await;
        assert_eq!(got, Some(format!("v{last}").into_bytes()), "key k{k}");
    }
    assert_eq!(check_indexes(&node), 150, "one entry per key and replica");
    // Replay synced the backends and dropped the replayed segments.
    assert!(survivors.iter().all(|b| !b.durable.lock().is_empty()));
    node.shutdown();
    assert_eq!(commitlog::segment::list(&copy).unwrap(), Vec::<u64>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_drop_segments_and_keep_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let (log_dir, copy) = (dir.path().join("log"), dir.path().join("crashed"));
    let backends = fresh_backends();
    let opts = LogOptions {
        segment_bytes: 4096,
        ..LogOptions::default()
    };
    let node = start(&backends, &log_dir, opts.clone());
    for i in 0..400 {
        node.put(put(&format!("k{}", i % 100), &format!("v{i}"), Quorum::All))
            .await
            .unwrap();
    }
    // Checkpoints run in the background; wait (bounded) until they caught up.
    let mut segments = usize::MAX;
    for _ in 0..200 {
        segments = commitlog::segment::list(&log_dir).unwrap().len();
        if segments <= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        segments <= 2,
        "checkpoints deleted full segments ({segments} left)"
    );
    let survivors = crash(&backends, &log_dir, &copy);
    node.shutdown();
    let node = start(&survivors, &copy, opts);
    for k in 0..100 {
        let got = value_of(&node, &format!("k{k}")).await;
        assert_eq!(got, Some(format!("v{}", 300 + k).into_bytes()), "key k{k}");
    }
    check_indexes(&node);
    node.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_shutdown_leaves_nothing_to_replay() {
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().join("log");
    let backends = fresh_backends();
    let node = start(&backends, &log_dir, LogOptions::default());
    node.put(put("k", "v", Quorum::All)).await.unwrap();
    node.shutdown();
    assert_eq!(
        commitlog::segment::list(&log_dir).unwrap(),
        Vec::<u64>::new()
    );
    let node = start(&backends, &log_dir, LogOptions::default());
    assert_eq!(value_of(&node, "k").await, Some(b"v".to_vec()));
    // Writes after shutdown are refused, not half-applied.
    node.shutdown();
    let err = node.put(put("k2", "v", Quorum::All)).await.unwrap_err();
    assert!(matches!(err, KvError::ShuttingDown), "{err:?}");
    assert!(
        backends
            .iter()
            .all(|b| b.get(b"\0\x07defaultb", b"k2").unwrap().is_none())
    );
}

/// Writes `n` records straight to a log and returns its one segment's bytes.
/// Keys and values (or `<deleted>`) in log order.
type Logged = Vec<(Vec<u8>, Vec<u8>)>;

fn logged_segment(dir: &Path, n: usize) -> (Vec<u8>, Logged) {
    let opts = LogOptions {
        segment_bytes: 1 << 20,
        ..LogOptions::default()
    };
    let log = CommitLog::open(
        dir,
        7,
        opts,
        Box::new(|| Ok(())),
        LogFigures::unregistered(),
    )
    .unwrap();
    let mut written = Vec::new();
    let mut last = 0;
    for i in 0..n {
        let key = format!("key-{i}").into_bytes();
        let value = vec![i as u8; i % 37];
        let op = match i % 5 {
            4 => Op::Delete,
            _ => Op::Put { value: &value },
        };
        let record = Record {
            partition: i as u32 % RING,
            incarnation: commitlog::FIRST_INCARNATION,
            bucket: b"bucket",
            key: &key,
            op,
        };
        let at = log.append(&record, None).unwrap();
        last = at.end;
        let logged = match i % 5 {
            4 => b"<deleted>".to_vec(),
            _ => value.clone(),
        };
        written.push((key.clone(), logged.clone()));
        if i % 5 == 2 {
            // Another replica stored the same bytes: logged as a reference.
            let replica = Record {
                partition: (i as u32 + 1) % RING,
                ..record
            };
            last = log.append(&replica, Some(at.start)).unwrap().end;
            written.push((key, logged));
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    log.when_durable(last, Box::new(move |r| tx.send(r).unwrap()));
    rx.recv().unwrap().unwrap();
    log.close().unwrap();
    let mut bytes = std::fs::read(commitlog::segment::path(dir, 7)).unwrap();
    let (mut references, mut end) = (0, 0);
    commitlog::segment::read(&bytes, |offset, e| {
        let put_same = matches!(&e, Entry::Record(r) if matches!(r.op, Op::PutSame { .. }));
        references += usize::from(put_same);
        let mut frame = Vec::new();
        e.encode_into(&mut frame);
        end = offset + frame.len();
    });
    assert_eq!(references, n / 5, "replicas logged references");
    // The segment is allocated whole; what follows the records is zeros.
    assert!(bytes[end..].iter().all(|b| *b == 0));
    bytes.truncate(end);
    (bytes, written)
}

fn replayed(dir: &Path, bytes: &[u8]) -> Logged {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(commitlog::segment::path(dir, 7), bytes).unwrap();
    let mut got = Vec::new();
    commitlog::recover(dir, |r| {
        let value = match r.op {
            Op::Put { value } => value.to_vec(),
            Op::Delete => b"<deleted>".to_vec(),
            Op::PutSame { .. } => panic!("replay resolves references"),
        };
        got.push((r.key.to_vec(), value));
        Ok(())
    })
    .unwrap();
    got
}

#[test]
fn truncated_or_flipped_logs_replay_only_a_prefix_of_whole_records() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, written) = logged_segment(&dir.path().join("log"), 300);
    assert_eq!(replayed(&dir.path().join("whole"), &bytes), written);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for case in 0..200 {
        let mut damaged = bytes.clone();
        match case % 2 {
            0 => damaged.truncate(rng.random_range(0..bytes.len())),
            _ => damaged[rng.random_range(0..bytes.len())] ^= 1 << rng.random_range(0..8),
        }
        let got = replayed(&dir.path().join(format!("case{case}")), &damaged);
        assert!(got.len() <= written.len());
        assert_eq!(
            got,
            written[..got.len()],
            "case {case}: a prefix, never a changed record"
        );
    }
}

fn o_sync() -> LogOptions {
    LogOptions {
        sync: SyncPolicy::OSync,
        ..LogOptions::default()
    }
}

/// Every record in the segments of `dir`, as the files hold them now (what
/// a crash of the process, not of the machine, would leave).
fn records_in_files(dir: &Path) -> usize {
    let mut n = 0;
    for seq in commitlog::segment::list(dir).unwrap() {
        let bytes = std::fs::read(commitlog::segment::path(dir, seq)).unwrap();
        commitlog::segment::read(&bytes, |_, _| n += 1);
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_reply_waits_for_the_write_or_the_sync_as_the_strategy_says() {
    let hour = Duration::from_secs(3600);
    for sync in [SyncPolicy::None, SyncPolicy::Interval, SyncPolicy::OSync] {
        let dir = tempfile::tempdir().unwrap();
        let log_dir = dir.path().join("log");
        let opts = LogOptions {
            sync,
            sync_interval: hour,
            segment_bytes: 1 << 20,
            ..LogOptions::default()
        };
        let node = start(&fresh_backends(), &log_dir, opts);
        let log = node.commit_log().unwrap().clone();
        for i in 0..20 {
            let acked = node.put(put(&format!("k{i}"), "v", Quorum::All));
            tokio::time::timeout(Duration::from_secs(10), acked)
                .await
                .unwrap_or_else(|_| panic!("{sync:?}: a dw reply waited for nothing"))
                .unwrap();
            // Acknowledged: the log is durable (as the strategy says) past
            // its three replicas' records, which are in the file.
            assert_eq!(log.durable(), log.appended(), "{sync:?}: durable");
            assert_eq!(records_in_files(&log_dir), 3 * (i + 1), "{sync:?}");
            match sync {
                SyncPolicy::OSync => assert_eq!(log.synced(), log.appended()),
                // Nothing synced: the interval is an hour away.
                _ => assert_eq!(log.synced(), 0, "{sync:?}: no sync"),
            }
        }
        // dw = 0 promises nothing: its reply waits for no sync.
        let mut quick = put("quick", "v", Quorum::All);
        quick.options.dw = Some(Quorum::Count(0));
        node.put(quick).await.unwrap();
        if sync == SyncPolicy::OSync {
            assert!(log.synced() < log.appended(), "dw = 0 waited for a sync");
        }
        node.shutdown();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_periodic_sync_refuses_the_next_writes() {
    let dir = tempfile::tempdir().unwrap();
    let backends = fresh_backends();
    let opts = LogOptions {
        sync_interval: Duration::from_millis(5),
        ..LogOptions::default()
    };
    let node = start(&backends, &dir.path().join("log"), opts);
    node.put(put("before", "v", Quorum::All)).await.unwrap();
    node.commit_log().unwrap().inject_sync_failure();
    // The next periodic sync fails; from then on writes are refused. A
    // write waiting on that very sync fails its quorum instead.
    let mut refused = None;
    for i in 0..400 {
        match node.put(put(&format!("k{i}"), "v", Quorum::All)).await {
            Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            Err(KvError::WriteQuorum(_)) => {}
            Err(e) => {
                refused = Some((i, e));
                break;
            }
        }
    }
    let (_, err) = refused.expect("a write is refused after the failed sync");
    assert!(err.to_string().contains("injected failure"), "{err}");
    // That first refusal may have come from a replica after the
    // coordinating vnode wrote (the sync failed between them): a put can
    // fail after some replicas took it, as in Riak. Every put from then
    // on is refused whole, before any vnode writes.
    let err = node
        .put(put("after", "v", Quorum::All))
        .await
        .expect_err("the log stays refusing");
    assert!(err.to_string().contains("injected failure"), "{err}");
    let bucket = BucketRef::default_type("b").storage_bucket();
    let key = "after";
    assert!(
        backends
            .iter()
            .all(|b| b.get(&bucket, key.as_bytes()).unwrap().is_none()),
        "a refused write touches no backend"
    );
    node.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_log_sync_fails_its_writes_and_refuses_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let backends = fresh_backends();
    let node = start(&backends, &dir.path().join("log"), o_sync());
    node.put(put("before", "v", Quorum::All)).await.unwrap();
    node.commit_log().unwrap().inject_sync_failure();

    let err = node.put(put("k", "v1", Quorum::All)).await.unwrap_err();
    assert!(
        matches!(err, KvError::WriteQuorum(_)),
        "a write whose sync failed is not acknowledged: {err:?}"
    );
    let err = node.put(put("k2", "v2", Quorum::All)).await.unwrap_err();
    assert!(
        err.to_string().contains("injected failure"),
        "later writes are refused with the cause: {err}"
    );
    let bucket = BucketRef::default_type("b").storage_bucket();
    assert!(
        backends
            .iter()
            .all(|b| b.get(&bucket, b"k2").unwrap().is_none()),
        "a refused write touches no backend"
    );
    // Reads still work, and earlier writes are intact.
    assert_eq!(value_of(&node, "before").await, Some(b"v".to_vec()));
    node.shutdown();
    // A poisoned log keeps its segments: they replay at the next start.
    assert!(
        !commitlog::segment::list(&dir.path().join("log"))
            .unwrap()
            .is_empty()
    );
}

/// A node over `backends` and the log in `log_dir` with a `sets` bucket
/// type (sets stored in segments: the lossy backends persist).
fn start_with_sets(backends: &[Arc<Lossy>], log_dir: &Path) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let props = serde_json::json!({ "datatype": "set" });
    registry
        .create_type(
            "sets",
            &eddy_model::props::PropsPatch::from_json(props.as_object().unwrap()).unwrap(),
        )
        .unwrap();
    registry.activate_type("sets").unwrap();
    let config = NodeConfig {
        ring_size: RING,
        commit_log_dir: Some(log_dir.to_path_buf()),
        commit_log: LogOptions {
            segment_bytes: 1 << 20,
            ..LogOptions::default()
        },
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let b: Arc<dyn Backend> = backends[p.0 as usize].clone();
        (b, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

async fn set_update(node: &Arc<Node>, adds: Vec<Vec<u8>>, removes: Vec<Vec<u8>>) {
    use eddy_kv::coordinator::datatype::DtUpdateRequest;
    let req = DtUpdateRequest {
        bucket: BucketRef::typed("sets", b"b".to_vec()),
        key: Some(b"k".to_vec()),
        op: eddy_dt::Op::Set(eddy_dt::SetOp { adds, removes }),
        context: None,
        options: PutOptions {
            dw: Some(Quorum::All),
            ..PutOptions::default()
        },
    };
    node.dt_update(req).await.unwrap();
}

async fn set_members(node: &Arc<Node>) -> Result<Option<Vec<Vec<u8>>>, KvError> {
    use eddy_kv::coordinator::datatype::DtFetchRequest;
    let req = DtFetchRequest {
        bucket: BucketRef::typed("sets", b"b".to_vec()),
        key: b"k".to_vec(),
        options: GetOptions::default(),
    };
    Ok(node
        .dt_fetch(req)
        .await?
        .body
        .map(|b| match b.state.value() {
            eddy_dt::Value::Set(members) => members,
            other => panic!("not a set: {other:?}"),
        }))
}

/// The members of the set partition `p` holds, if it holds one; a copy
/// that does not read fails the test.
fn replica_members(node: &Arc<Node>, p: u32) -> Option<Vec<Vec<u8>>> {
    let key = eddy_vnode::msg::StorageKey {
        bucket: BucketRef::typed("sets", b"b".to_vec()).storage_bucket(),
        key: b"k".to_vec(),
    };
    let vnode = node.vnode(Partition(p)).unwrap();
    let object = vnode
        .read(&key)
        .unwrap_or_else(|e| panic!("partition {p}: {e}"))?;
    let state = eddy_vnode::datatype::state_of(&object, eddy_dt::DataType::Set).unwrap()?;
    match state.value() {
        eddy_dt::Value::Set(members) => Some(members),
        other => panic!("not a set: {other:?}"),
    }
}

/// A big set's operations write a root and segments per replica, each a
/// record of its own: a crash after any record of the log (a prefix of it
/// replayed into backends that kept nothing) leaves a set that reads as
/// one of the versions the operations made, never an error or a mix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segmented_set_reads_whole_after_a_crash_at_any_record() {
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().join("log");
    let backends = fresh_backends();
    let node = start_with_sets(&backends, &log_dir);
    let member = |i: usize| format!("m{i:05}").into_bytes();
    let preload = eddy_vnode::segments::SEGMENTED_MIN + 10;
    set_update(&node, (0..preload).map(member).collect(), vec![]).await;
    let mut versions = vec![set_members(&node).await.unwrap().unwrap()];
    type Members = Vec<Vec<u8>>;
    let steps: Vec<(Members, Members)> = vec![
        (vec![member(90_001)], vec![]),
        (vec![member(90_002)], vec![member(3)]),
        (vec![], vec![member(1_500)]),
        (vec![member(90_003), member(7)], vec![]),
    ];
    for (adds, removes) in steps {
        set_update(&node, adds, removes).await;
        versions.push(set_members(&node).await.unwrap().unwrap());
    }
    let segmented = (0..RING).any(|p| {
        let backend = node.partition_backend(Partition(p)).unwrap();
        let storage = BucketRef::typed("sets", b"b".to_vec()).storage_bucket();
        let bytes = backend.get(&storage, b"k").unwrap();
        bytes.is_some_and(|b| eddy_vnode::segments::is_root_record(&b))
    });
    assert!(segmented, "the set is stored in segments");
    let copy = dir.path().join("crashed");
    crash(&backends, &log_dir, &copy);
    node.shutdown();

    let all = cuts(&copy, dir.path());
    assert!(all.len() > 20, "{} records", all.len());
    let mut seen = std::collections::BTreeSet::new();
    for (n, cut) in all.iter().enumerate() {
        let node = start_with_sets(&fresh_backends(), cut);
        let got = set_members(&node).await;
        // Each replica on its own, not only a quorum's merge.
        let replicas: Vec<_> = (0..RING).map(|p| replica_members(&node, p)).collect();
        node.shutdown();
        let got = got.unwrap_or_else(|e| panic!("after record {n}: {e}"));
        for members in replicas.into_iter().flatten().chain(got) {
            let at = versions.iter().position(|v| *v == members);
            assert!(at.is_some(), "after record {n}: a set no operation made");
            seen.insert(at.unwrap());
        }
    }
    assert_eq!(
        seen.len(),
        versions.len(),
        "every version was read at some cut"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_counts_appends_syncs_segments_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let (log_dir, copy) = (dir.path().join("log"), dir.path().join("crashed"));
    let backends = fresh_backends();
    let opts = LogOptions {
        sync: SyncPolicy::OSync,
        segment_bytes: 4096,
        ..LogOptions::default()
    };
    let node = start(&backends, &log_dir, opts.clone());
    for i in 0..100 {
        node.put(put(&format!("k{i}"), &format!("v{i}"), Quorum::All))
            .await
            .unwrap();
    }
    let f = node.commit_log().unwrap().figures();
    assert!(f.appends.get() >= 3 * 100, "a record per replica's write");
    assert!(f.appended_bytes.get() > f.appends.get());
    assert!(f.syncs.get() >= 1, "o_sync waits for fdatasyncs");
    assert_eq!(f.sync_time.count(), f.syncs.get());
    assert!(f.segments_filled.get() >= 1, "4 KiB segments filled");
    for _ in 0..200 {
        if f.checkpoints.get() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(f.checkpoints.get() >= 1, "filled segments are checkpointed");
    assert_eq!(
        f.replayed_records.get(),
        0,
        "nothing to replay at the first start"
    );
    let text = node.metrics_registry().render(&[]);
    let line = format!("eddy_commitlog_appends_total {}", f.appends.get());
    assert!(text.lines().any(|l| l == line), "{text}");

    let survivors = crash(&backends, &log_dir, &copy);
    node.shutdown();
    let node = start(&survivors, &copy, opts);
    let f = node.commit_log().unwrap().figures();
    assert!(f.replayed_segments.get() >= 1);
    assert!(f.replayed_records.get() >= 1);
    node.shutdown();
}
