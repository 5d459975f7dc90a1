//! Every bucket property means what Riak says, or a change to it is
//! refused: node_confirms is honoured by puts (a single node cannot confirm
//! two), sync_on_write is validated, and the properties Eddy does not
//! implement accept only Riak's defaults, for buckets and bucket types.

use std::sync::Arc;

use eddy_kv::*;
use eddy_model::error::PutFailure;
use eddy_model::props::{BucketProps, PropsError, PropsPatch, SyncOnWrite};
use eddy_model::quorum::QuorumError;
use eddy_model::types::{BucketRegistry, DEFAULT_TYPE, RegistryError};
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use serde_json::{Value, json};

fn node() -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: 8,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(2000 + u64::from(p.0)))
    })
    .unwrap()
}

/// A client's patch, as the HTTP edge reads it.
fn parsed(v: &Value) -> Result<PropsPatch, PropsError> {
    PropsPatch::from_json(v.as_object().unwrap())
}

fn patch(v: Value) -> PropsPatch {
    parsed(&v).unwrap()
}

fn put_req(bucket: &BucketRef, key: &str) -> PutRequest {
    PutRequest {
        bucket: bucket.clone(),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(b"v".to_vec()),
        options: PutOptions::default(),
    }
}

fn refused_fields(e: KvError) -> Vec<(String, String)> {
    match e {
        KvError::Registry(RegistryError::Props(PropsError(fields))) => fields,
        other => panic!("not a props refusal: {other}"),
    }
}

/// What basho_bench's nhs driver does: node_confirms = 2 on one node.
#[tokio::test]
async fn a_single_node_refuses_writes_that_need_two_nodes_to_confirm() {
    let node = node();
    let b = BucketRef::default_type(b"nhs".to_vec());
    node.set_bucket_props(&b, &patch(json!({"node_confirms": 2})))
        .unwrap();
    let err = node.put(put_req(&b, "k")).await.unwrap_err();
    let failure = PutFailure::NodeConfirms { needed: 2, got: 1 };
    assert!(
        matches!(err, KvError::WriteQuorum(f) if f == failure),
        "{err}"
    );

    // One node confirms one; a quorum word resolves against n_val.
    node.set_bucket_props(&b, &patch(json!({"node_confirms": 1})))
        .unwrap();
    node.put(put_req(&b, "k")).await.unwrap();
    node.set_bucket_props(&b, &patch(json!({"node_confirms": "quorum"})))
        .unwrap();
    assert!(matches!(
        node.put(put_req(&b, "k")).await,
        Err(KvError::WriteQuorum(PutFailure::NodeConfirms {
            needed: 2,
            got: 1
        }))
    ));
    node.set_bucket_props(&b, &patch(json!({"node_confirms": 0})))
        .unwrap();
    node.put(put_req(&b, "k")).await.unwrap();
}

#[tokio::test]
async fn node_confirms_above_n_val_is_refused_like_w() {
    let node = node();
    let b = BucketRef::default_type(b"b".to_vec());
    node.set_bucket_props(&b, &patch(json!({"node_confirms": 4})))
        .unwrap();
    let err = node.put(put_req(&b, "k")).await.unwrap_err();
    assert!(
        matches!(
            err,
            KvError::Quorum(QuorumError::ExceedsNVal {
                name: "node_confirms",
                value: 4,
                n_val: 3
            })
        ),
        "{err}"
    );
    let props = node.bucket_props(&b).unwrap();
    assert_eq!(props.node_confirms(Some(Quorum::All)).unwrap(), 3);
    assert!(props.node_confirms(None).is_err());
}

#[test]
fn node_confirms_and_sync_on_write_are_validated() {
    let node = node();
    let b = BucketRef::default_type(b"b".to_vec());
    let defaults = node.bucket_props(&b).unwrap();
    assert_eq!(defaults.node_confirms(None).unwrap(), 0);
    assert_eq!(defaults.sync_on_write, SyncOnWrite::Backend);
    let json = defaults.to_json();
    assert_eq!(
        (&json["node_confirms"], &json["sync_on_write"]),
        (&json!(0), &json!("backend"))
    );

    for (field, bad) in [
        ("node_confirms", json!("most")),
        ("node_confirms", json!(-1)),
        ("sync_on_write", json!("sometimes")),
        ("sync_on_write", json!(true)),
    ] {
        // Refused where the patch is read, before any change.
        let PropsError(fields) = parsed(&json!({"n_val": 2, field: bad})).unwrap_err();
        assert_eq!(fields[0].0, field, "{bad}");
    }

    for mode in ["all", "one", "backend"] {
        node.set_bucket_props(&b, &patch(json!({"sync_on_write": mode})))
            .unwrap();
        let props = node.bucket_props(&b).unwrap();
        assert_eq!(props.sync_on_write.to_string(), mode);
    }
}

