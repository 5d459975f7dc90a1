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
        let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
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
        let node =
            Node::start_with(config, registry, ring, &partitions, |p| self.parts(dir, p)).unwrap();
        let ttl = serde_json::json!({ "ttl": "1m" });
        let patch = PropsPatch::from_json(ttl.as_object().unwrap()).unwrap();
        node.set_bucket_props(&ttl_bucket(), &patch).unwrap();
        node
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
        assert_eq!(side_records(&node, &ttl_bucket(), "k2"), 0);
        assert_eq!(side_records(&node, &ttl_bucket(), "k1"), 3);
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
