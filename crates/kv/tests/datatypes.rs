//! Data type updates and fetches on one node over memory backends (three
//! replica vnodes, each its own actor): what the PB and HTTP front ends
//! rely on (design note 020).

use std::sync::Arc;

use eddy_dt::{
    DataType, DtError, Field, FieldOp, FieldType, FieldValue, MapOp, MapUpdate, Op, SetOp, Value,
};
use eddy_kv::coordinator::datatype::{DtFetchRequest, DtUpdateRequest};
use eddy_kv::*;
use eddy_model::error::DatatypeBucketError;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use serde_json::json;

fn node() -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    for (name, props) in [
        ("counters", json!({"datatype": "counter"})),
        ("sets", json!({"datatype": "set"})),
        ("maps", json!({"datatype": "map"})),
        ("hlls", json!({"datatype": "hll"})),
        ("gsets", json!({"datatype": "gset"})),
        ("plain", json!({})),
    ] {
        registry
            .create_type(
                name,
                &eddy_model::props::PropsPatch::from_json(props.as_object().unwrap()).unwrap(),
            )
            .unwrap();
        registry.activate_type(name).unwrap();
    }
    let config = NodeConfig {
        ring_size: 8,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

fn update(bucket_type: &str, key: &str, op: Op, context: Option<Vec<u8>>) -> DtUpdateRequest {
    DtUpdateRequest {
        bucket: BucketRef::typed(bucket_type, b"b".to_vec()),
        key: Some(key.as_bytes().to_vec()),
        op,
        context,
        options: PutOptions {
            return_body: true,
            ..PutOptions::default()
        },
    }
}

async fn fetch(node: &Arc<Node>, bucket_type: &str, key: &str) -> Option<(Value, Vec<u8>)> {
    let req = DtFetchRequest {
        bucket: BucketRef::typed(bucket_type, b"b".to_vec()),
        key: key.as_bytes().to_vec(),
        options: GetOptions::default(),
    };
    let resp = node.dt_fetch(req).await.unwrap();
    resp.body.map(|b| (b.state.value(), b.context))
}

fn set_op(adds: &[&str], removes: &[&str]) -> Op {
    let v = |l: &[&str]| l.iter().map(|s| s.as_bytes().to_vec()).collect();
    Op::Set(SetOp {
        adds: v(adds),
        removes: v(removes),
    })
}

fn members(l: &[&str]) -> Value {
    Value::Set(l.iter().map(|s| s.as_bytes().to_vec()).collect())
}

#[tokio::test]
async fn counters_count_every_increment_and_decrement() {
    let node = node();
    assert_eq!(fetch(&node, "counters", "c").await, None);
    for n in [5, -3, 10] {
        node.dt_update(update("counters", "c", Op::Counter(n), None))
            .await
            .unwrap();
    }
    let (value, context) = fetch(&node, "counters", "c").await.unwrap();
    assert_eq!(value, Value::Counter(12));
    assert!(context.is_empty(), "counters have no context");
    let err = node
        .dt_update(update("counters", "c", Op::Counter(i64::MAX), None))
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::Datatype(DtError::Overflow)), "{err}");
    assert_eq!(
        fetch(&node, "counters", "c").await.unwrap().0,
        Value::Counter(12),
        "the refused increment changed nothing"
    );
}

#[tokio::test]
async fn set_removes_need_a_context_or_the_member_and_add_wins_in_one_op() {
    let node = node();
    let resp = node
        .dt_update(update("sets", "s", set_op(&["x", "y"], &[]), None))
        .await
        .unwrap();
    let body = resp.body.unwrap();
    assert_eq!(body.state.value(), members(&["x", "y"]));
    let err = node
        .dt_update(update("sets", "s", set_op(&[], &["absent"]), None))
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::Datatype(DtError::NotPresent(_))));
    let (_, context) = fetch(&node, "sets", "s").await.unwrap();
    // Add and remove of one member with the context read: the add wins.
    let op = set_op(&["z"], &["z", "x", "absent"]);
    node.dt_update(update("sets", "s", op, Some(context.clone())))
        .await
        .unwrap();
    assert_eq!(
        fetch(&node, "sets", "s").await.unwrap().0,
        members(&["y", "z"])
    );
    // A remove with an old context (read before z) leaves z.
    node.dt_update(update("sets", "s", set_op(&[], &["z", "y"]), Some(context)))
        .await
        .unwrap();
    assert_eq!(fetch(&node, "sets", "s").await.unwrap().0, members(&["z"]));
}

