//! A vnode's incarnation at start: records of the incarnation a node opens
//! replay; a vnode the commit log says was dropped (a crash between its
//! drop record and the destroy of its data) is not run, is reported for
//! its data to be destroyed, and the fact survives the replayed segments'
//! removal.

use std::path::Path;
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_ring::{Partition, Ring};
use eddy_storage::Backend;
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};

const RING: u32 = 8;

fn start(dir: &Path, incarnation: impl Fn(Partition) -> u64) -> Arc<Node> {
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
        let config = BitcaskConfig::default();
        let backend: Arc<dyn Backend> =
            Arc::new(Bitcask::open(&dir.join(p.0.to_string()), config).unwrap());
        VnodeParts {
            backend,
            side: None,
            actor: Actor(100 + u64::from(p.0)),
            incarnation: incarnation(p),
        }
    })
    .unwrap()
}

fn put(key: &str) -> PutRequest {
    PutRequest {
        bucket: BucketRef::default_type(b"b".to_vec()),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(b"v".to_vec()),
        options: PutOptions {
            dw: Some(Quorum::All),
            ..PutOptions::default()
        },
    }
}

#[tokio::test]
async fn a_dropped_incarnation_is_not_run_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let dropped = Partition(3);
    {
        let node = start(dir.path(), |_| 7);
        node.put(put("k")).await.unwrap();
        let log = node.commit_log().unwrap();
        let at = log.append_drop(dropped.0, 7).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        log.when_synced(at.end, Box::new(move |r| tx.send(r).unwrap()));
        rx.recv().unwrap().unwrap();
        // A crash: no shutdown, so the segments stay.
        drop(node);
    }
    let node = start(dir.path(), |_| 7);
    assert_eq!(node.dropped_at_start(), &[(dropped, 7)]);
    assert!(node.partition_backend(dropped).is_none());
    assert!(node.partition_backend(Partition(2)).is_some());
    // The fact outlives the replayed segments: a crash now still knows it.
    drop(node);
    let node = start(dir.path(), |_| 7);
    assert_eq!(node.dropped_at_start(), &[(dropped, 7)]);
    // A new incarnation of the partition is run (its data is its own).
    drop(node);
    let node = start(dir.path(), |p| if p == dropped { 8 } else { 7 });
    assert!(node.dropped_at_start().is_empty());
    assert!(node.partition_backend(dropped).is_some());
}
