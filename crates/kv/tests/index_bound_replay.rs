//! The commit log's replay restores acknowledged writes even when they take
//! a bitcask term index past its memory bound (the bound was lowered, or
//! the backend lost what it held): replay is recovery, as open is, and only
//! new writes that grow the index are refused.

use std::path::Path;
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_ring::{Partition, Ring};
use eddy_storage::{Backend, StorageError};
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};
use eddy_vnode::msg::StorageKey;

const RING: u32 = 8;

fn start(dir: &Path, index_memory_max_bytes: Option<u64>) -> Arc<Node> {
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
        let config = BitcaskConfig {
            merge_check_interval_ms: 0,
            index_memory_max_bytes,
            ..BitcaskConfig::default()
        };
        let backend: Arc<dyn Backend> =
            Arc::new(Bitcask::open(&dir.join(p.0.to_string()), config).unwrap());
        VnodeParts {
            backend,
            side: None,
            actor: Actor(100 + u64::from(p.0)),
            incarnation: 1,
        }
    })
    .unwrap()
}

fn put_indexed(key: &str) -> PutRequest {
    let mut content = Content::new(b"coupon".to_vec());
    content.meta.indexes = vec![(b"affiliate_bin".to_vec(), key.as_bytes().to_vec())];
    PutRequest {
        bucket: BucketRef::default_type(b"b".to_vec()),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content,
        options: PutOptions::default(),
    }
}

/// How many of this node's vnodes hold `key`.
fn copies(node: &Node, key: &str) -> usize {
    let key = StorageKey {
        bucket: BucketRef::default_type(b"b".to_vec()).storage_bucket(),
        key: key.as_bytes().to_vec(),
    };
    node.local_partitions()
        .into_iter()
        .filter(|p| node.vnode(*p).unwrap().read(&key).unwrap().is_some())
        .count()
}

#[tokio::test]
async fn replay_restores_indexed_writes_past_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<String> = (0..20).map(|i| format!("coupon-{i:07}")).collect();
    {
        let node = start(dir.path(), None);
        for key in &keys {
            node.put(put_indexed(key)).await.unwrap();
        }
        // A crash: no shutdown, so the commit log's segments stay.
        drop(node);
    }
    // The backends lose everything: only the commit log holds the writes.
    for p in 0..RING {
        std::fs::remove_dir_all(dir.path().join(p.to_string())).unwrap();
    }
    // Restarted with a bound below a single indexed key.
    let node = start(dir.path(), Some(1));
    for key in &keys {
        assert_eq!(copies(&node, key), 3, "{key} replayed to every replica");
    }
    let over = node.index_memory();
    assert_eq!(over.entries, 3 * keys.len() as u64);
    assert_eq!(over.over_limit, u64::from(RING));
    let err = node.put(put_indexed("coupon-new")).await.unwrap_err();
    assert!(
        matches!(err, KvError::Storage(StorageError::IndexFull { .. })),
        "{err:?}"
    );
    assert_eq!(copies(&node, "coupon-new"), 0);
}