/// The refused properties with a value other than Riak's default.
fn unsupported_values() -> Vec<Value> {
    vec![
        json!({"precommit": [{"mod": "m", "fun": "f"}]}),
        json!({"postcommit": [{"name": "hook"}]}),
        json!({"linkfun": {"mod": "m", "fun": "f"}}),
        json!({"chash_keyfun": {"mod": "m", "fun": "f"}}),
        json!({"consistent": true}),
        json!({"small_vclock": 1}),
        json!({"big_vclock": 1}),
        json!({"young_vclock": 1}),
        json!({"old_vclock": 1}),
    ]
}

#[test]
fn unimplemented_properties_are_refused_for_buckets_and_types() {
    let node = node();
    let registry = node.registry();
    let b = BucketRef::default_type(b"b".to_vec());
    registry.create_type("t", &PropsPatch::new()).unwrap();
    registry.activate_type("t").unwrap();
    for value in unsupported_values() {
        let change = patch(value.clone());
        let field = value.as_object().unwrap().keys().next().unwrap().clone();
        let fields = refused_fields(node.set_bucket_props(&b, &change).unwrap_err());
        assert_eq!(fields.len(), 1);
        assert_eq!(fields[0].0, field);
        assert!(
            fields[0]
                .1
                .contains(&format!("bucket property '{field}' is not supported")),
            "{}",
            fields[0].1
        );
        let typed = BucketRef::typed("t", b"b".to_vec());
        assert!(node.set_bucket_props(&typed, &change).is_err(), "{field}");
        assert!(registry.update_type("t", &change).is_err(), "{field}");
        assert!(registry.create_type("t2", &change).is_err(), "{field}");
    }
    assert!(registry.type_info("t2").is_err(), "no type was created");
    assert_eq!(
        *node.bucket_props(&b).unwrap(),
        BucketProps::default(),
        "nothing was stored"
    );
}

#[test]
fn riak_defaults_of_unimplemented_properties_keep_working() {
    let node = node();
    let registry = node.registry();
    let b = BucketRef::default_type(b"b".to_vec());
    // A client writing back every prop it read.
    let read_back = PropsPatch::from_json(&node.bucket_props(&b).unwrap().to_json()).unwrap();
    node.set_bucket_props(&b, &read_back).unwrap();
    let defaults = patch(json!({
        "precommit": [], "postcommit": [], "consistent": false,
        "linkfun": {"mod": "riak_kv_wm_link_walker", "fun": "mapreduce_linkfun"},
        "chash_keyfun": {"mod": "riak_core_util", "fun": "chash_std_keyfun"},
        "small_vclock": 50, "big_vclock": 50, "young_vclock": 20, "old_vclock": 86400,
    }));
    node.set_bucket_props(&b, &defaults).unwrap();
    registry.create_type("t", &defaults).unwrap();
    registry.update_type("t", &defaults).unwrap();
    assert_eq!(registry.list_types().len(), 2);
    assert!(registry.bucket_props(DEFAULT_TYPE, b"b").is_ok());
}

#[test]
fn write_once_is_a_type_property_without_a_datatype() {
    let registry = node().registry().clone();
    let both = patch(json!({"write_once": true, "datatype": "set"}));
    let err = registry.create_type("wo", &both).unwrap_err();
    assert!(err.to_string().contains("write_once"), "{err}");
    registry
        .create_type("wo", &patch(json!({"write_once": true})))
        .unwrap();
    registry.activate_type("wo").unwrap();
    assert!(registry.bucket_props("wo", b"b").unwrap().write_once);
    let off = patch(json!({"write_once": false}));
    assert!(registry.set_bucket_props("wo", b"b", &off).is_err());
    assert!(registry.update_type("wo", &off).is_err());
    let on = patch(json!({"write_once": true}));
    assert!(registry.set_bucket_props(DEFAULT_TYPE, b"b", &on).is_err());
}
