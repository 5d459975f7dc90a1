//! Nodes in one process for handoff tests: each a `Node` over memory or
//! bitcask backends (wrapped by the node's `Watch`), with a `Handoffs`
//! serving the bulk lane of a simulated network.
//!
//! Writes go through `Node::put` with n_val 1: each node is given a ring
//! in which the partition under test is its own, so it coordinates the
//! write locally (no remote vnodes are needed).

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_net::sim::SimNetwork;
use eddy_net::{Incoming, Lane, Transport};
use eddy_object::{Actor, Content, RiakObject, codec};
use eddy_remote::handoff::{
    HandoffConfig, Handoffs, PartitionStore, TransferState, Underway, Watch,
};
use eddy_ring::{NodeName, Partition, Ring};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use parking_lot::Mutex;

pub const RING: u32 = 8;
/// The partition handed off in the tests.
pub const P: Partition = Partition(3);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Memory,
    Bitcask,
}

pub fn name(i: usize) -> NodeName {
    NodeName(format!("dev{i}@127.0.0.1"))
}

/// A ring of `RING` partitions owned by `owner` except P, owned by `p_owner`.
pub fn ring(owner: &NodeName, p_owner: &NodeName) -> Ring {
    let mut owners = vec![owner.clone(); RING as usize];
    owners[P.0 as usize] = p_owner.clone();
    Ring::from_owners(owners).unwrap()
}

/// A node's disk (bitcask) and the incarnations of its partitions.
pub struct Store {
    engine: Engine,
    root: PathBuf,
    incarnations: Mutex<HashMap<u32, u64>>,
    actors: AtomicU64,
    pub destroyed: AtomicU64,
}

impl Store {
    fn new(engine: Engine, root: PathBuf, actor_base: u64) -> Arc<Store> {
        Arc::new(Store {
            engine,
            root,
            incarnations: Mutex::default(),
            actors: AtomicU64::new(actor_base),
            destroyed: AtomicU64::new(0),
        })
    }

    fn dir(&self, p: Partition) -> PathBuf {
        self.root.join("partitions").join(p.0.to_string())
    }

    pub fn has_data_dir(&self, p: Partition) -> bool {
        self.dir(p).exists()
    }

    /// Opens `p` as its current incarnation (a destroy starts the next).
    fn open(&self, p: Partition) -> VnodeParts {
        let actor = Actor(self.actors.fetch_add(1, Ordering::Relaxed));
        let incarnation = *self.incarnations.lock().entry(p.0).or_insert(1);
        let backend: Arc<dyn Backend> = match self.engine {
            Engine::Memory => Arc::new(MemoryBackend::new(MemoryConfig::default())),
            Engine::Bitcask => {
                let config = BitcaskConfig {
                    merge_check_interval_ms: 0,
                    ..BitcaskConfig::default()
                };
                Arc::new(Bitcask::open(&self.dir(p), config).unwrap())
            }
        };
        VnodeParts {
            backend,
            side: None,
            actor,
            incarnation,
        }
    }
}

impl PartitionStore for Store {
    fn destroy(&self, p: Partition) -> Result<(), String> {
        *self.incarnations.lock().entry(p.0).or_insert(1) += 1;
        self.destroyed.fetch_add(1, Ordering::Relaxed);
        match self.engine {
            Engine::Memory => Ok(()),
            Engine::Bitcask => {
                eddy_storage::destroy::destroy_dir(&self.dir(p)).map_err(|e| e.to_string())
            }
        }
    }
}

struct Factory(Arc<Store>);

impl VnodeFactory for Factory {
    fn open(&self, p: Partition) -> Result<VnodeParts, String> {
        Ok(self.0.open(p))
    }
}

/// One node: its kv node, handoffs and transport.
pub struct Member {
    pub name: NodeName,
    pub node: Arc<Node>,
    pub handoffs: Arc<Handoffs>,
    pub transport: Transport,
    pub store: Arc<Store>,
}

/// The bucket the tests write: n_val 1, so the owner of P takes the write
/// alone; `allow_mult` as asked.
pub fn bucket(allow_mult: bool) -> BucketRef {
    match allow_mult {
        true => BucketRef::typed("mult", b"b".to_vec()),
        false => BucketRef::default_type(b"b".to_vec()),
    }
}

fn registry() -> Arc<BucketRegistry> {
    let defaults = BucketProps {
        n_val: 1,
        ..BucketProps::default()
    };
    let registry = Arc::new(BucketRegistry::new(defaults));
    let patch = serde_json::json!({"n_val": 1, "allow_mult": true});
    registry
        .create_type(
            "mult",
            &eddy_model::props::PropsPatch::from_json(patch.as_object().unwrap()).unwrap(),
        )
        .unwrap();
    registry.activate_type("mult").unwrap();
    registry
}

/// Handoff settings for tests: small batches, quick retries.
pub fn config(checkpoint_dir: Option<PathBuf>) -> HandoffConfig {
    HandoffConfig {
        batch_objects_max: 100,
        batch_bytes_max: 64 << 10,
        chunk_keys_max: 700,
        call_timeout: Duration::from_secs(5),
        retry_min: Duration::from_millis(50),
        retry_max: Duration::from_millis(400),
        checkpoint_dir,
        ..HandoffConfig::default()
    }
}

/// Starts node `name` on `transport` with vnodes for `partitions`; data
/// (bitcask) and checkpoints live under `root`.
pub fn start(
    name: NodeName,
    transport: Transport,
    engine: Engine,
    root: PathBuf,
    ring: Ring,
    partitions: &[Partition],
    actor_base: u64,
) -> Member {
    let store = Store::new(engine, root.clone(), actor_base);
    start_with_store(name, transport, store, ring, partitions)
}

