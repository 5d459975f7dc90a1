//! Damaged partitions on a node over bitcask (design note 009): damage one
//! partition's newest data file, restart, and check that the partition is
//! marked, that no deleted key comes back and no older value is returned
//! while it is, that puts still land, and that repair restores its copies
//! and clears the mark for good.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content, codec};
use eddy_ring::Partition;
use eddy_storage::Backend;
use eddy_vnode::marker;
use eddy_vnode::msg::StorageKey;

const RING: u32 = 8;
const KEYS: u32 = 120;
const DAMAGED: Partition = Partition(3);

/// A node's data directory and the actor ids its partitions use.
struct Disk {
    root: tempfile::TempDir,
    actors: Vec<u64>,
}

impl Disk {
    fn new() -> Disk {
        Disk {
            root: tempfile::tempdir().unwrap(),
            actors: (0..RING).map(|p| 1000 + u64::from(p)).collect(),
        }
    }

    fn partitions(&self) -> PathBuf {
        self.root.path().join("partitions")
    }

    fn bitcask_dir(&self, p: Partition) -> PathBuf {
        self.partitions().join(p.0.to_string()).join("bitcask")
    }

    /// Opens every partition as `eddy start` does: a partition newly found
    /// damaged gets a fresh actor before the node starts.
    fn start(&mut self) -> Arc<Node> {
        let mut opened = Vec::new();
        for p in 0..RING {
            let config = BitcaskConfig {
                merge_check_interval_ms: 0,
                ..BitcaskConfig::default()
            };
            let b = Bitcask::open(&self.bitcask_dir(Partition(p)), config).unwrap();
            let marker = marker::path(&self.partitions(), Partition(p));
            if marker::newly_damaged(Some(&marker), &b.recovery_report()) {
                self.actors[p as usize] += 1 << 32;
            }
            let backend: Arc<dyn Backend> = Arc::new(b);
            opened.push((backend, Actor(self.actors[p as usize])));
        }
        let config = NodeConfig {
            ring_size: RING,
            delete_mode: DeleteMode::Immediate,
            partitions_dir: Some(self.partitions()),
            ..NodeConfig::default()
        };
        let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
        Node::start(config, registry, |p| opened[p.0 as usize].clone()).unwrap()
    }

    /// Overwrites the second half of `p`'s newest data file with garbage
    /// (its hint file removed, so the next open scans it).
    fn damage(&self, p: Partition) {
        let dir = self.bitcask_dir(p);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|f| f.to_string_lossy().ends_with(".bitcask.data"))
            .filter(|f| std::fs::metadata(f).unwrap().len() > 1024)
            .collect();
        files.sort();
        let newest = files.pop().unwrap();
        let _ = std::fs::remove_file(newest.with_extension("hint"));
        let len = std::fs::metadata(&newest).unwrap().len();
        let garbage = vec![0xAA; (len - len / 2) as usize];
        let f = OpenOptions::new().write(true).open(&newest).unwrap();
        f.write_all_at(&garbage, len / 2).unwrap();
    }
}

fn bucket() -> BucketRef {
    BucketRef::default_type(b"b".to_vec())
}

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:04}").into_bytes()
}

fn deleted(i: u32) -> bool {
    i.is_multiple_of(3)
}

async fn put(node: &Arc<Node>, i: u32, value: &str) {
    let req = PutRequest {
        bucket: bucket(),
        key: Some(key(i)),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options: PutOptions::default(),
    };
    node.put(req).await.unwrap();
}

async fn get(node: &Arc<Node>, i: u32) -> Option<Vec<u8>> {
    let req = GetRequest {
        bucket: bucket(),
        key: key(i),
        options: GetOptions::default(),
    };
    match node.get(req).await.unwrap() {
        GetResponse::Found(o) => Some(o.contents().next().unwrap().value.clone()),
        GetResponse::NotFound { .. } => None,
    }
}

fn storage_key(i: u32) -> StorageKey {
    StorageKey {
        bucket: bucket().storage_bucket(),
        key: key(i),
    }
}

/// The value partition `p` itself holds for key `i` (`None`: nothing, or
/// a tombstone).
fn stored(node: &Node, p: Partition, i: u32) -> Option<Vec<u8>> {
    let k = storage_key(i);
    let bytes = node
        .partition_backend(p)
        .expect("a local partition")
        .get(&k.bucket, &k.key)
        .unwrap()?;
    let obj = codec::decode(&bytes).unwrap();
    obj.contents()
        .find(|c| !c.meta.deleted)
        .map(|c| c.value.clone())
}

fn on_damaged(node: &Node, i: u32) -> bool {
    node.preflist(&bucket(), &key(i))
        .unwrap()
        .iter()
        .any(|(p, _)| *p == DAMAGED)
}

