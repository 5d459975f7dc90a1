//! Per-bucket TTL (design note 027) on bitcask, lsm and memory, under a
//! manual clock: an object of a bucket with a `ttl` is found until its
//! newest write is `ttl` old, then neither a get, a 2i query, `$bucket`
//! nor a key listing returns it, before any sweep; a bucket without a ttl
//! keeps its objects; the sweep then deletes exactly the expired copies
//! (their side-store records and backend records), and a key written
//! again lives on from its new write. A restart (commit-log replay) keeps
//! the expiry.

use std::path::Path;
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::index::IndexRequest;
use eddy_model::props::{BucketProps, PropsPatch};
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_ring::{Partition, Ring};
use eddy_side::SideEnv;
use eddy_storage::clock::ManualClock;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{Backend, Clock};
use eddy_vnode::commitlog::LogOptions;

mod dirs;
use dirs::copy_dir;

const RING: u32 = 8;
const START_SECS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Bitcask,
    Lsm,
    Memory,
}

struct Setup {
    kind: Kind,
    clock: Arc<ManualClock>,
    side: Option<SideEnv>,
    lsm: Option<eddy_lsm::LsmEnv>,
}

impl Setup {
    fn new(kind: Kind, dir: &Path) -> Setup {
        let clock = ManualClock::new(START_SECS);
        let side = (kind != Kind::Memory)
            .then(|| SideEnv::open(&dir.join("side"), Default::default()).unwrap());
        let lsm = (kind == Kind::Lsm).then(|| {
            let config = eddy_lsm::LsmConfig {
                clock: clock.clone(),
                ..Default::default()
            };
            eddy_lsm::LsmEnv::open(&dir.join("lsm"), &config).unwrap()
        });
        Setup {
            kind,
            clock,
            side,
            lsm,
        }
    }

    fn parts(&self, dir: &Path, p: Partition) -> VnodeParts {
        let clock: Arc<dyn Clock> = self.clock.clone();
        let backend: Arc<dyn Backend> = match (self.kind, &self.lsm) {
            (Kind::Lsm, Some(env)) => Arc::new(env.open_partition(&format!("p{}", p.0)).unwrap()),
            (Kind::Bitcask, _) => {
                let config = BitcaskConfig {
                    clock,
                    ..BitcaskConfig::default()
                };
                Arc::new(Bitcask::open(&dir.join(format!("b{}", p.0)), config).unwrap())
            }
            _ => Arc::new(MemoryBackend::new(MemoryConfig {
                clock,
                ..MemoryConfig::default()
            })),
        };
        let side = self.side.as_ref().map(|env| {
            let store = env.open_vnode(u64::from(p.0), 1).unwrap();
            store.mark_built().unwrap();
            Arc::new(store)
        });
        VnodeParts {
            backend,
            side,
            actor: Actor(500 + u64::from(p.0)),
            incarnation: 1,
        }
    }

    fn start(&self, dir: &Path) -> Arc<Node> {
        // The ttl is known before the commit log's replay, as a node's
        // stored bucket props are.
        let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
        let ttl = serde_json::json!({ "ttl": "1m" });
        let patch = PropsPatch::from_json(ttl.as_object().unwrap()).unwrap();
        (registry.set_bucket_props("default", b"t", &patch)).unwrap();
        let config = NodeConfig {
            ring_size: RING,
            clock: self.clock.clone(),
            commit_log_dir: Some(dir.join("log")),
            commit_log: LogOptions::default(),
            expiry_sweep_every: None,
            ..NodeConfig::default()
        };
        let ring = Ring::single(RING, config.node_name.clone()).unwrap();
        let partitions: Vec<Partition> = ring.partitions().collect();
        Node::start_with(config, registry, ring, &partitions, |p| self.parts(dir, p)).unwrap()
    }

    fn advance(&self, secs: u64) {
        self.clock.advance(secs);
    }
}

fn ttl_bucket() -> BucketRef {
    BucketRef::default_type("t")
}

fn plain_bucket() -> BucketRef {
    BucketRef::default_type("p")
}

async fn put(node: &Arc<Node>, bucket: BucketRef, key: &str) {
    let mut content = Content::new(key.as_bytes().to_vec());
    content.meta.indexes = vec![(b"f_bin".to_vec(), b"x".to_vec())];
    let req = PutRequest {
        bucket,
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content,
        options: PutOptions::default(),
    };
    node.put(req).await.unwrap();
}

async fn found(node: &Arc<Node>, bucket: BucketRef, key: &str) -> bool {
    let req = GetRequest {
        bucket,
        key: key.as_bytes().to_vec(),
        options: GetOptions::default(),
    };
    matches!(node.get(req).await.unwrap(), GetResponse::Found(_))
}

