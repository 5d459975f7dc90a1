//! The simulated cluster the sim_* tests drive: nodes over memory backends
//! connected by `eddy_net::sim`, each with a failure detector's view the
//! test keeps in step with the faults it injects.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

pub use eddy_checker::Acked;
use eddy_kv::clock::ManualClock;
use eddy_kv::props::BucketProps;
use eddy_kv::remote::{Inline, NetRemote, RemoteConfig};
use eddy_kv::router::unanswerable;
use eddy_kv::types::BucketRegistry;
use eddy_kv::*;
use eddy_net::sim::SimNetwork;
use eddy_object::{Actor, Content, RiakObject, VersionVector, codec, merge};
use eddy_ring::{ClaimParams, NodeName, Partition, Ring, claim};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use parking_lot::Mutex;

pub const RING_SIZE: u32 = 16;
const TIMEOUT_MS: u64 = 5_000;

/// Which nodes one node believes down.
#[derive(Default)]
pub struct View {
    down: Mutex<BTreeSet<NodeName>>,
}

impl Liveness for View {
    fn is_up(&self, node: &NodeName) -> bool {
        !self.down.lock().contains(node)
    }
}

/// Opens empty memory backends for one node. Each vnode's actor names the
/// node, the partition and how many vnodes of that partition the node
/// opened before: unique, and the same in every run of a seed whichever
/// thread a fallback starts on first.
struct Memory {
    node: u64,
    opened: Mutex<BTreeMap<Partition, u64>>,
}

impl Memory {
    fn new(node: usize) -> Memory {
        Memory {
            node: node as u64 + 1,
            opened: Mutex::default(),
        }
    }
}

impl VnodeFactory for Memory {
    fn open(&self, p: Partition) -> Result<VnodeParts, String> {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        let mut opened = self.opened.lock();
        let nth = opened.entry(p).or_insert(0);
        *nth += 1;
        let actor = self.node << 48 | u64::from(p.0) << 16 | *nth;
        Ok((backend, Actor(actor)).into())
    }
}

pub struct SimCluster {
    pub net: SimNetwork,
    pub names: Vec<NodeName>,
    pub nodes: Vec<Arc<Node>>,
    views: Vec<Arc<View>>,
    clock: Arc<ManualClock>,
    crashed: RefCell<BTreeSet<usize>>,
    sides: RefCell<Option<(Vec<usize>, Vec<usize>)>>,
}

pub fn bucket() -> BucketRef {
    BucketRef::typed("sim", b"b".to_vec())
}