/// [`start`] over an existing store (a restart keeps its incarnations).
pub fn start_with_store(
    name: NodeName,
    transport: Transport,
    store: Arc<Store>,
    ring: Ring,
    partitions: &[Partition],
) -> Member {
    let watch = Watch::new();
    let commit_log_dir = (store.engine == Engine::Bitcask).then(|| store.root.join("commit_log"));
    let node_config = NodeConfig {
        node_name: name.clone(),
        ring_size: RING,
        delete_mode: DeleteMode::Keep,
        commit_log_dir,
        ..NodeConfig::default()
    };
    let underway = Underway::new();
    let links = NodeLinks {
        vnode_factory: Some(watch.wrap_factory(Arc::new(Factory(store.clone())))),
        transfers: Some(underway.clone()),
        ..NodeLinks::default()
    };
    let opener = store.clone();
    let w = watch.clone();
    let node = Node::start_linked(node_config, links, registry(), ring, partitions, move |p| {
        let parts = opener.open(p);
        VnodeParts {
            backend: w.wrap(p, parts.backend),
            side: None,
            ..parts
        }
    })
    .unwrap();
    let checkpoints = store.root.join("handoff");
    let handoffs = Handoffs::new(
        &node,
        underway,
        transport.clone(),
        store.clone(),
        watch,
        config(Some(checkpoints)),
    );
    let weak = Arc::downgrade(&handoffs);
    transport
        .set_handler(Arc::new(move |incoming: Incoming| {
            if let (Lane::Bulk, Some(h)) = (incoming.lane, weak.upgrade()) {
                h.handle_bulk(incoming);
            }
        }))
        .unwrap();
    Member {
        name,
        node,
        handoffs,
        transport,
        store,
    }
}

impl Member {
    /// Stops the node as a crash would leave it for handoff: transfers end,
    /// the backends close.
    pub fn stop(self) -> Arc<Store> {
        self.handoffs.shutdown();
        self.node.shutdown();
        self.store
    }

    /// Writes `value` under `key` (no context: a blind write).
    pub async fn put(&self, bucket: &BucketRef, key: &[u8], value: &[u8]) {
        self.put_with(bucket, key, value, None).await;
    }

    pub async fn put_with(
        &self,
        bucket: &BucketRef,
        key: &[u8],
        value: &[u8],
        context: Option<eddy_object::VersionVector>,
    ) {
        let req = PutRequest {
            bucket: bucket.clone(),
            key: Some(key.to_vec()),
            context,
            content: Content::new(value.to_vec()),
            options: PutOptions::default(),
        };
        self.node.put(req).await.unwrap();
    }

    /// Deletes `key`, leaving a tombstone (delete_mode keep).
    pub async fn delete(&self, bucket: &BucketRef, key: &[u8]) {
        let req = DeleteRequest {
            bucket: bucket.clone(),
            key: key.to_vec(),
            context: None,
            options: DeleteOptions::default(),
        };
        self.node.delete(req).await.unwrap();
    }

    /// The object partition P's vnode here stores under `key`.
    pub fn stored(&self, bucket: &BucketRef, key: &[u8]) -> Option<RiakObject> {
        let backend = self.node.partition_backend(P)?;
        let bytes = backend.get(&bucket.storage_bucket(), key).unwrap()?;
        Some(codec::decode(&bytes).unwrap())
    }

    /// The values of the object stored under `key`, sorted.
    pub fn values(&self, bucket: &BucketRef, key: &[u8]) -> Vec<Vec<u8>> {
        let mut values: Vec<Vec<u8>> = self
            .stored(bucket, key)
            .map(|o| o.contents().map(|c| c.value.clone()).collect())
            .unwrap_or_default();
        values.sort();
        values
    }

    /// The state of the transfer of P.
    pub fn state(&self) -> Option<TransferState> {
        let transfers = self.handoffs.transfers();
        transfers
            .iter()
            .find(|t| t.partition == P)
            .map(|t| t.state.clone())
    }
}

/// `n` keys of `bucket` that hash to partition P.
pub fn keys(bucket: &BucketRef, n: usize) -> Vec<Vec<u8>> {
    keys_in(bucket, P, n)
}

/// `n` keys of `bucket` that hash to partition `p`.
pub fn keys_in(bucket: &BucketRef, p: Partition, n: usize) -> Vec<Vec<u8>> {
    let ring = ring(&name(0), &name(0));
    (0u64..)
        .map(|i| format!("key-{i:06}").into_bytes())
        .filter(|k| ring.partition_of(Node::key_hash(bucket, k)) == p)
        .take(n)
        .collect()
}

/// A simulated network with `n` nodes' transports.
pub fn network(seed: u64, n: usize) -> (SimNetwork, Vec<Transport>) {
    let net = SimNetwork::new(seed);
    let transports = (0..n).map(|i| net.add_node(name(i)).unwrap()).collect();
    (net, transports)
}

/// Waits (in virtual time) until `done` holds, failing after a long while.
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Two nodes on a simulated network seeded with `seed`: node 0 runs P's
/// vnode and both think it owns P; node 1 runs none (it owns P in its own
/// ring, so it takes writes for it once it has a vnode).
pub fn pair(seed: u64, engine: Engine, root: &tempfile::TempDir) -> (SimNetwork, Member, Member) {
    let (net, mut transports) = network(seed, 2);
    let t1 = transports.pop().unwrap();
    let t0 = transports.pop().unwrap();
    let path = |i: usize| root.path().join(format!("n{i}"));
    let m0 = start(
        name(0),
        t0,
        engine,
        path(0),
        ring(&name(0), &name(0)),
        &[P],
        1000,
    );
    let m1 = start(
        name(1),
        t1,
        engine,
        path(1),
        ring(&name(0), &name(1)),
        &[],
        2000,
    );
    (net, m0, m1)
}
