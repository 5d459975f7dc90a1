//! Neither the vnodes' cache of decoded data type states
//! (`eddy_vnode::states`) nor big sets stored in segments
//! (`eddy_vnode::segments`) change anything a node stores or answers:
//! three nodes with the same actors and clock — one keeping states, one
//! not, one storing big sets in segments (bitcask, which allows them) —
//! take the same random updates of a big set, failed ones, deletes and
//! foreign siblings merged behind the coordinator's back included, and
//! must store the same versions and values and answer the same after
//! every step; the segmented node's records stay consistent (its roots
//! name exactly the segments it holds).

use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_dt::{DataType, Field, FieldOp, FieldType, MapOp, MapUpdate, Op, SetOp, State};
use eddy_kv::coordinator::datatype::{DtFetchRequest, DtUpdateRequest};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content, Dot, RiakObject, Sibling, VersionVector, codec};
use eddy_ring::Partition;
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_vnode::msg::{StorageKey, WritePolicy};
use proptest::prelude::*;
use serde_json::json;

const RING: u32 = 8;
/// Members preloaded: enough for the stored value to be cached, and to be
/// stored in segments where allowed.
const PRELOAD: usize = eddy_vnode::segments::SEGMENTED_MIN + 50;

fn node(cache_bytes: usize) -> Arc<Node> {
    node_over(cache_bytes, None)
}

/// A node whose partitions are bitcasks under `dir` (which allow
/// segments), or in memory (which does not) without one.
fn node_over(cache_bytes: usize, dir: Option<&std::path::Path>) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    for (name, datatype) in [("sets", "set"), ("maps", "map")] {
        let props = json!({ "datatype": datatype });
        registry
            .create_type(
                name,
                &eddy_model::props::PropsPatch::from_json(props.as_object().unwrap()).unwrap(),
            )
            .unwrap();
        registry.activate_type(name).unwrap();
    }
    let config = NodeConfig {
        ring_size: RING,
        clock: eddy_storage::ManualClock::from_us(1_700_000_000_000_000),
        datatype_cache_bytes: cache_bytes,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = match dir {
            Some(dir) => Arc::new(
                Bitcask::open(&dir.join(p.0.to_string()), BitcaskConfig::default()).unwrap(),
            ),
            None => Arc::new(MemoryBackend::new(MemoryConfig::default())),
        };
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

fn bucket(bucket_type: &str) -> BucketRef {
    BucketRef::typed(bucket_type, b"b".to_vec())
}

fn member(prefix: &str, i: usize) -> Vec<u8> {
    format!("{prefix}-{i:06}").into_bytes()
}

/// One step of a history.
#[derive(Clone, Debug)]
enum Step {
    Add(Vec<usize>),
    /// Removes with the context just read (fails when absent).
    Remove(usize),
    /// Adds one member and removes another in one operation.
    AddRemove(usize, usize),
    /// A remove without a context: refused.
    RemoveBlind(usize),
    /// A concurrent sibling of another actor merged into every vnode, as
    /// a handoff or a replica put from elsewhere would.
    Foreign(usize),
    /// The same merged into one replica only (not the coordinating one),
    /// which is then behind the next operation's delta.
    ForeignOne(usize),
    Delete,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec(0..50usize, 1..4).prop_map(Step::Add),
        3 => (0..50usize).prop_map(Step::Remove),
        2 => (0..50usize, 0..50usize).prop_map(|(a, r)| Step::AddRemove(a, r)),
        1 => (0..50usize).prop_map(Step::RemoveBlind),
        1 => (0..50usize).prop_map(Step::Foreign),
        1 => (0..50usize).prop_map(Step::ForeignOne),
        1 => Just(Step::Delete),
    ]
}

async fn fetch(node: &Arc<Node>, bucket_type: &str) -> Option<(eddy_dt::Value, Vec<u8>)> {
    let req = DtFetchRequest {
        bucket: bucket(bucket_type),
        key: b"k".to_vec(),
        options: GetOptions::default(),
    };
    let resp = node.dt_fetch(req).await.unwrap();
    resp.body.map(|b| (b.state.value(), b.context))
}

