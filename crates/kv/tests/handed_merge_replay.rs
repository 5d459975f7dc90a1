//! A handoff receiver's merges write the backend without commit-log
//! records (`Vnode::merge_handed`) and become durable by
//! `Vnode::sync_handed`. A crash afterwards replays the log: a record the
//! vnode logged before the merge must not be put back over the merged
//! object, which descends it.

use std::path::Path;
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content, RiakObject, codec, merge};
use eddy_ring::{Partition, Ring};
use eddy_storage::Backend;
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};
use eddy_vnode::msg::{StorageKey, WritePolicy};

const RING: u32 = 8;

fn start(dir: &Path) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: RING,
        commit_log_dir: Some(dir.join("commit_log")),
        commit_log: LogOptions {
            sync: SyncPolicy::Interval,
            ..LogOptions::default()
        },
        ..NodeConfig::default()
    };
    let ring = Ring::single(RING, config.node_name.clone()).unwrap();
    let partitions: Vec<Partition> = ring.partitions().collect();
    Node::start_with(config, registry, ring, &partitions, |p| {
        let backend: Arc<dyn Backend> =
            Arc::new(Bitcask::open(&dir.join(p.0.to_string()), BitcaskConfig::default()).unwrap());
        VnodeParts {
            backend,
            side: None,
            actor: Actor(100 + u64::from(p.0)),
            incarnation: 1,
        }
    })
    .unwrap()
}

fn put(key: &str, value: &str) -> PutRequest {
    PutRequest {
        bucket: BucketRef::default_type(b"b".to_vec()),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options: PutOptions::default(),
    }
}

fn storage_key(key: &str) -> StorageKey {
    StorageKey {
        bucket: BucketRef::default_type(b"b".to_vec()).storage_bucket(),
        key: key.as_bytes().to_vec(),
    }
}

/// The partitions whose vnodes hold `key`.
fn holders(node: &Node, key: &StorageKey) -> Vec<Partition> {
    node.local_partitions()
        .into_iter()
        .filter(|p| node.vnode(*p).unwrap().read(key).unwrap().is_some())
        .collect()
}

const POLICY: WritePolicy = WritePolicy {
    allow_mult: true,
    last_write_wins: false,
    max_siblings: 100,
    write_once: false,
    ttl_secs: 0,
};

/// `stored` updated by another node's actor: what a handoff sender holds
/// after a write the receiver has not seen.
fn newer(stored: &RiakObject, value: &str) -> RiakObject {
    let mut next = stored.clone();
    let content = Content::new(value.as_bytes().to_vec());
    merge::update(&mut next, &stored.vv, Actor(9), content);
    next
}

fn values(obj: &RiakObject) -> Vec<String> {
    obj.siblings
        .iter()
        .map(|s| String::from_utf8(s.content.value.clone()).unwrap())
        .collect()
}

#[tokio::test]
async fn a_crash_after_a_synced_handed_merge_keeps_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let key = storage_key("k");
    let p = {
        let node = start(dir.path());
        node.put(put("k", "logged")).await.unwrap();
        let p = holders(&node, &key)[0];
        let vnode = node.vnode(p).unwrap();
        let stored = vnode.read(&key).unwrap().unwrap();
        let handed = codec::encode(&newer(&stored, "handed"));
        vnode.merge_handed(&key, handed.into(), POLICY).unwrap();
        vnode.sync_handed().unwrap();
        // A later logged write of another key, which replay must apply.
        node.put(put("after", "logged later")).await.unwrap();
        // A crash: no shutdown, so the commit log's segments stay.
        drop(vnode);
        drop(node);
        p
    };
    let node = start(dir.path());
    let vnode = node.vnode(p).unwrap();
    let got = vnode.read(&key).unwrap().unwrap();
    assert_eq!(values(&got), ["handed"], "replay put the older record back");
    let after = storage_key("after");
    assert!(
        !holders(&node, &after).is_empty(),
        "a later record replayed"
    );
}

#[tokio::test]
async fn a_handed_merge_keeps_newer_local_writes_as_a_replica_would() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path());
    let key = storage_key("k");
    node.put(put("k", "first")).await.unwrap();
    let p = holders(&node, &key)[0];
    let vnode = node.vnode(p).unwrap();
    let first = vnode.read(&key).unwrap().unwrap();
    // The sender's copy is what this vnode already had: nothing changes.
    let same = codec::encode(&first);
    vnode.merge_handed(&key, same.into(), POLICY).unwrap();
    assert_eq!(vnode.read(&key).unwrap().unwrap(), first);
    // A concurrent version becomes a sibling.
    let mut concurrent = RiakObject::default();
    let content = Content::new(b"concurrent".to_vec());
    merge::update(&mut concurrent, &Default::default(), Actor(9), content);
    let encoded = codec::encode(&concurrent);
    vnode.merge_handed(&key, encoded.into(), POLICY).unwrap();
    vnode.sync_handed().unwrap();
    let mut got = values(&vnode.read(&key).unwrap().unwrap());
    got.sort();
    assert_eq!(got, ["concurrent", "first"]);
    // A corrupt object is refused, not stored.
    let refused = vnode.merge_handed(&key, b"not an object".to_vec().into(), POLICY);
    assert!(matches!(refused, Err(KvError::Corrupt(_))), "{refused:?}");
    node.shutdown();
}