impl SimCluster {
    /// `size` nodes on a claimed ring, all up.
    pub async fn new(seed: u64, size: usize) -> SimCluster {
        let net = SimNetwork::new(seed);
        let names: Vec<NodeName> = (0..size)
            .map(|i| NodeName(format!("dev{}@sim", i + 1)))
            .collect();
        let single = Ring::single(RING_SIZE, names[0].clone()).unwrap();
        let ring = Ring::from_owners(
            claim(&single, &names, &ClaimParams::default())
                .unwrap()
                .owners,
        )
        .unwrap();
        let registry = Arc::new(BucketRegistry::in_memory(BucketProps::default()));
        let patch = serde_json::json!({}).as_object().cloned().unwrap();
        registry.create_type("sim", &patch).unwrap();
        registry.activate_type("sim").unwrap();
        let clock = Arc::new(ManualClock::new(1_700_000_000_000_000));
        let mut nodes = Vec::new();
        let mut views = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let config = NodeConfig {
                node_name: name.clone(),
                ring_size: RING_SIZE,
                delete_mode: DeleteMode::Keep,
                clock: clock.clone(),
                ..NodeConfig::default()
            };
            let factory = Memory::new(i);
            let owned = ring.owned_by(name);
            let node = Node::start_with(config, registry.clone(), ring.clone(), &owned, |p| {
                factory.open(p).unwrap()
            })
            .unwrap();
            let view = Arc::new(View::default());
            node.set_liveness(view.clone());
            node.set_vnode_factory(Arc::new(factory));
            connect(&node, &net, name);
            nodes.push(node);
            views.push(view);
        }
        SimCluster {
            net,
            names,
            nodes,
            views,
            clock,
            crashed: RefCell::default(),
            sides: RefCell::default(),
        }
    }

    /// Moves the wall clock on by a millisecond.
    pub fn tick(&self) {
        self.clock.advance_us(1_000);
    }

    fn is_crashed(&self, i: usize) -> bool {
        self.crashed.borrow().contains(&i)
    }

    /// Writes `value` at node `at` with w = quorum; `None` unless acknowledged.
    pub async fn put(
        &self,
        (at, step): (usize, usize),
        key: &str,
        value: &str,
        context: Option<VersionVector>,
    ) -> Option<Acked> {
        if self.is_crashed(at) {
            return None;
        }
        let req = PutRequest {
            bucket: bucket(),
            key: Some(key.as_bytes().to_vec()),
            context: context.clone(),
            content: Content::new(value.as_bytes().to_vec()),
            options: PutOptions {
                return_body: true,
                timeout_ms: Some(TIMEOUT_MS),
                ..PutOptions::default()
            },
        };
        let resp = self.nodes[at].put(req).await.ok()?;
        Some(Acked {
            step,
            value: Some(value.as_bytes().to_vec()),
            vv: resp.object?.vv,
            context: context.unwrap_or_default(),
        })
    }

    /// Reads at node `at` with r = quorum: the context a client gets.
    pub async fn get_context(&self, at: usize, key: &str) -> Option<VersionVector> {
        if self.is_crashed(at) {
            return None;
        }
        let req = GetRequest {
            bucket: bucket(),
            key: key.as_bytes().to_vec(),
            options: GetOptions {
                timeout_ms: Some(TIMEOUT_MS),
                ..GetOptions::default()
            },
        };
        match self.nodes[at].get(req).await.ok()? {
            GetResponse::Found(o) => Some(o.vv),
            GetResponse::NotFound { tombstone_context } => {
                Some(tombstone_context.unwrap_or_default())
            }
        }
    }

    /// Deletes at node `at` with `context`; `None` unless acknowledged.
    pub async fn delete(
        &self,
        (at, step): (usize, usize),
        key: &str,
        context: VersionVector,
    ) -> Option<Acked> {
        if self.is_crashed(at) {
            return None;
        }
        let req = DeleteRequest {
            bucket: bucket(),
            key: key.as_bytes().to_vec(),
            context: Some(context.clone()),
            options: DeleteOptions {
                timeout_ms: Some(TIMEOUT_MS),
                ..DeleteOptions::default()
            },
        };
        match self.nodes[at].delete(req).await.ok()? {
            DeleteOutcome::Deleted => Some(Acked {
                step,
                value: None,
                vv: context.clone(),
                context,
            }),
            DeleteOutcome::NotFound => None,
        }
    }

    /// Cuts the network between two sides; each side's nodes see the
    /// other's as down.
    pub fn partition(&self, a: &[usize], b: &[usize]) {
        let names = |s: &[usize]| s.iter().map(|i| self.names[*i].clone()).collect::<Vec<_>>();
        self.net.partition(&names(a), &names(b));
        *self.sides.borrow_mut() = Some((a.to_vec(), b.to_vec()));
        self.update_views();
    }

    /// Ends every partition.
    pub fn heal(&self) {
        self.net.heal();
        *self.sides.borrow_mut() = None;
        self.update_views();
    }

    /// Cuts every link of node `i` (its data stays: the process paused).
    pub fn crash(&self, i: usize) {
        if self.crashed.borrow_mut().insert(i) {
            self.net.crash(&self.names[i]).unwrap();
        }
        self.update_views();
    }

    /// Brings every crashed node back.
    pub fn restore_all(&self) {
        for i in std::mem::take(&mut *self.crashed.borrow_mut()) {
            self.net.restore(&self.names[i]).unwrap();
        }
        self.update_views();
    }

    fn update_views(&self) {
        let crashed = self.crashed.borrow();
        let sides = self.sides.borrow();
        for (i, view) in self.views.iter().enumerate() {
            let mut down = view.down.lock();
            down.clear();
            for j in 0..self.names.len() {
                let apart = sides.as_ref().is_some_and(|(a, b)| {
                    (a.contains(&i) && b.contains(&j)) || (b.contains(&i) && a.contains(&j))
                });
                if j != i && (crashed.contains(&j) || apart) {
                    down.insert(self.names[j].clone());
                }
            }
        }
    }

    /// Lets every message in flight land.
    pub async fn settle(&self) {
        tokio::time::sleep(Duration::from_secs(30)).await;
    }

    /// The merge of every copy of `key` on every vnode of every node.
    pub fn merged_copies(&self, key: &str) -> Option<RiakObject> {
        let storage_bucket = bucket().storage_bucket();
        let mut merged: Option<RiakObject> = None;
        for node in &self.nodes {
            for p in 0..RING_SIZE {
                let Some(backend) = node.partition_backend(Partition(p)) else {
                    continue;
                };
                let Some(bytes) = backend.get(&storage_bucket, key.as_bytes()).unwrap() else {
                    continue;
                };
                let copy = codec::decode(&bytes).unwrap();
                merged = Some(match merged {
                    Some(m) => merge::merge(&m, &copy),
                    None => copy,
                });
            }
        }
        merged
    }
}

/// Connects `node` to the simulated network as `name`, running inbound
/// requests inline on the network's driver (deterministic).
fn connect(node: &Arc<Node>, net: &SimNetwork, name: &NodeName) {
    let config = RemoteConfig {
        request_id_start: 1,
        ..RemoteConfig::default()
    };
    let remote = NetRemote::new(net.add_node(name.clone()).unwrap(), config);
    node.set_remote(remote.clone());
    let weak: Weak<Node> = Arc::downgrade(node);
    remote
        .serve(
            Arc::new(move |to, req, reply| match weak.upgrade() {
                Some(n) => n.receive(to.partition, req, reply),
                None => unanswerable(to.partition, &req, &reply, KvError::ShuttingDown),
            }),
            Arc::new(Inline),
        )
        .unwrap();
    remote.install().unwrap();
    tokio::spawn(remote.watch_peers());
}