async fn update(node: &Arc<Node>, bucket_type: &str, op: Op, context: bool) -> String {
    let context = match context {
        true => fetch(node, bucket_type).await.map(|(_, c)| c),
        false => None,
    };
    let req = DtUpdateRequest {
        bucket: bucket(bucket_type),
        key: Some(b"k".to_vec()),
        op,
        context,
        options: PutOptions::default(),
    };
    match node.dt_update(req).await {
        Ok(_) => "ok".into(),
        Err(e) => format!("error: {e}"),
    }
}

fn set_op(adds: Vec<Vec<u8>>, removes: Vec<Vec<u8>>) -> Op {
    Op::Set(SetOp { adds, removes })
}

/// Merges a sibling holding `state`, written by `actor`, into every vnode
/// of `node` (the key's replicas among them).
fn merge_foreign(node: &Arc<Node>, bucket_type: &str, state: &State, actor: u64) {
    merge_foreign_into(
        node,
        bucket_type,
        state,
        actor,
        &(0..RING).map(Partition).collect::<Vec<_>>(),
    );
}

/// The key's replicas but the coordinating one (the first).
fn other_replicas(node: &Arc<Node>, bucket_type: &str) -> Vec<Partition> {
    let list = node.preflist(&bucket(bucket_type), b"k").unwrap();
    list.into_iter().skip(1).map(|(p, _)| p).collect()
}

/// [`merge_foreign`] into the vnodes of `partitions` only.
fn merge_foreign_into(
    node: &Arc<Node>,
    bucket_type: &str,
    state: &State,
    actor: u64,
    partitions: &[Partition],
) {
    let mut content = Content::new(state.encode());
    content.meta.content_type = Some(state.datatype().content_type().as_bytes().to_vec());
    let object = RiakObject {
        vv: VersionVector::from_entries([(Actor(actor), 1)]),
        siblings: vec![Sibling {
            dot: Dot {
                actor: Actor(actor),
                counter: 1,
            },
            content,
        }],
    };
    let encoded = bytes::Bytes::from(codec::encode(&object));
    let key = StorageKey {
        bucket: bucket(bucket_type).storage_bucket(),
        key: b"k".to_vec(),
    };
    let policy = WritePolicy {
        allow_mult: true,
        last_write_wins: false,
        max_siblings: 100,
        write_once: false,
        ttl_secs: 0,
    };
    for p in partitions {
        let vnode = node.vnode(*p).unwrap();
        vnode.merge_handed(&key, encoded.clone(), policy).unwrap();
    }
}

/// What every partition stores under the key: the version vector, and
/// each sibling's dot, content type, deletion and value bytes (each
/// write's vtag is random, so whole encodings differ).
type Stored = Option<(VersionVector, Vec<(Dot, Option<Vec<u8>>, bool, Vec<u8>)>)>;

fn stored(node: &Arc<Node>, bucket_type: &str) -> Vec<Stored> {
    let key = StorageKey {
        bucket: bucket(bucket_type).storage_bucket(),
        key: b"k".to_vec(),
    };
    (0..RING)
        .map(|p| {
            let object = node.vnode(Partition(p)).unwrap().read(&key).unwrap()?;
            let siblings = object
                .siblings
                .into_iter()
                .map(|s| {
                    let meta = s.content.meta;
                    (s.dot, meta.content_type, meta.deleted, s.content.value)
                })
                .collect();
            Some((object.vv, siblings))
        })
        .collect()
}

/// Deletes the key of `bucket_type`'s bucket: what the delete answered.
async fn delete(node: &Arc<Node>, bucket_type: &str) -> String {
    let req = DeleteRequest {
        bucket: bucket(bucket_type),
        key: b"k".to_vec(),
        context: None,
        options: DeleteOptions::default(),
    };
    match node.delete(req).await {
        Ok(_) => "deleted".into(),
        Err(e) => format!("error: {e}"),
    }
}

