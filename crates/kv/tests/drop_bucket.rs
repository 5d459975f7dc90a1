//! Dropping a bucket on one node (design note 018): its keys, index
//! entries and siblings are gone at once, from every request and from the
//! backends; other buckets and the bucket's props stay; writes after the
//! drop are the bucket's new contents; a second drop empties it again.

use std::sync::Arc;

use eddy_kv::*;
use eddy_model::index::IndexRequest;
use eddy_model::props::BucketProps;
use eddy_model::types::{BucketRegistry, RegistryError};
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_ring::Partition;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{Backend, FoldControl, FoldOptions};

const RING: u32 = 16;

fn node() -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: RING,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(9000 + u64::from(p.0)))
    })
    .unwrap()
}

fn coupons() -> BucketRef {
    BucketRef::default_type("coupons")
}

/// Writes `key` to `bucket` with an index entry, as a new sibling when
/// `context` is none and allow_mult is on.
async fn put(node: &Arc<Node>, bucket: &BucketRef, key: &str, value: &str) {
    let mut content = Content::new(value.as_bytes().to_vec());
    content.meta.indexes = vec![(b"affiliate_bin".to_vec(), b"a1".to_vec())];
    let req = PutRequest {
        bucket: bucket.clone(),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content,
        options: PutOptions::default(),
    };
    node.put(req).await.unwrap();
}

async fn values(node: &Arc<Node>, bucket: &BucketRef, key: &str) -> Vec<String> {
    let req = GetRequest {
        bucket: bucket.clone(),
        key: key.as_bytes().to_vec(),
        options: GetOptions::default(),
    };
    let mut out: Vec<String> = match node.get(req).await.unwrap() {
        GetResponse::Found(o) => o
            .siblings
            .iter()
            .map(|s| String::from_utf8(s.content.value.to_vec()).unwrap())
            .collect(),
        GetResponse::NotFound { .. } => Vec::new(),
    };
    out.sort();
    out
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn keys(node: &Arc<Node>, bucket: &BucketRef) -> Vec<String> {
    let (node, bucket) = (node.clone(), bucket.clone());
    blocking(move || {
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        node.list_keys_blocking(&bucket, &tx).unwrap();
        drop(tx);
        let mut out = Vec::new();
        while let Some(chunk) = rx.blocking_recv() {
            out.extend(chunk.into_iter().map(|k| String::from_utf8(k).unwrap()));
        }
        out.sort();
        out
    })
    .await
}

async fn indexed(node: &Arc<Node>, bucket: &BucketRef) -> usize {
    let (node, bucket) = (node.clone(), bucket.clone());
    let req = IndexRequest {
        field: b"affiliate_bin".to_vec(),
        start: b"a1".to_vec(),
        ..IndexRequest::default()
    };
    blocking(move || node.index_query_blocking(&bucket, &req).unwrap())
        .await
        .results
        .len()
}

async fn drop_bucket(node: &Arc<Node>, bucket: &BucketRef) -> Result<u64, KvError> {
    let (node, bucket) = (node.clone(), bucket.clone());
    blocking(move || node.drop_bucket_blocking(&bucket).map(|o| o.generation)).await
}

/// Objects every backend of the node holds under any name of `bucket`'s
/// generations up to `upto`.
fn stored(node: &Arc<Node>, bucket: &BucketRef, upto: u64) -> usize {
    let mut n = 0;
    for p in 0..RING {
        let Some(backend) = node.partition_backend(Partition(p)) else {
            continue;
        };
        for generation in 0..=upto {
            let name = bucket.storage_bucket_at(generation);
            backend
                .fold_keys(&FoldOptions::bucket(&name), &mut |_, _| {
                    n += 1;
                    FoldControl::Continue
                })
                .unwrap();
        }
    }
    n
}

#[tokio::test]
async fn a_dropped_bucket_is_empty_everywhere_and_takes_new_writes() {
    let node = node();
    let other = BucketRef::default_type("other");
    let patch = eddy_model::props::PropsPatch {
        allow_mult: Some(true),
        n_val: Some(2),
        ..Default::default()
    };
    node.set_bucket_props(&coupons(), &patch).unwrap();
    for i in 0..50 {
        put(&node, &coupons(), &format!("k{i}"), "old-a").await;
        put(&node, &coupons(), &format!("k{i}"), "old-b").await;
        put(&node, &other, &format!("k{i}"), "kept").await;
    }
    assert_eq!(values(&node, &coupons(), "k7").await, ["old-a", "old-b"]);
    assert_eq!(stored(&node, &coupons(), 0), 100, "n_val 2");

    assert_eq!(drop_bucket(&node, &coupons()).await.unwrap(), 1);
    assert!(values(&node, &coupons(), "k7").await.is_empty());
    assert!(keys(&node, &coupons()).await.is_empty());
    assert_eq!(indexed(&node, &coupons()).await, 0);
    assert_eq!(stored(&node, &coupons(), 1), 0, "swept from the backends");
    // Its props stay; another bucket is untouched.
    let props = node.bucket_props(&coupons()).unwrap();
    assert_eq!(
        (props.n_val, props.allow_mult, props.generation),
        (2, true, 1)
    );
    assert_eq!(keys(&node, &other).await.len(), 50);
    assert_eq!(indexed(&node, &other).await, 50);

    // Written again, it holds only the new writes: no old sibling returns.
    put(&node, &coupons(), "k7", "new").await;
    assert_eq!(values(&node, &coupons(), "k7").await, ["new"]);
    assert_eq!(keys(&node, &coupons()).await, ["k7"]);
    assert_eq!(indexed(&node, &coupons()).await, 1);

    assert_eq!(drop_bucket(&node, &coupons()).await.unwrap(), 2);
    assert!(values(&node, &coupons(), "k7").await.is_empty());
    assert_eq!(stored(&node, &coupons(), 2), 0);
}

#[tokio::test]
async fn a_props_reset_keeps_the_bucket_dropped() {
    let node = node();
    put(&node, &coupons(), "k", "old").await;
    drop_bucket(&node, &coupons()).await.unwrap();
    node.reset_bucket_props(&coupons()).unwrap();
    assert_eq!(node.bucket_props(&coupons()).unwrap().generation, 1);
    assert!(values(&node, &coupons(), "k").await.is_empty());
}

#[tokio::test]
async fn typed_buckets_drop_alone_and_unknown_types_are_refused() {
    let node = node();
    let registry = node.registry();
    registry
        .create_type("t", &eddy_model::props::PropsPatch::new())
        .unwrap();
    registry.activate_type("t").unwrap();
    let typed = BucketRef::typed("t", b"coupons".to_vec());
    put(&node, &typed, "k", "typed").await;
    put(&node, &coupons(), "k", "untyped").await;
    drop_bucket(&node, &typed).await.unwrap();
    assert!(values(&node, &typed, "k").await.is_empty());
    assert_eq!(values(&node, &coupons(), "k").await, ["untyped"]);
    let unknown = BucketRef::typed("nope", b"b".to_vec());
    let refused = drop_bucket(&node, &unknown).await;
    assert!(
        matches!(
            refused,
            Err(KvError::Registry(RegistryError::NoSuchType(_)))
        ),
        "{refused:?}"
    );
}
