//! A single node over memory backends: the semantics the API relies on.

use std::sync::Arc;
use std::time::Duration;

use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use serde_json::json;

fn node_with(config: NodeConfig) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let patch = eddy_model::props::PropsPatch::from_json(json!({}).as_object().unwrap()).unwrap();
    registry.create_type("maps", &patch).unwrap();
    registry.activate_type("maps").unwrap();
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

fn node() -> Arc<Node> {
    node_with(NodeConfig {
        ring_size: 8,
        ..NodeConfig::default()
    })
}

fn put_req(bucket: BucketRef, key: &str, value: &str) -> PutRequest {
    PutRequest {
        bucket,
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options: PutOptions::default(),
    }
}

fn get_req(bucket: BucketRef, key: &str) -> GetRequest {
    GetRequest {
        bucket,
        key: key.as_bytes().to_vec(),
        options: GetOptions::default(),
    }
}

fn values(resp: &GetResponse) -> Vec<Vec<u8>> {
    match resp {
        GetResponse::Found(o) => o.contents().map(|c| c.value.clone()).collect(),
        GetResponse::NotFound { .. } => vec![],
    }
}

#[tokio::test]
async fn typed_buckets_keep_concurrent_writes_as_siblings() {
    let node = node();
    let b = BucketRef::typed("maps", b"b".to_vec());
    node.put(put_req(b.clone(), "k", "one")).await.unwrap();
    node.put(put_req(b.clone(), "k", "two")).await.unwrap();
    let got = node.get(get_req(b.clone(), "k")).await.unwrap();
    let mut vals = values(&got);
    vals.sort();
    assert_eq!(vals, vec![b"one".to_vec(), b"two".to_vec()]);
    // A write with the context it read resolves them.
    let GetResponse::Found(obj) = got else {
        panic!()
    };
    let mut resolve = put_req(b.clone(), "k", "merged");
    resolve.context = Some(obj.vv.clone());
    node.put(resolve).await.unwrap();
    let got = node.get(get_req(b, "k")).await.unwrap();
    assert_eq!(values(&got), vec![b"merged".to_vec()]);
}

#[tokio::test]
async fn default_type_resolves_blind_writes_to_the_newest() {
    let node = node();
    let b = BucketRef::default_type(b"b".to_vec());
    node.put(put_req(b.clone(), "k", "one")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2)).await;
    node.put(put_req(b.clone(), "k", "two")).await.unwrap();
    assert_eq!(
        values(&node.get(get_req(b, "k")).await.unwrap()),
        vec![b"two".to_vec()]
    );
}