#[tokio::test]
async fn a_context_from_another_key_or_corrupted_is_refused() {
    let node = node();
    node.dt_update(update("sets", "s1", set_op(&["a"], &[]), None))
        .await
        .unwrap();
    node.dt_update(update("sets", "s2", set_op(&["a"], &[]), None))
        .await
        .unwrap();
    let (_, context) = fetch(&node, "sets", "s1").await.unwrap();
    let err = node
        .dt_update(update(
            "sets",
            "s2",
            set_op(&[], &["a"]),
            Some(context.clone()),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid context: it was read from another key"
    );
    let mut flipped = context;
    flipped[3] ^= 1;
    let err = node
        .dt_update(update("sets", "s1", set_op(&[], &["a"]), Some(flipped)))
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::DatatypeContext(_)), "{err}");
    assert_eq!(fetch(&node, "sets", "s1").await.unwrap().0, members(&["a"]));
}

fn map_update(name: &str, op: FieldOp) -> MapUpdate {
    MapUpdate {
        field: Field::new(name, op.kind()),
        op,
    }
}

#[tokio::test]
async fn a_map_removes_then_updates_a_field_in_one_op() {
    let node = node();
    let op = Op::Map(MapOp {
        removes: vec![],
        updates: vec![
            map_update("c", FieldOp::Counter(5)),
            map_update("r", FieldOp::Register(b"v".to_vec())),
        ],
    });
    node.dt_update(update("maps", "m", op, None)).await.unwrap();
    let (_, context) = fetch(&node, "maps", "m").await.unwrap();
    let op = Op::Map(MapOp {
        removes: vec![Field::new("c", FieldType::Counter)],
        updates: vec![map_update("c", FieldOp::Counter(2))],
    });
    node.dt_update(update("maps", "m", op, Some(context)))
        .await
        .unwrap();
    let (value, _) = fetch(&node, "maps", "m").await.unwrap();
    assert_eq!(
        value,
        Value::Map(vec![
            (Field::new("c", FieldType::Counter), FieldValue::Counter(2)),
            (
                Field::new("r", FieldType::Register),
                FieldValue::Register(b"v".to_vec())
            ),
        ])
    );
}

#[tokio::test]
async fn hlls_and_grow_only_sets_take_adds() {
    let node = node();
    let adds: Vec<Vec<u8>> = ["a", "b", "c", "d", "e", "a"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    node.dt_update(update("hlls", "h", Op::Hll(adds.clone()), None))
        .await
        .unwrap();
    assert_eq!(fetch(&node, "hlls", "h").await.unwrap().0, Value::Hll(5));
    node.dt_update(update("gsets", "g", Op::GSet(adds), None))
        .await
        .unwrap();
    let Value::GSet(m) = fetch(&node, "gsets", "g").await.unwrap().0 else {
        panic!("not a gset");
    };
    assert_eq!(m.len(), 5);
}

#[tokio::test]
async fn buckets_refuse_what_they_cannot_hold() {
    let node = node();
    let err = node
        .dt_update(update("sets", "s", Op::Counter(1), None))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Operation type is `counter` but bucket type is `set`."
    );
    let err = node
        .dt_update(update("plain", "s", Op::Counter(1), None))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        KvError::DatatypeBucket(DatatypeBucketError::NoDatatype(_))
    ));
    let legacy = |op| DtUpdateRequest {
        bucket: BucketRef::default_type(b"counts".to_vec()),
        ..update("x", "k", op, None)
    };
    let err = node.dt_update(legacy(Op::Counter(1))).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Counters require bucket property 'allow_mult=true'"
    );
    let plain = PutRequest {
        bucket: BucketRef::typed("sets", b"b".to_vec()),
        key: Some(b"s".to_vec()),
        context: None,
        content: Content::new(b"raw".to_vec()),
        options: PutOptions::default(),
    };
    let err = node.put(plain).await.unwrap_err();
    assert!(matches!(
        err,
        KvError::DatatypeBucket(DatatypeBucketError::PlainPut { .. })
    ));
    let mut deep = MapOp::default();
    for _ in 0..eddy_dt::MAP_DEPTH_MAX {
        deep = MapOp {
            removes: vec![],
            updates: vec![map_update("m", FieldOp::Map(deep))],
        };
    }
    let err = node
        .dt_update(update("maps", "m", Op::Map(deep), None))
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::Datatype(DtError::TooDeep { .. })));
}