/// Writes v1 then v2 to every key, deletes every third key and waits until
/// every replica reaped it.
async fn populate(node: &Arc<Node>) {
    for i in 0..KEYS {
        put(node, i, "v1").await;
    }
    for i in 0..KEYS {
        put(node, i, "v2").await;
    }
    for i in (0..KEYS).filter(|i| deleted(*i)) {
        let req = DeleteRequest {
            bucket: bucket(),
            key: key(i),
            context: None,
            options: DeleteOptions::default(),
        };
        node.delete(req).await.unwrap();
    }
    let reaped = |node: &Node| {
        (0..KEYS).filter(|i| deleted(*i)).all(|i| {
            let k = storage_key(i);
            (0..RING).all(|p| {
                let b = node
                    .partition_backend(Partition(p))
                    .expect("a local partition");
                b.get(&k.bucket, &k.key).unwrap().is_none()
            })
        })
    };
    while !reaped(node) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn stop(node: Arc<Node>) {
    node.shutdown();
    drop(node);
}

fn marker_exists(disk: &Disk) -> bool {
    marker::path(&disk.partitions(), DAMAGED).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_partition_is_read_around_until_repair_restores_it() {
    let mut disk = Disk::new();
    let node = disk.start();
    populate(&node).await;
    stop(node);
    disk.damage(DAMAGED);

    let node = disk.start();
    assert_eq!(node.damaged_partitions(), vec![DAMAGED]);
    assert!(marker_exists(&disk));
    let totals = node.recovery_totals();
    assert_eq!(totals.damaged_partitions, 1, "{totals:?}");
    // The damage undid deletes on the damaged partition: its own copy
    // shows values for keys that were deleted.
    let resurrected = (0..KEYS)
        .filter(|i| deleted(*i) && on_damaged(&node, *i))
        .filter(|i| stored(&node, DAMAGED, *i).is_some())
        .count();
    assert!(resurrected > 0, "the damage must undo some deletes");

    // Until repaired: no deleted key comes back, no older value is read.
    for i in 0..KEYS {
        let want = (!deleted(i)).then(|| b"v2".to_vec());
        assert_eq!(get(&node, i).await, want, "key {i}");
    }
    // Writes land and read back while the partition is marked.
    for i in (0..KEYS).filter(|i| !deleted(*i)) {
        put(&node, i, "v3").await;
        assert_eq!(get(&node, i).await, Some(b"v3".to_vec()), "key {i}");
    }

    let summary = node.repair_partitions(&[]).unwrap();
    assert_eq!(summary.partitions, vec![DAMAGED.0]);
    assert!(summary.removed >= resurrected as u64, "{summary:?}");
    assert!(node.damaged_partitions().is_empty());
    assert!(!marker_exists(&disk));
    for i in (0..KEYS).filter(|i| on_damaged(&node, *i)) {
        let want = (!deleted(i)).then(|| b"v3".to_vec());
        assert_eq!(stored(&node, DAMAGED, i), want, "repaired copy of key {i}");
    }
    stop(node);

    // The repaired damage does not mark the partition again.
    let node = disk.start();
    assert!(node.damaged_partitions().is_empty());
    for i in 0..KEYS {
        let want = (!deleted(i)).then(|| b"v3".to_vec());
        assert_eq!(get(&node, i).await, want, "key {i} after restart");
    }
    stop(node);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfinished_repair_is_remembered_across_restarts() {
    let mut disk = Disk::new();
    let node = disk.start();
    populate(&node).await;
    stop(node);
    disk.damage(DAMAGED);
    let actor_before = disk.actors[DAMAGED.0 as usize];
    stop(disk.start());
    assert_ne!(disk.actors[DAMAGED.0 as usize], actor_before, "fresh actor");
    let actor_marked = disk.actors[DAMAGED.0 as usize];

    // Restarted before any repair: still marked, from the marker file,
    // and the actor is not renewed again.
    let node = disk.start();
    assert_eq!(node.damaged_partitions(), vec![DAMAGED]);
    assert_eq!(disk.actors[DAMAGED.0 as usize], actor_marked);
    assert!(matches!(
        node.repair_partitions(&[Partition(RING)]),
        Err(eddy_kv::repair::RepairError::NoSuchPartition(_))
    ));
    node.repair_partitions(&[DAMAGED]).unwrap();
    assert!(node.damaged_partitions().is_empty());
    stop(node);
}

/// A node over memory backends (marks kept in memory only).
fn memory_node() -> Arc<Node> {
    let config = NodeConfig {
        ring_size: RING,
        ..NodeConfig::default()
    };
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(eddy_storage::memory::MemoryBackend::new(
            eddy_storage::memory::MemoryConfig::default(),
        ));
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

#[tokio::test]
async fn repair_replaces_copies_that_cannot_be_read() {
    let node = memory_node();
    put(&node, 1, "v").await;
    let (marked, _) = node.preflist(&bucket(), &key(1)).unwrap()[1].clone();
    node.mark_damaged(marked, None).unwrap();
    let k = storage_key(1);
    let garbage = eddy_storage::WriteOptions::NO_SYNC;
    let backend = node.partition_backend(marked).expect("a local partition");
    backend
        .put(&k.bucket, &k.key, b"not an object", &[], garbage)
        .unwrap();
    // A stray unreadable copy of a key (one the marked partition is a
    // replica of) that no healthy replica holds.
    let stray_key = (0..)
        .map(|n| format!("stray-{n}").into_bytes())
        .find(|s| {
            let list = node.preflist(&bucket(), s).unwrap();
            list.iter().any(|(p, _)| *p == marked)
        })
        .unwrap();
    let stray = StorageKey {
        bucket: k.bucket.clone(),
        key: stray_key,
    };
    backend
        .put(&stray.bucket, &stray.key, b"junk", &[], garbage)
        .unwrap();
    assert_eq!(get(&node, 1).await, Some(b"v".to_vec()));

    let summary = node.repair_partitions(&[marked]).unwrap();
    assert_eq!(summary.failed, 0, "{summary:?}");
    assert_eq!(stored(&node, marked, 1), Some(b"v".to_vec()));
    assert_eq!(backend.get(&stray.bucket, &stray.key).unwrap(), None);
    assert_eq!(summary.removed, 1, "{summary:?}");
    assert!(node.damaged_partitions().is_empty());
}

/// Keys of `bucket()` as the node lists them.
async fn listed(node: &Arc<Node>) -> Vec<Vec<u8>> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let lister = node.clone();
    tokio::task::spawn_blocking(move || lister.list_keys_blocking(&bucket(), &tx))
        .await
        .unwrap()
        .unwrap();
    let mut keys = Vec::new();
    while let Some(chunk) = rx.recv().await {
        keys.extend(chunk);
    }
    keys.sort();
    keys
}

#[tokio::test]
async fn key_listing_goes_around_a_marked_primary() {
    let node = memory_node();
    // Two keys whose primary partition is the same.
    let primary = |i: u32| node.preflist(&bucket(), &key(i)).unwrap()[0].0;
    let lost = 0;
    let ghost = (1..).find(|i| primary(*i) == primary(lost)).unwrap();
    put(&node, lost, "v").await;
    put(&node, ghost, "v").await;
    // Damage: the primary lost `lost`; only it still holds `ghost`, whose
    // delete the others reaped.
    let marked = primary(lost);
    node.mark_damaged(marked, None).unwrap();
    let (kl, kg) = (storage_key(lost), storage_key(ghost));
    let opts = eddy_storage::WriteOptions::NO_SYNC;
    node.partition_backend(marked)
        .expect("a local partition")
        .delete(&kl.bucket, &kl.key, opts)
        .unwrap();
    for (p, _) in &node.preflist(&bucket(), &key(ghost)).unwrap()[1..] {
        node.partition_backend(*p)
            .expect("a local partition")
            .delete(&kg.bucket, &kg.key, opts)
            .unwrap();
    }
    assert_eq!(listed(&node).await, vec![key(lost)]);
}

#[tokio::test]
async fn a_marked_replica_does_not_coordinate_puts() {
    let node = memory_node();
    let primary = node.preflist(&bucket(), &key(1)).unwrap()[0].0;
    let k = storage_key(1);
    let opts = eddy_storage::WriteOptions::NO_SYNC;
    put(&node, 1, "v1").await;
    let v1 = node
        .partition_backend(primary)
        .expect("a local partition")
        .get(&k.bucket, &k.key)
        .unwrap()
        .unwrap();
    put(&node, 1, "v2").await;
    // The primary lost v2 (and kept its actor, whose next counter v2 used).
    node.partition_backend(primary)
        .expect("a local partition")
        .put(&k.bucket, &k.key, &v1, &[], opts)
        .unwrap();
    node.mark_damaged(primary, None).unwrap();
    // (No get first: its read repair would hand v2 back to the primary.)
    // Coordinated by the damaged primary, v3 would reuse v2's dot and the
    // healthy replicas would keep v2.
    put(&node, 1, "v3").await;
    assert_eq!(get(&node, 1).await, Some(b"v3".to_vec()));
    for (p, _) in node.preflist(&bucket(), &key(1)).unwrap() {
        assert_eq!(
            stored(&node, p, 1),
            Some(b"v3".to_vec()),
            "partition {}",
            p.0
        );
    }
}
