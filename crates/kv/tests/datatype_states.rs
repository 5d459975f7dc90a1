//! The vnodes' cache of decoded data type states changes nothing a node
//! stores or answers (`eddy_kv::vnode::states`): two nodes with the same
//! actors and clock, one keeping states and one not, take the same random
//! updates of a big set, failed ones, deletes and foreign siblings merged
//! behind the coordinator's back included, and must store the same
//! versions and value bytes and answer the same after every step.

use std::sync::Arc;

use eddy_dt::{DataType, Field, FieldOp, FieldType, MapOp, MapUpdate, Op, SetOp, State};
use eddy_kv::coordinator::datatype::{DtFetchRequest, DtUpdateRequest};
use eddy_kv::props::BucketProps;
use eddy_kv::types::BucketRegistry;
use eddy_kv::vnode::msg::{StorageKey, WritePolicy};
use eddy_kv::*;
use eddy_object::{Actor, Content, Dot, RiakObject, Sibling, VersionVector, codec};
use eddy_ring::Partition;
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use proptest::prelude::*;
use serde_json::json;

const RING: u32 = 8;
/// Members preloaded: enough for the stored value to be cached.
const PRELOAD: usize = 2_000;

fn node(cache_bytes: usize) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::in_memory(BucketProps::default()));
    for (name, datatype) in [("sets", "set"), ("maps", "map")] {
        let props = json!({ "datatype": datatype });
        registry
            .create_type(name, props.as_object().unwrap())
            .unwrap();
        registry.activate_type(name).unwrap();
    }
    let config = NodeConfig {
        ring_size: RING,
        clock: Arc::new(eddy_kv::clock::ManualClock::new(1_700_000_000_000_000)),
        datatype_cache_bytes: cache_bytes,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
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
    Delete,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec(0..50usize, 1..4).prop_map(Step::Add),
        3 => (0..50usize).prop_map(Step::Remove),
        2 => (0..50usize, 0..50usize).prop_map(|(a, r)| Step::AddRemove(a, r)),
        1 => (0..50usize).prop_map(Step::RemoveBlind),
        1 => (0..50usize).prop_map(Step::Foreign),
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
    };
    for p in 0..RING {
        let vnode = node.vnode(Partition(p)).unwrap();
        vnode.merge_handed(&key, encoded.clone(), policy).unwrap();
    }
}

/// What every partition stores under the key: the version vector, and
/// each sibling's dot, content type, deletion and value bytes (each
/// write's vtag is random, so whole encodings differ).
type Stored = Option<(VersionVector, Vec<(Dot, Option<Vec<u8>>, bool, Vec<u8>)>)>;

fn stored(node: &Arc<Node>, bucket_type: &str) -> Vec<Stored> {
    let storage = bucket(bucket_type).storage_bucket();
    (0..RING)
        .map(|p| {
            let backend = node.partition_backend(Partition(p)).unwrap();
            let bytes = backend.get(&storage, b"k").unwrap()?;
            let object = codec::decode(&bytes).unwrap();
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
        Step::Delete => {
            let req = DeleteRequest {
                bucket: bucket("sets"),
                key: b"k".to_vec(),
                context: None,
                options: DeleteOptions::default(),
            };
            match node.delete(req).await {
                Ok(_) => "deleted".into(),
                Err(e) => format!("error: {e}"),
            }
        }
    }
}

async fn preload(node: &Arc<Node>) {
    let adds = (0..PRELOAD).map(|i| member("p", i)).collect();
    assert_eq!(
        update(node, "sets", set_op(adds, vec![]), false).await,
        "ok"
    );
}

async fn set_history(steps: Vec<Step>) -> Result<(), TestCaseError> {
    let cached = node(64 << 20);
    let plain = node(0);
    preload(&cached).await;
    preload(&plain).await;
    for (n, step) in steps.iter().enumerate() {
        let foreign_actor = 5_000 + n as u64;
        let a = run_set_step(&cached, step, foreign_actor).await;
        let b = run_set_step(&plain, step, foreign_actor).await;
        prop_assert_eq!(&a, &b, "step {} {:?}", n, step);
        prop_assert_eq!(fetch(&cached, "sets").await, fetch(&plain, "sets").await);
        prop_assert!(
            stored(&cached, "sets") == stored(&plain, "sets"),
            "step {n}"
        );
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
    let cached = node(64 << 20);
    let plain = node(0);
    let field = |i: usize| Field::new(member("field", i), FieldType::Counter);
    let incr = |i: usize, by: i64| MapUpdate {
        field: field(i),
        op: FieldOp::Counter(by),
    };
    let preload = Op::Map(MapOp {
        removes: vec![],
        updates: (0..1_500).map(|i| incr(i, 1)).collect(),
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
    for node in [&cached, &plain] {
        assert_eq!(update(node, "maps", preload.clone(), false).await, "ok");
    }
    for (op, context) in steps {
        let a = update(&cached, "maps", op.clone(), context).await;
        let b = update(&plain, "maps", op, context).await;
        assert_eq!(a, b);
        assert_eq!(fetch(&cached, "maps").await, fetch(&plain, "maps").await);
        assert!(stored(&cached, "maps") == stored(&plain, "maps"));
    }
    assert!(
        cached.datatype_states().hits >= 3,
        "{:?}",
        cached.datatype_states()
    );
}