#[tokio::test]
async fn legacy_counters_live_in_default_buckets_with_allow_mult() {
    let node = node();
    let bucket = BucketRef::default_type(b"counts".to_vec());
    let patch = json!({"allow_mult": true});
    node.registry()
        .set_bucket_props(
            "default",
            b"counts",
            &eddy_model::props::PropsPatch::from_json(patch.as_object().unwrap()).unwrap(),
        )
        .unwrap();
    for n in [10, 5, -5] {
        let req = DtUpdateRequest {
            bucket: bucket.clone(),
            ..update("x", "k", Op::Counter(n), None)
        };
        node.dt_update(req).await.unwrap();
    }
    let req = DtFetchRequest {
        bucket: bucket.clone(),
        key: b"k".to_vec(),
        options: GetOptions::default(),
    };
    let resp = node.dt_fetch(req).await.unwrap();
    assert_eq!(resp.body.unwrap().state.value(), Value::Counter(10));
    let req = DtUpdateRequest {
        bucket,
        ..update("x", "k", set_op(&["a"], &[]), None)
    };
    let err = node.dt_update(req).await.unwrap_err();
    assert_eq!(err.to_string(), "non-counter operation on default bucket");
}

#[tokio::test]
async fn a_generated_key_is_reported_and_delete_makes_the_value_not_found() {
    let node = node();
    let mut req = update("counters", "unused", Op::Counter(1), None);
    req.key = None;
    let resp = node.dt_update(req).await.unwrap();
    assert!(resp.generated);
    let key = String::from_utf8(resp.key).unwrap();
    assert_eq!(
        fetch(&node, "counters", &key).await.unwrap().0,
        Value::Counter(1)
    );
    let del = DeleteRequest {
        bucket: BucketRef::typed("counters", b"b".to_vec()),
        key: key.as_bytes().to_vec(),
        context: None,
        options: DeleteOptions::default(),
    };
    node.delete(del).await.unwrap();
    assert_eq!(fetch(&node, "counters", &key).await, None);
    let req = DtFetchRequest {
        bucket: BucketRef::typed("counters", b"b".to_vec()),
        key: key.as_bytes().to_vec(),
        options: GetOptions::default(),
    };
    assert!(
        node.dt_fetch(req).await.unwrap().deleted,
        "the tombstone is reported"
    );
    node.dt_update(update("counters", &key, Op::Counter(4), None))
        .await
        .unwrap();
    assert_eq!(
        fetch(&node, "counters", &key).await.unwrap().0,
        Value::Counter(4),
        "an update after a delete starts from nothing"
    );
}

#[tokio::test]
async fn fetches_and_updates_are_counted_and_timed_per_type() {
    let node = node();
    for n in [1, 2] {
        node.dt_update(update("counters", "c", Op::Counter(n), None))
            .await
            .unwrap();
    }
    node.dt_update(update("sets", "s", set_op(&["x"], &[]), None))
        .await
        .unwrap();
    fetch(&node, "sets", "s").await.unwrap();
    assert_eq!(fetch(&node, "maps", "absent").await, None);
    let m = &node.metrics;
    let of = |t| m.datatypes.of(t);
    let counts = |t| {
        let f = of(t);
        (
            f.puts.get(),
            f.put_fsm_time.count(),
            f.gets.get(),
            f.get_fsm_time.count(),
        )
    };
    assert_eq!(counts(DataType::Counter), (2, 2, 0, 0));
    assert_eq!(counts(DataType::Set), (1, 1, 1, 1));
    assert_eq!(counts(DataType::Map), (0, 0, 1, 1));
    assert_eq!(counts(DataType::Hll), (0, 0, 0, 0));
    // Siblings and sizes only of an object found.
    assert_eq!(of(DataType::Set).get_fsm_siblings.count(), 1);
    assert_eq!(of(DataType::Map).get_fsm_objsize.count(), 0);
    // Each is a put or a get of the node's too.
    assert_eq!((m.puts.get(), m.put_fsm_time.count()), (3, 3));
    assert_eq!((m.gets.get(), m.get_fsm_time.count()), (2, 2));
}
