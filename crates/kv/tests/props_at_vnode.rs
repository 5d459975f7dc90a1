//! What `write_once` and `sync_on_write` do at the vnodes: a write-once
//! bucket keeps one version per key whatever the writes, the same on every
//! read; `sync_on_write = all` puts the write on stable storage before the
//! put is answered, even when the commit log would sync only later.

use std::sync::Arc;
use std::time::Duration;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::Backend;
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};
use serde_json::json;

const RING: u32 = 8;

fn node(dir: &std::path::Path) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let w1c =
        eddy_model::props::PropsPatch::from_json(json!({"write_once": true}).as_object().unwrap())
            .unwrap();
    registry.create_type("w1c", &w1c).unwrap();
    registry.activate_type("w1c").unwrap();
    let config = NodeConfig {
        ring_size: RING,
        commit_log_dir: Some(dir.join("commit_log")),
        commit_log: LogOptions {
            sync: SyncPolicy::Interval,
            // Longer than the test: only a forced sync reaches the disk.
            sync_interval: Duration::from_secs(3600),
            ..LogOptions::default()
        },
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let path = dir.join(p.0.to_string());
        let backend: Arc<dyn Backend> =
            Arc::new(Bitcask::open(&path, BitcaskConfig::default()).unwrap());
        (backend, Actor(3000 + u64::from(p.0)))
    })
    .unwrap()
}

fn put(bucket: &BucketRef, value: &str, dw: Option<Quorum>) -> PutRequest {
    PutRequest {
        bucket: bucket.clone(),
        key: Some(b"k".to_vec()),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options: PutOptions {
            dw,
            ..PutOptions::default()
        },
    }
}

fn get(bucket: &BucketRef) -> GetRequest {
    GetRequest {
        bucket: bucket.clone(),
        key: b"k".to_vec(),
        options: GetOptions::default(),
    }
}

fn values(resp: GetResponse) -> Vec<Vec<u8>> {
    match resp {
        GetResponse::Found(o) => o.contents().map(|c| c.value.clone()).collect(),
        GetResponse::NotFound { .. } => vec![],
    }
}

#[tokio::test]
async fn a_write_once_bucket_keeps_one_version_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path());
    let b = BucketRef::typed("w1c", b"events".to_vec());
    let props = node.bucket_props(&b).unwrap();
    assert!(
        props.write_once && props.allow_mult,
        "siblings would be allowed"
    );
    for v in ["a", "b", "c"] {
        node.put(put(&b, v, None)).await.unwrap();
    }
    let first = values(node.get(get(&b)).await.unwrap());
    assert_eq!(first.len(), 1, "one version, not siblings: {first:?}");
    for _ in 0..3 {
        assert_eq!(values(node.get(get(&b)).await.unwrap()), first);
    }
    // The same bucket without write_once keeps the blind writes as siblings.
    let plain = BucketRef::typed("default", b"events".to_vec());
    let typed =
        eddy_model::props::PropsPatch::from_json(json!({"allow_mult": true}).as_object().unwrap())
            .unwrap();
    node.set_bucket_props(&plain, &typed).unwrap();
    for v in ["a", "b"] {
        node.put(put(&plain, v, None)).await.unwrap();
    }
    assert_eq!(values(node.get(get(&plain)).await.unwrap()).len(), 2);
}

#[tokio::test]
async fn sync_on_write_all_syncs_before_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path());
    let log = node.commit_log().unwrap().clone();
    let b = BucketRef::default_type(b"plain".to_vec());
    // Every replica answers (dw = all), so no replica's record comes
    // after the answer and the figures below are settled.
    node.put(put(&b, "v", Some(Quorum::All))).await.unwrap();
    let synced_before = log.synced();
    assert!(
        synced_before < log.appended(),
        "interval sync has not synced the write yet"
    );
    let all = eddy_model::props::PropsPatch::from_json(
        json!({"sync_on_write": "all"}).as_object().unwrap(),
    )
    .unwrap();
    let synced = BucketRef::default_type(b"synced".to_vec());
    node.set_bucket_props(&synced, &all).unwrap();
    node.put(put(&synced, "v", Some(Quorum::All)))
        .await
        .unwrap();
    assert!(
        log.synced() >= log.appended(),
        "sync_on_write = all: the put's records are on disk when it is answered"
    );
}