#[tokio::test]
async fn conditional_puts_are_atomic_per_key() {
    let node = node();
    let b = BucketRef::typed("maps", b"b".to_vec());
    let mut tasks = Vec::new();
    for i in 0..20 {
        let node = node.clone();
        let mut req = put_req(b.clone(), "once", &format!("v{i}"));
        req.options.if_none_match = true;
        tasks.push(tokio::spawn(async move { node.put(req).await }));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(KvError::MatchFound) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(won, 1, "exactly one if_none_match write wins");
    let mut stale = put_req(b.clone(), "once", "x");
    stale.options.if_not_modified = true;
    stale.context = Some(Default::default());
    assert!(matches!(node.put(stale).await, Err(KvError::Modified)));
}

#[tokio::test]
async fn quorum_values_are_checked_against_n_val() {
    let node = node();
    let b = BucketRef::default_type(b"b".to_vec());
    let mut req = put_req(b.clone(), "k", "v");
    req.options.w = Some(Quorum::Count(4));
    assert!(matches!(node.put(req).await, Err(KvError::Quorum(_))));
    let mut get = get_req(b.clone(), "k");
    get.options.r = Some(Quorum::Count(5));
    assert!(matches!(node.get(get).await, Err(KvError::Quorum(_))));
    let mut req = put_req(b, "k", "v");
    req.options.w = Some(Quorum::All);
    req.options.dw = Some(Quorum::All);
    req.options.pw = Some(Quorum::All);
    node.put(req).await.unwrap();
}

#[tokio::test]
async fn bad_buckets_and_keys_are_refused() {
    let node = node();
    let unknown = BucketRef::typed("nope", b"b".to_vec());
    assert!(matches!(
        node.put(put_req(unknown, "k", "v")).await,
        Err(KvError::Registry(_))
    ));
    let b = BucketRef::default_type(b"b".to_vec());
    assert!(matches!(
        node.put(put_req(b.clone(), "", "v")).await,
        Err(KvError::Empty("key"))
    ));
    let empty = BucketRef::default_type(Vec::new());
    assert!(matches!(
        node.put(put_req(empty, "k", "v")).await,
        Err(KvError::Empty("bucket"))
    ));
    let long = "k".repeat(70_000);
    assert!(matches!(
        node.put(put_req(b, &long, "v")).await,
        Err(KvError::TooLarge { .. })
    ));
}

#[tokio::test]
async fn deleted_keys_stay_deleted_and_are_reaped() {
    let node = node_with(NodeConfig {
        ring_size: 8,
        delete_mode: DeleteMode::Immediate,
        ..NodeConfig::default()
    });
    let b = BucketRef::typed("maps", b"b".to_vec());
    node.put(put_req(b.clone(), "k", "v")).await.unwrap();
    let del = DeleteRequest {
        bucket: b.clone(),
        key: b"k".to_vec(),
        context: None,
        options: DeleteOptions::default(),
    };
    assert_eq!(
        node.delete(del.clone()).await.unwrap(),
        DeleteOutcome::Deleted
    );
    assert!(matches!(
        node.get(get_req(b.clone(), "k")).await.unwrap(),
        GetResponse::NotFound { .. }
    ));
    assert_eq!(node.delete(del).await.unwrap(), DeleteOutcome::NotFound);
    // Reaped: no tombstone context is left after the reap runs.
    for _ in 0..100 {
        if let GetResponse::NotFound {
            tombstone_context: None,
        } = node.get(get_req(b.clone(), "k")).await.unwrap()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("tombstone was never reaped");
}

#[tokio::test]
async fn list_keys_and_buckets_see_each_live_key_once() {
    let node = node();
    let b = BucketRef::default_type(b"listed".to_vec());
    for i in 0..50 {
        node.put(put_req(b.clone(), &format!("k{i}"), "v"))
            .await
            .unwrap();
    }
    node.put(put_req(
        BucketRef::default_type(b"other".to_vec()),
        "x",
        "v",
    ))
    .await
    .unwrap();
    let del = DeleteRequest {
        bucket: b.clone(),
        key: b"k0".to_vec(),
        context: None,
        options: DeleteOptions::default(),
    };
    node.delete(del).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let n2 = node.clone();
    let b2 = b.clone();
    let lister = tokio::task::spawn_blocking(move || n2.list_keys_blocking(&b2, &tx));
    let mut keys = Vec::new();
    while let Some(chunk) = rx.recv().await {
        keys.extend(chunk);
    }
    lister.await.unwrap().unwrap();
    keys.sort();
    assert_eq!(keys.len(), 49, "each live key once, tombstone hidden");
    let buckets = node.list_buckets_blocking("default").unwrap();
    assert_eq!(buckets, vec![b"listed".to_vec(), b"other".to_vec()]);
}

#[tokio::test]
async fn return_body_and_generated_keys() {
    let node = node();
    let b = BucketRef::default_type(b"b".to_vec());
    let mut req = put_req(b.clone(), "unused", "body");
    req.key = None;
    req.options.return_body = true;
    let resp = node.put(req).await.unwrap();
    assert_eq!(resp.key.len(), 27);
    let obj = resp.object.expect("return_body");
    assert_eq!(obj.siblings[0].content.value, b"body");
    assert_eq!(obj.siblings[0].content.meta.vtag.len(), 22);
    let key = String::from_utf8(resp.key).unwrap();
    assert_eq!(
        values(&node.get(get_req(b, &key)).await.unwrap()),
        vec![b"body".to_vec()]
    );
    node.shutdown();
}

#[tokio::test]
async fn read_repair_restores_a_lost_replica() {
    let node = node();
    let b = BucketRef::typed("maps", b"b".to_vec());
    node.put(put_req(b.clone(), "k", "v")).await.unwrap();
    let ring = node.ring();
    let preflist = ring.preflist(Node::key_hash(&b, b"k"), 3);
    let lost = node
        .partition_backend(preflist[2].0)
        .expect("a local partition");
    let storage_bucket = b.storage_bucket();
    lost.delete(&storage_bucket, b"k", Default::default())
        .unwrap();
    assert_eq!(lost.get(&storage_bucket, b"k").unwrap(), None);
    assert_eq!(
        values(&node.get(get_req(b.clone(), "k")).await.unwrap()),
        vec![b"v".to_vec()]
    );
    for _ in 0..200 {
        if lost.get(&storage_bucket, b"k").unwrap().is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("read repair did not restore the replica");
}

/// Every node but this one is down.
struct AloneUp;

impl Liveness for AloneUp {
    fn is_up(&self, _node: &eddy_ring::NodeName) -> bool {
        false
    }
}

#[tokio::test]
async fn a_node_owning_nothing_with_every_owner_down_refuses_a_put() {
    let owner = eddy_ring::NodeName("owner@127.0.0.1".into());
    let ring = eddy_ring::Ring::single(8, owner).unwrap();
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        node_name: eddy_ring::NodeName("joining@127.0.0.1".into()),
        ring_size: 8,
        ..NodeConfig::default()
    };
    let links = NodeLinks {
        liveness: Some(Arc::new(AloneUp)),
        ..NodeLinks::default()
    };
    let node = Node::start_linked(config, links, registry, ring, &[], |_| unreachable!()).unwrap();
    let put = node.put(put_req(BucketRef::default_type(b"b".to_vec()), "k", "v"));
    match put.await {
        Err(KvError::WriteQuorum(failure)) => assert_eq!(
            failure,
            eddy_model::error::PutFailure::W { needed: 2, got: 0 }
        ),
        other => panic!("expected a write quorum failure, got {other:?}"),
    }
    let get = node.get(get_req(BucketRef::default_type(b"b".to_vec()), "k"));
    assert!(get.await.is_err(), "a get has no vnode either");
}