/// The keys a 2i query, `$bucket` and a key listing each return, sorted.
async fn listed(node: &Arc<Node>, bucket: BucketRef) -> [Vec<String>; 3] {
    let node = node.clone();
    tokio::task::spawn_blocking(move || {
        let query = |field: &str, term: &str| {
            let req = IndexRequest {
                field: field.as_bytes().to_vec(),
                start: term.as_bytes().to_vec(),
                ..IndexRequest::default()
            };
            let page = node.index_query_blocking(&bucket, &req).unwrap();
            sorted(page.results.into_iter().map(|(_, k)| k))
        };
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        node.list_keys_blocking(&bucket, &tx).unwrap();
        drop(tx);
        let mut keys = Vec::new();
        while let Ok(chunk) = rx.try_recv() {
            keys.extend(chunk);
        }
        [query("f_bin", "x"), query("$bucket", "_"), sorted(keys)]
    })
    .await
    .unwrap()
}

fn sorted(keys: impl IntoIterator<Item = Vec<u8>>) -> Vec<String> {
    let mut out: Vec<String> = keys
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect();
    out.sort();
    out
}

/// What a query, `$bucket` and a listing each answer when all agree.
fn three(keys: &[String]) -> [Vec<String>; 3] {
    [keys.to_vec(), keys.to_vec(), keys.to_vec()]
}