async fn run_set_step(node: &Arc<Node>, step: &Step, foreign_actor: u64) -> String {
    match step {
        Step::Add(ids) => {
            let adds = ids.iter().map(|i| member("x", *i)).collect();
            update(node, "sets", set_op(adds, vec![]), false).await
        }
        Step::Remove(i) => update(node, "sets", set_op(vec![], vec![member("x", *i)]), true).await,
        Step::AddRemove(a, r) => {
            let op = set_op(vec![member("x", *a)], vec![member("x", *r)]);
            update(node, "sets", op, true).await
        }
        Step::RemoveBlind(i) => {
            update(node, "sets", set_op(vec![], vec![member("x", *i)]), false).await
        }
        Step::Foreign(i) => {
            let mut state = State::new(DataType::Set, 14);
            let op = set_op(vec![member("f", *i), member("x", *i)], vec![]);
            state.apply(Actor(foreign_actor), &op, None, 1).unwrap();
            merge_foreign(node, "sets", &state, foreign_actor);
            "merged".into()
        }
        Step::ForeignOne(i) => {
            let mut state = State::new(DataType::Set, 14);
            let op = set_op(vec![member("f", *i)], vec![]);
            state.apply(Actor(foreign_actor), &op, None, 1).unwrap();
            let replicas = other_replicas(node, "sets");
            let one = replicas[*i % replicas.len()];
            merge_foreign_into(node, "sets", &state, foreign_actor, &[one]);
            "merged".into()
        }
        Step::Delete => delete(node, "sets").await,
    }
}

async fn preload(node: &Arc<Node>) {
    let adds = (0..PRELOAD).map(|i| member("p", i)).collect();
    assert_eq!(
        update(node, "sets", set_op(adds, vec![]), false).await,
        "ok"
    );
}

/// How many of `node`'s partitions hold the key as a root record, after
/// checking that each partition holds exactly the segments its root names.
fn segmented_replicas(node: &Arc<Node>, bucket_type: &str) -> usize {
    use eddy_vnode::segments;
    let storage = bucket(bucket_type).storage_bucket();
    let segments_bucket = segments::segments_bucket(&storage);
    let mut roots = 0;
    for p in 0..RING {
        let backend = node.partition_backend(Partition(p)).unwrap();
        let mut held = std::collections::BTreeSet::new();
        let opts = eddy_storage::FoldOptions::bucket(&segments_bucket);
        backend
            .fold_keys(&opts, &mut |_, k| {
                held.insert(k.to_vec());
                eddy_storage::FoldControl::Continue
            })
            .unwrap();
        let named: std::collections::BTreeSet<Vec<u8>> = match backend.get(&storage, b"k").unwrap()
        {
            Some(bytes) if segments::is_root_record(&bytes) => {
                roots += 1;
                let root = segments::decode_root_record(&bytes).unwrap().root;
                (root.ids().into_iter())
                    .map(|id| segments::segment_key(b"k", id))
                    .collect()
            }
            _ => Default::default(),
        };
        assert_eq!(held, named, "partition {p}: segments held and named differ");
    }
    roots
}

async fn set_history(steps: Vec<Step>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let cached = node(64 << 20);
    let plain = node(0);
    let segmented = node_over(0, Some(dir.path()));
    for node in [&cached, &plain, &segmented] {
        preload(node).await;
    }
    prop_assert!(
        segmented_replicas(&segmented, "sets") > 0,
        "the preload is segmented"
    );
    for (n, step) in steps.iter().enumerate() {
        let foreign_actor = 5_000 + n as u64;
        let a = run_set_step(&cached, step, foreign_actor).await;
        let b = run_set_step(&plain, step, foreign_actor).await;
        let c = run_set_step(&segmented, step, foreign_actor).await;
        prop_assert_eq!(&a, &b, "step {} {:?}", n, step);
        prop_assert_eq!(&a, &c, "step {} {:?}", n, step);
        let fetched = fetch(&plain, "sets").await;
        prop_assert_eq!(&fetch(&cached, "sets").await, &fetched);
        prop_assert_eq!(&fetch(&segmented, "sets").await, &fetched);
        let want = stored(&plain, "sets");
        prop_assert!(stored(&cached, "sets") == want, "step {n}");
        prop_assert!(stored(&segmented, "sets") == want, "step {n}");
        segmented_replicas(&segmented, "sets");
    }
    prop_assert_eq!(plain.datatype_states().hits, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_cached_state_stores_and_answers_what_decoding_would(
        steps in prop::collection::vec(step(), 1..24)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(set_history(steps))?;
    }
}

/// A segmented set's operations reach the other replicas as deltas; a
/// replica that missed a version answers `Behind` and is sent the whole
/// object, and ends up storing what a node without segments stores.
#[tokio::test]
async fn a_replica_behind_a_delta_is_sent_the_whole_object() {
    let dir = tempfile::tempdir().unwrap();
    let segmented = node_over(0, Some(dir.path()));
    let plain = node(0);
    let deltas = |n: &Arc<Node>| {
        let c = &n.metrics;
        (c.datatype_deltas.get(), c.datatype_deltas_behind.get())
    };
    let set_merges = |n: &Arc<Node>| n.metrics.vnodes.of(DataType::Set).merges.get();
    for node in [&segmented, &plain] {
        preload(node).await;
        let before = set_merges(node);
        let op = set_op(vec![member("x", 1)], vec![]);
        assert_eq!(update(node, "sets", op, false).await, "ok");
        assert_eq!(
            set_merges(node) - before,
            2,
            "each other replica merged the operation, a delta or a whole object"
        );
    }
    assert_eq!(
        deltas(&segmented),
        (2, 0),
        "both other replicas took the delta"
    );
    assert_eq!(
        deltas(&plain),
        (0, 0),
        "whole objects where sets are not segmented"
    );

    let mut state = State::new(DataType::Set, 14);
    state
        .apply(Actor(4242), &set_op(vec![member("f", 1)], vec![]), None, 1)
        .unwrap();
    for node in [&segmented, &plain] {
        let behind = other_replicas(node, "sets")[0];
        merge_foreign_into(node, "sets", &state, 4242, &[behind]);
        // No context: its read would repair the replica first.
        let op = set_op(vec![member("x", 2)], vec![]);
        assert_eq!(update(node, "sets", op, false).await, "ok");
    }
    assert_eq!(deltas(&segmented), (4, 1), "one replica was behind");
    // The put had its quorum without that replica: it is caught up in the
    // background.
    let want = stored(&plain, "sets");
    for _ in 0..200 {
        if stored(&segmented, "sets") == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(stored(&segmented, "sets") == want);
    assert_eq!(fetch(&segmented, "sets").await, fetch(&plain, "sets").await);
    segmented_replicas(&segmented, "sets");

    // Both other replicas behind: the put needs an answer from one, so it
    // sends them the whole object before it answers.
    let mut state = State::new(DataType::Set, 14);
    state
        .apply(Actor(4343), &set_op(vec![member("g", 1)], vec![]), None, 1)
        .unwrap();
    for node in [&segmented, &plain] {
        // The fetch above repaired the replicas with the sibling: this
        // operation writes the set in segments again.
        let op = set_op(vec![member("x", 4)], vec![]);
        assert_eq!(update(node, "sets", op, false).await, "ok");
        let others = other_replicas(node, "sets");
        merge_foreign_into(node, "sets", &state, 4343, &others);
        let op = set_op(vec![member("x", 3)], vec![]);
        assert_eq!(update(node, "sets", op, false).await, "ok");
    }
    let (sent, behind) = deltas(&segmented);
    assert_eq!((sent, behind), (6, 3), "both replicas were behind");
    assert!(stored(&segmented, "sets") == stored(&plain, "sets"));
    segmented_replicas(&segmented, "sets");
}

#[tokio::test]
async fn consecutive_updates_of_a_big_set_use_the_cached_state() {
    let cached = node(64 << 20);
    preload(&cached).await;
    for i in 0..5 {
        let op = set_op(vec![member("x", i)], vec![]);
        assert_eq!(update(&cached, "sets", op, false).await, "ok");
    }
    let stats = cached.datatype_states();
    assert_eq!((stats.hits, stats.entries), (5, 1), "{stats:?}");
    let (value, _) = fetch(&cached, "sets").await.unwrap();
    let eddy_dt::Value::Set(members) = value else {
        panic!("not a set")
    };
    assert_eq!(members.len(), PRELOAD + 5);

    // A sibling merged behind the coordinator's back: the next update
    // decodes (a miss) and sees it.
    let mut state = State::new(DataType::Set, 14);
    state
        .apply(Actor(4242), &set_op(vec![member("f", 1)], vec![]), None, 1)
        .unwrap();
    merge_foreign(&cached, "sets", &state, 4242);
    let op = set_op(vec![member("x", 9)], vec![]);
    assert_eq!(update(&cached, "sets", op, false).await, "ok");
    let stats = cached.datatype_states();
    assert_eq!((stats.hits, stats.misses), (5, 1), "{stats:?}");
    let (value, _) = fetch(&cached, "sets").await.unwrap();
    let eddy_dt::Value::Set(members) = value else {
        panic!("not a set")
    };
    assert!(members.contains(&member("f", 1)));
    assert_eq!(members.len(), PRELOAD + 7);
}

#[tokio::test]
async fn a_big_map_updated_with_and_without_the_cache_stores_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let cached = node(64 << 20);
    let plain = node(0);
    let segmented = node_over(0, Some(dir.path()));
    let field = |i: usize| Field::new(member("field", i), FieldType::Counter);
    let incr = |i: usize, by: i64| MapUpdate {
        field: field(i),
        op: FieldOp::Counter(by),
    };
    let preload = Op::Map(MapOp {
        removes: vec![],
        updates: (0..PRELOAD).map(|i| incr(i, 1)).collect(),
    });
    let steps = [
        (
            Op::Map(MapOp {
                removes: vec![],
                updates: vec![incr(3, 5)],
            }),
            false,
        ),
        (
            Op::Map(MapOp {
                removes: vec![field(4)],
                updates: vec![incr(4, 2)],
            }),
            true,
        ),
        (
            Op::Map(MapOp {
                removes: vec![field(10_000)],
                updates: vec![],
            }),
            true,
        ),
        (
            Op::Map(MapOp {
                removes: vec![field(7)],
                updates: vec![],
            }),
            true,
        ),
        (
            Op::Map(MapOp {
                removes: vec![],
                updates: vec![incr(7, 1)],
            }),
            false,
        ),
    ];
    for node in [&cached, &plain, &segmented] {
        assert_eq!(update(node, "maps", preload.clone(), false).await, "ok");
    }
    assert!(
        segmented_replicas(&segmented, "maps") > 0,
        "the map is segmented"
    );
    for (op, context) in steps {
        let a = update(&cached, "maps", op.clone(), context).await;
        let b = update(&plain, "maps", op.clone(), context).await;
        let c = update(&segmented, "maps", op, context).await;
        assert_eq!(a, b);
        assert_eq!(a, c);
        let want = fetch(&plain, "maps").await;
        assert_eq!(fetch(&cached, "maps").await, want);
        assert_eq!(fetch(&segmented, "maps").await, want);
        let want = stored(&plain, "maps");
        assert!(stored(&cached, "maps") == want);
        assert!(stored(&segmented, "maps") == want);
        segmented_replicas(&segmented, "maps");
    }
    let deltas = segmented.metrics.datatype_deltas.get();
    assert!(deltas > 0, "map operations went out as deltas");
    assert!(
        cached.datatype_states().hits >= 3,
        "{:?}",
        cached.datatype_states()
    );
}

/// A segment whose bytes changed on disk fails its replica's read (the
/// root's digest), never reads as another set; the other replicas answer.
/// A node over `dir` with the big set preloaded, and the first replica
/// of its key: where the segment tests reach into a backend.
struct FirstReplica {
    node: Arc<Node>,
    storage: Vec<u8>,
    key: StorageKey,
    first: Partition,
    backend: Arc<dyn eddy_storage::Backend>,
}

async fn first_replica(dir: &std::path::Path) -> FirstReplica {
    let node = node_over(0, Some(dir));
    preload(&node).await;
    let storage = bucket("sets").storage_bucket();
    let key = StorageKey {
        bucket: storage.clone(),
        key: b"k".to_vec(),
    };
    let first = node.preflist(&bucket("sets"), b"k").unwrap()[0].0;
    let backend = node.partition_backend(first).unwrap();
    FirstReplica {
        node,
        storage,
        key,
        first,
        backend,
    }
}

#[tokio::test]
async fn a_damaged_segment_fails_its_replica_never_reads_wrong() {
    use eddy_vnode::segments;
    let dir = tempfile::tempdir().unwrap();
    let FirstReplica {
        node,
        storage,
        key,
        first,
        backend,
    } = first_replica(dir.path()).await;
    let op = set_op(vec![member("x", 1)], vec![]);
    assert_eq!(update(&node, "sets", op, false).await, "ok");
    let want = fetch(&node, "sets").await;
    let root = segments::decode_root_record(&backend.get(&storage, b"k").unwrap().unwrap())
        .unwrap()
        .root;
    let seg_key = segments::segment_key(b"k", root.id(1));
    let seg_bucket = segments::segments_bucket(&storage);
    let mut bytes = backend.get(&seg_bucket, &seg_key).unwrap().unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    backend
        .put(
            &seg_bucket,
            &seg_key,
            &bytes,
            &[],
            eddy_storage::WriteOptions::NO_SYNC,
        )
        .unwrap();
    let read = node.vnode(first).unwrap().read(&key);
    assert!(matches!(read, Err(KvError::DatatypeCorrupt(_))), "{read:?}");
    assert_eq!(
        fetch(&node, "sets").await,
        want,
        "the other replicas answer"
    );
}

/// A read without the key's lock (a get, a fold, handoff, a whole-object
/// catch-up) that took a root just before an update replaced one of its
/// segments reads the new root, not "a segment is missing"; a root whose
/// segment is gone with the root unchanged still fails.
#[tokio::test]
async fn a_root_replaced_while_read_is_read_again() {
    use eddy_vnode::segments;
    let dir = tempfile::tempdir().unwrap();
    let FirstReplica {
        node,
        storage,
        key,
        first: _,
        backend,
    } = first_replica(dir.path()).await;
    let stale = backend.get(&storage, b"k").unwrap().unwrap();
    assert!(segments::is_root_record(&stale));
    let op = set_op(vec![member("x", 1)], vec![]);
    assert_eq!(update(&node, "sets", op, false).await, "ok");
    let now = backend.get(&storage, b"k").unwrap().unwrap();
    let old = segments::decode_root_record(&stale).unwrap().root;
    let new = segments::decode_root_record(&now).unwrap().root;
    assert!(
        old.ids().iter().any(|id| !new.ids().contains(id)),
        "the update replaced a segment: {:?} → {:?}",
        old.ids(),
        new.ids()
    );
    let want = segments::whole_bytes(&*backend, &key, now.clone()).unwrap();
    assert_eq!(
        segments::whole_bytes(&*backend, &key, stale.clone()).unwrap(),
        want
    );

    // The stale root put back without its segments: nothing newer to read.
    backend
        .put(
            &storage,
            b"k",
            &stale,
            &[],
            eddy_storage::WriteOptions::NO_SYNC,
        )
        .unwrap();
    let read = segments::whole_bytes(&*backend, &key, stale);
    assert!(matches!(read, Err(KvError::DatatypeCorrupt(_))), "{read:?}");
}

/// One step of a big map's history.
#[derive(Clone, Debug)]
enum MapStep {
    /// Increments counter field `i` by the amount.
    Incr(usize, i64),
    /// Adds a member to set field `i`.
    SetAdd(usize, usize),
    /// Assigns register field `i`.
    Assign(usize, usize),
    /// Removes field `i` (a counter) with the context just read, or
    /// without one (refused when absent).
    Remove(usize, bool),
    /// Removes counter field `a` and increments counter field `b`.
    RemoveIncr(usize, usize),
    /// A concurrent version of another actor merged into one replica.
    ForeignOne(usize),
    Delete,
}

fn map_step() -> impl Strategy<Value = MapStep> {
    let field = 0..PRELOAD + 20;
    prop_oneof![
        4 => (field.clone(), -3..4i64).prop_map(|(i, n)| MapStep::Incr(i, n)),
        2 => (0..20usize, 0..30usize).prop_map(|(i, m)| MapStep::SetAdd(i, m)),
        2 => (0..20usize, 0..30usize).prop_map(|(i, v)| MapStep::Assign(i, v)),
        3 => (field.clone(), any::<bool>()).prop_map(|(i, c)| MapStep::Remove(i, c)),
        2 => (field.clone(), field).prop_map(|(a, b)| MapStep::RemoveIncr(a, b)),
        1 => (0..20usize).prop_map(MapStep::ForeignOne),
        1 => Just(MapStep::Delete),
    ]
}

fn counter_field(i: usize) -> Field {
    Field::new(member("field", i), FieldType::Counter)
}

fn map_update(field: Field, op: FieldOp) -> MapUpdate {
    MapUpdate { field, op }
}

async fn run_map_step(node: &Arc<Node>, step: &MapStep, foreign_actor: u64) -> String {
    let map_op = |removes: Vec<Field>, updates: Vec<MapUpdate>| Op::Map(MapOp { removes, updates });
    match step {
        MapStep::Incr(i, n) => {
            let u = map_update(counter_field(*i), FieldOp::Counter(*n));
            update(node, "maps", map_op(vec![], vec![u]), false).await
        }
        MapStep::SetAdd(i, m) => {
            let field = Field::new(member("tags", *i), FieldType::Set);
            let op = FieldOp::Set(SetOp {
                adds: vec![member("t", *m)],
                removes: vec![],
            });
            update(
                node,
                "maps",
                map_op(vec![], vec![map_update(field, op)]),
                false,
            )
            .await
        }
        MapStep::Assign(i, v) => {
            let field = Field::new(member("name", *i), FieldType::Register);
            let op = FieldOp::Register(member("v", *v));
            update(
                node,
                "maps",
                map_op(vec![], vec![map_update(field, op)]),
                false,
            )
            .await
        }
        MapStep::Remove(i, context) => {
            update(
                node,
                "maps",
                map_op(vec![counter_field(*i)], vec![]),
                *context,
            )
            .await
        }
        MapStep::RemoveIncr(a, b) => {
            let u = map_update(counter_field(*b), FieldOp::Counter(1));
            update(node, "maps", map_op(vec![counter_field(*a)], vec![u]), true).await
        }
        MapStep::ForeignOne(i) => {
            let mut state = State::new(DataType::Map, 14);
            let u = map_update(counter_field(*i), FieldOp::Counter(7));
            state
                .apply(Actor(foreign_actor), &map_op(vec![], vec![u]), None, 1)
                .unwrap();
            let replicas = other_replicas(node, "maps");
            let one = replicas[*i % replicas.len()];
            merge_foreign_into(node, "maps", &state, foreign_actor, &[one]);
            "merged".into()
        }
        MapStep::Delete => delete(node, "maps").await,
    }
}

async fn map_history(steps: Vec<MapStep>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let plain = node(0);
    let segmented = node_over(0, Some(dir.path()));
    let preload = Op::Map(MapOp {
        removes: vec![],
        updates: (0..PRELOAD)
            .map(|i| map_update(counter_field(i), FieldOp::Counter(1)))
            .collect(),
    });
    for node in [&plain, &segmented] {
        prop_assert_eq!(update(node, "maps", preload.clone(), false).await, "ok");
    }
    prop_assert!(
        segmented_replicas(&segmented, "maps") > 0,
        "the preload is segmented"
    );
    for (n, step) in steps.iter().enumerate() {
        let foreign_actor = 7_000 + n as u64;
        let a = run_map_step(&plain, step, foreign_actor).await;
        let b = run_map_step(&segmented, step, foreign_actor).await;
        prop_assert_eq!(&a, &b, "step {} {:?}", n, step);
        prop_assert_eq!(fetch(&segmented, "maps").await, fetch(&plain, "maps").await);
        prop_assert!(
            stored(&segmented, "maps") == stored(&plain, "maps"),
            "step {n}"
        );
        segmented_replicas(&segmented, "maps");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn a_segmented_map_stores_and_answers_what_a_whole_one_would(
        steps in prop::collection::vec(map_step(), 1..20)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(map_history(steps))?;
    }
}

/// An update of a segmented set that asks for the body gets the whole new
/// value and its context (read from the coordinating vnode after the
/// quorum), as an unsegmented one does.
#[tokio::test]
async fn return_body_of_a_segmented_update_is_the_whole_value() {
    let dir = tempfile::tempdir().unwrap();
    let segmented = node_over(0, Some(dir.path()));
    let plain = node(0);
    let mut bodies = Vec::new();
    for node in [&segmented, &plain] {
        preload(node).await;
        let req = DtUpdateRequest {
            bucket: bucket("sets"),
            key: Some(b"k".to_vec()),
            op: set_op(vec![member("x", 1)], vec![member("p", 0)]),
            context: fetch(node, "sets").await.map(|(_, c)| c),
            options: PutOptions {
                return_body: true,
                ..PutOptions::default()
            },
        };
        let body = node.dt_update(req).await.unwrap().body.unwrap();
        bodies.push((body.state.value(), body.context));
    }
    assert!(segmented.metrics.datatype_deltas.get() > 0);
    let eddy_dt::Value::Set(members) = &bodies[0].0 else {
        panic!("not a set")
    };
    assert_eq!(members.len(), PRELOAD, "one added, one removed");
    assert!(members.contains(&member("x", 1)) && !members.contains(&member("p", 0)));
    assert_eq!(bodies[0], bodies[1]);
}