fn names(keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

/// Side-store records of `key` across the node's vnodes.
fn side_records(node: &Arc<Node>, bucket: &BucketRef, key: &str) -> usize {
    let storage = bucket.storage_bucket();
    (0..RING)
        .filter_map(|p| node.vnode(Partition(p)))
        .filter_map(|v| v.stores().side.clone())
        .filter(|s| s.key_record(&storage, key.as_bytes()).unwrap().is_some())
        .count()
}

/// Syncs every vnode's stores, as a checkpoint does, and compacts its
/// side store.
fn checkpoint_and_compact(node: &Arc<Node>) {
    for vnode in (0..RING).filter_map(|p| node.vnode(Partition(p))) {
        vnode.stores().sync().unwrap();
        if let Some(side) = &vnode.stores().side {
            side.compact().unwrap();
        }
    }
}

async fn expires_everywhere(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(kind, dir.path());
    let node = setup.start(dir.path());
    let keys = ["k1", "k2", "k3"];
    for k in keys {
        put(&node, ttl_bucket(), k).await;
        put(&node, plain_bucket(), k).await;
    }
    setup.advance(30);
    put(&node, ttl_bucket(), "k1").await;
    setup.advance(29);
    let all = names(&keys);
    assert_eq!(listed(&node, ttl_bucket()).await, three(&all), "{kind:?}");

    // 61 s after the first writes: k2 and k3 are gone everywhere, before
    // any sweep; k1, written again at 30 s, and bucket p stay.
    setup.advance(2);
    assert!(!found(&node, ttl_bucket(), "k2").await, "{kind:?}");
    assert!(found(&node, ttl_bucket(), "k1").await, "{kind:?}");
    let k1 = names(&["k1"]);
    assert_eq!(listed(&node, ttl_bucket()).await, three(&k1), "{kind:?}");
    assert_eq!(listed(&node, plain_bucket()).await, three(&all));

    // The sweep deletes the expired copies (n_val 3 each) where a side
    // store names them; a memory backend expires its own.
    let deleted = node.sweep_expired(1000).unwrap();
    let sided = kind != Kind::Memory;
    assert_eq!(deleted, if sided { 6 } else { 0 }, "{kind:?}");
    assert_eq!(node.sweep_expired(1000).unwrap(), 0);
    if sided {
        // The swept keys' side entries stay until a checkpoint made the
        // sweep durable and a compaction reached them.
        assert_eq!(side_records(&node, &ttl_bucket(), "k2"), 3);
        checkpoint_and_compact(&node);
        assert_eq!(side_records(&node, &ttl_bucket(), "k2"), 0);
        assert_eq!(side_records(&node, &ttl_bucket(), "k1"), 3);
        // Every vnode swept (found nothing due, or deleted), so each
        // durable mark moved once, and the expiry order is trimmed to it.
        assert_eq!(node.trim_swept_orders().unwrap(), RING as usize);
        assert_eq!(node.trim_swept_orders().unwrap(), 0);
    }
    assert_eq!(listed(&node, ttl_bucket()).await, three(&k1), "{kind:?}");

    if !sided {
        // A memory node keeps nothing across a restart.
        return;
    }
    // A restart replays the log: the expiry holds, nothing comes back.
    node.shutdown();
    drop(node);
    let node = setup.start(dir.path());
    assert_eq!(
        listed(&node, ttl_bucket()).await,
        three(&k1),
        "{kind:?} after a restart"
    );
    setup.advance(30);
    assert!(!found(&node, ttl_bucket(), "k1").await);
    let none: Vec<String> = Vec::new();
    assert_eq!(listed(&node, ttl_bucket()).await, three(&none));
    assert_eq!(node.sweep_expired(1000).unwrap(), 3);
    assert_eq!(listed(&node, plain_bucket()).await, three(&all));
    node.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_expire_on_bitcask() {
    expires_everywhere(Kind::Bitcask).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_expire_on_lsm() {
    expires_everywhere(Kind::Lsm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_expire_on_memory() {
    expires_everywhere(Kind::Memory).await;
}

/// Each partition's latest change of `key` in `bucket`, if it has one:
/// whether it says deleted.
fn latest_changes(node: &Arc<Node>, bucket: &BucketRef, key: &str) -> Vec<(u32, bool)> {
    let storage = bucket.storage_bucket();
    let mut out = Vec::new();
    for p in 0..RING {
        let vnode = node.vnode(Partition(p)).unwrap();
        let mut latest = None;
        vnode
            .changes_since(None, u64::MAX, &mut |c| {
                if c.bucket == storage && c.key == key.as_bytes() {
                    latest = Some(c.deleted);
                }
                true
            })
            .unwrap();
        out.extend(latest.map(|deleted| (p, deleted)));
    }
    out
}

/// A copy of an object that arrives (here by handoff) already expired,
/// after the sweep's walk passed its expiry, is deleted as it lands: its
/// latest change says so, and its side entries go with the next
/// checkpoint and compaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_landing_behind_the_sweep_is_deleted_as_it_lands() {
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(Kind::Bitcask, dir.path());
    let node = setup.start(dir.path());
    put(&node, ttl_bucket(), "k1").await;
    let storage = ttl_bucket().storage_bucket();
    let mut held = None;
    let mut holders = Vec::new();
    for p in 0..RING {
        let vnode = node.vnode(Partition(p)).unwrap();
        if let Some(bytes) = vnode.backend().get(&storage, b"k1").unwrap() {
            held = Some(bytes);
            holders.push(p);
        }
    }
    assert_eq!(holders.len(), 3);
    setup.advance(61);
    assert_eq!(node.sweep_expired(1000).unwrap(), 3);

    let other = (0..RING).find(|p| !holders.contains(p)).unwrap();
    let vnode = node.vnode(Partition(other)).unwrap();
    let key = eddy_vnode::msg::StorageKey {
        bucket: storage.clone(),
        key: b"k1".to_vec(),
    };
    let policy = eddy_vnode::msg::WritePolicy {
        allow_mult: false,
        last_write_wins: false,
        max_siblings: 100,
        write_once: false,
        ttl_secs: 60,
    };
    vnode
        .merge_handed(&key, held.unwrap().into(), policy)
        .unwrap();
    let mut want: Vec<(u32, bool)> = holders.iter().map(|p| (*p, true)).collect();
    want.push((other, true));
    want.sort_unstable();
    assert_eq!(latest_changes(&node, &ttl_bucket(), "k1"), want);
    assert_eq!(side_records(&node, &ttl_bucket(), "k1"), 4);
    checkpoint_and_compact(&node);
    assert_eq!(side_records(&node, &ttl_bucket(), "k1"), 0);
    node.shutdown();
}

/// What a sweep did and a crash lost before a checkpoint (its deletes,
/// its changes) is still in the expiry order after the restart: a
/// compaction before that checkpoint drops nothing, and the next sweep
/// deletes the keys again and records their changes.
async fn a_sweep_lost_to_a_crash_is_done_again(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let crashed = tempfile::tempdir().unwrap();
    let crashed = crashed.path();
    let keys = ["k1", "k2", "k3"];
    {
        let setup = Setup::new(kind, dir.path());
        let node = setup.start(dir.path());
        for k in keys {
            put(&node, ttl_bucket(), k).await;
        }
        setup.advance(61);
        assert_eq!(node.sweep_expired(1000).unwrap(), 9, "{kind:?}");
        for vnode in (0..RING).filter_map(|p| node.vnode(Partition(p))) {
            vnode.stores().side.as_ref().unwrap().compact().unwrap();
        }
        assert_eq!(side_records(&node, &ttl_bucket(), "k2"), 3, "{kind:?}");
        copy_dir(dir.path(), crashed);
        node.shutdown();
    }
    let setup = Setup::new(kind, crashed);
    setup.advance(61);
    let node = setup.start(crashed);
    node.sweep_expired(1000).unwrap();
    checkpoint_and_compact(&node);
    for k in keys {
        assert_eq!(side_records(&node, &ttl_bucket(), k), 0, "{kind:?} {k}");
        let changes = latest_changes(&node, &ttl_bucket(), k);
        assert_eq!(changes.len(), 3, "{kind:?} {k}: {changes:?}");
        assert!(changes.iter().all(|(_, deleted)| *deleted), "{kind:?} {k}");
    }
    node.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_lost_to_a_crash_is_done_again_on_bitcask() {
    a_sweep_lost_to_a_crash_is_done_again(Kind::Bitcask).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_lost_to_a_crash_is_done_again_on_lsm() {
    a_sweep_lost_to_a_crash_is_done_again(Kind::Lsm).await;
}
