//! The simulated cluster the sim_* tests drive: node processes over
//! simulated disks ([`disk`]) connected by `eddy_net::sim` ([`member`]),
//! each with a failure detector's view the test keeps in step with the
//! faults it injects ([`faults`]), and a ring the test changes by claim
//! while handoff moves the data ([`membership`]).
//!
//! Invariant: a node is running, paused (its links cut, its process and
//! page cache intact), killed (no process; its page cache and commit log
//! intact, which the next process replays) or powered off (no process; its
//! disk holds what it synced, and the next process starts from that). A node that left the
//! ring keeps running but takes no more client requests.

#![allow(dead_code)]

pub mod datatypes;
pub mod disk;
pub mod faults;
pub mod member;
pub mod membership;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

pub use eddy_checker::Acked;
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_net::sim::SimNetwork;
use eddy_object::{Content, RiakObject, VersionVector, codec, merge};
use eddy_remote::handoff::Completed;
use eddy_ring::{ClaimParams, NodeName, Partition, Ring, claim};
use eddy_storage::ManualClock;
use parking_lot::Mutex;

use disk::Disk;
use member::{Boot, Member};

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

/// One node: its disk, its view, and its process unless powered off.
struct Slot {
    name: NodeName,
    disk: Arc<Disk>,
    view: Arc<View>,
    member: Option<Member>,
    /// Processes started so far.
    generation: u64,
    /// Commit logs begun so far: a power loss begins a new one, as what
    /// the last held was never synced.
    logs: u64,
}

pub struct SimCluster {
    pub net: SimNetwork,
    slots: RefCell<Vec<Slot>>,
    /// The cluster's ring; every process gets it as it changes.
    ring: RefCell<Ring>,
    registry: Arc<BucketRegistry>,
    clock: Arc<ManualClock>,
    actors: Arc<AtomicU64>,
    completed: Arc<Mutex<Vec<Completed>>>,
    root: tempfile::TempDir,
    /// Paused nodes.
    crashed: RefCell<BTreeSet<usize>>,
    sides: RefCell<Option<(Vec<usize>, Vec<usize>)>>,
}

pub fn bucket() -> BucketRef {
    BucketRef::typed("sim", b"b".to_vec())
}

pub fn name(i: usize) -> NodeName {
    NodeName(format!("dev{}@sim", i + 1))
}

impl SimCluster {
    /// `size` nodes on a claimed ring, all up; the bucket type has the
    /// default props. The data type bucket types of [`datatypes::DT_TYPES`]
    /// exist too.
    pub async fn new(seed: u64, size: usize) -> SimCluster {
        SimCluster::with_props(seed, size, serde_json::json!({})).await
    }

    /// [`SimCluster::new`] with the bucket type's props patched by `props`.
    pub async fn with_props(seed: u64, size: usize, props: serde_json::Value) -> SimCluster {
        let names: Vec<NodeName> = (0..size).map(name).collect();
        let single = Ring::single(RING_SIZE, names[0].clone()).unwrap();
        let owners = claim(&single, &names, &ClaimParams::default())
            .unwrap()
            .owners;
        let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
        registry
            .create_type(
                "sim",
                &eddy_model::props::PropsPatch::from_json(props.as_object().unwrap()).unwrap(),
            )
            .unwrap();
        registry.activate_type("sim").unwrap();
        for (name, datatype) in datatypes::DT_TYPES {
            let props = serde_json::json!({ "datatype": datatype });
            registry
                .create_type(
                    name,
                    &eddy_model::props::PropsPatch::from_json(props.as_object().unwrap()).unwrap(),
                )
                .unwrap();
            registry.activate_type(name).unwrap();
        }
        let sim = SimCluster {
            net: SimNetwork::new(seed),
            slots: RefCell::default(),
            ring: RefCell::new(Ring::from_owners(owners).unwrap()),
            registry,
            clock: ManualClock::from_us(1_700_000_000_000_000),
            actors: Arc::new(AtomicU64::new(1)),
            completed: Arc::default(),
            root: scratch_dir(),
            crashed: RefCell::default(),
            sides: RefCell::default(),
        };
        for _ in 0..size {
            sim.add_node();
        }
        sim
    }

    /// Adds a node (a process on an empty disk) to the network, not to
    /// the ring; returns its index.
    pub(crate) fn add_node(&self) -> usize {
        let i = self.slots.borrow().len();
        let transport = self.net.add_node(name(i)).unwrap();
        self.slots.borrow_mut().push(Slot {
            name: name(i),
            disk: Disk::new(self.actors.clone()),
            view: Arc::default(),
            member: None,
            generation: 0,
            logs: 1,
        });
        self.boot(i, transport);
        self.update_views();
        i
    }

    /// Starts a process for node `i` on `transport`.
    fn boot(&self, i: usize, transport: eddy_net::Transport) {
        let mut slots = self.slots.borrow_mut();
        let slot = &mut slots[i];
        slot.generation += 1;
        let boot = Boot {
            name: slot.name.clone(),
            transport,
            disk: slot.disk.clone(),
            ring: self.ring.borrow().clone(),
            registry: self.registry.clone(),
            clock: self.clock.clone(),
            liveness: slot.view.clone(),
            log_dir: self.root.path().join(format!("n{i}/log{}", slot.logs)),
            completed: self.completed.clone(),
            generation: slot.generation,
        };
        slot.member = Some(member::start(boot));
    }

    /// Nodes so far (including any that left).
    pub fn size(&self) -> usize {
        self.slots.borrow().len()
    }

    /// Moves the wall clock on by a millisecond.
    pub fn tick(&self) {
        self.clock.advance_us(1_000);
    }

    /// Node `i`'s kv node; panics unless its process runs.
    #[allow(dead_code)]
    pub fn node(&self, i: usize) -> Arc<Node> {
        let slots = self.slots.borrow();
        let member = slots[i].member.as_ref();
        member.expect("node {i} runs no process").node.clone()
    }

    /// Node `i`'s kv node, if its process runs and its links work.
    fn reachable(&self, i: usize) -> Option<Arc<Node>> {
        if self.crashed.borrow().contains(&i) {
            return None;
        }
        let slots = self.slots.borrow();
        slots.get(i)?.member.as_ref().map(|m| m.node.clone())
    }

    /// One client operation on `key` at node `at`, recorded in `history`:
    /// half the time a put (with the key's last read context 60 % of the
    /// time), else a read that takes the context, or a delete with it.
    #[allow(dead_code)]
    pub async fn client_op(
        &self,
        rng: &mut impl rand::Rng,
        history: &mut eddy_checker::History,
        (at, step): (usize, usize),
        key: String,
    ) {
        let use_context = rng.random_bool(0.6);
        let context = history.contexts.get(&key).filter(|_| use_context).cloned();
        match rng.random_range(0..10) {
            0..=4 => {
                let value = format!("{key}@{step}");
                let acked = self.put((at, step), &key, &value, context.clone()).await;
                history.attempt(&key, context.as_ref(), acked);
            }
            5..=7 => {
                if let Some(vv) = self.get_context(at, &key).await {
                    history.contexts.insert(key, vv);
                }
            }
            _ => {
                let Some(context) = context else { return };
                let acked = self.delete((at, step), &key, context.clone()).await;
                history.attempt(&key, Some(&context), acked);
            }
        }
    }

    /// Writes `value` at node `at` with w = quorum; `None` unless acknowledged.
    pub async fn put(
        &self,
        (at, step): (usize, usize),
        key: &str,
        value: &str,
        context: Option<VersionVector>,
    ) -> Option<Acked> {
        let node = self.reachable(at)?;
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
        let resp = node.put(req).await.ok()?;
        Some(Acked {
            step,
            value: Some(value.as_bytes().to_vec()),
            vv: resp.object?.vv,
            context: context.unwrap_or_default(),
        })
    }

    /// Reads at node `at` with r = quorum: the context a client gets.
    pub async fn get_context(&self, at: usize, key: &str) -> Option<VersionVector> {
        let node = self.reachable(at)?;
        match node
            .get(get_request(key, GetOptions::default()))
            .await
            .ok()?
        {
            GetResponse::Found(o) => Some(o.vv),
            GetResponse::NotFound { tombstone_context } => {
                Some(tombstone_context.unwrap_or_default())
            }
        }
    }

    /// Reads at node `at` from every primary (r = pr = all): the object
    /// (a tombstone as an object with no live sibling), `None` if no
    /// primary has the key, `Err` if the read failed.
    pub async fn read_all(&self, at: usize, key: &str) -> Result<Option<RiakObject>, String> {
        let node = self.reachable(at).ok_or("node down")?;
        let options = GetOptions {
            r: Some(Quorum::All),
            pr: Some(Quorum::All),
            deleted_vclock: true,
            ..GetOptions::default()
        };
        let got = node.get(get_request(key, options)).await;
        match got.map_err(|e| e.to_string())? {
            GetResponse::Found(o) => Ok(Some(o)),
            GetResponse::NotFound {
                tombstone_context: None,
            } => Ok(None),
            GetResponse::NotFound {
                tombstone_context: Some(vv),
            } => Ok(Some(RiakObject {
                vv,
                siblings: Vec::new(),
            })),
        }
    }

    /// Deletes at node `at` with `context`; `None` unless acknowledged.
    pub async fn delete(
        &self,
        (at, step): (usize, usize),
        key: &str,
        context: VersionVector,
    ) -> Option<Acked> {
        let node = self.reachable(at)?;
        let req = DeleteRequest {
            bucket: bucket(),
            key: key.as_bytes().to_vec(),
            context: Some(context.clone()),
            options: DeleteOptions {
                timeout_ms: Some(TIMEOUT_MS),
                ..DeleteOptions::default()
            },
        };
        match node.delete(req).await.ok()? {
            DeleteOutcome::Deleted => Some(Acked {
                step,
                value: None,
                vv: context.clone(),
                context,
            }),
            DeleteOutcome::NotFound => None,
        }
    }

    /// The merge of every copy of `key` on every vnode of every running
    /// process.
    pub fn merged_copies(&self, key: &str) -> Option<RiakObject> {
        let mut merged: Option<RiakObject> = None;
        for copy in self.copies(&bucket(), key) {
            merged = Some(match merged {
                Some(m) => merge::merge(&m, &copy),
                None => copy,
            });
        }
        merged
    }

    /// Every copy of `key` in `bucket` on every vnode (primary or
    /// fallback) of every running process.
    pub fn copies(&self, bucket: &BucketRef, key: &str) -> Vec<RiakObject> {
        let storage_bucket = bucket.storage_bucket();
        let mut copies = Vec::new();
        for slot in self.slots.borrow().iter() {
            let Some(member) = &slot.member else { continue };
            for p in 0..RING_SIZE {
                let Some(backend) = member.node.partition_backend(Partition(p)) else {
                    continue;
                };
                let Ok(Some(bytes)) = backend.get(&storage_bucket, key.as_bytes()) else {
                    continue;
                };
                copies.push(codec::decode(&bytes).unwrap());
            }
        }
        copies
    }
}

/// Where the commit logs go: memory when the machine has a tmpfs (their
/// fsyncs cost nothing there, and the simulation never reads a log back
/// after a power loss), else the temporary directory.
fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::tempdir_in(shm).unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

fn get_request(key: &str, options: GetOptions) -> GetRequest {
    GetRequest {
        bucket: bucket(),
        key: key.as_bytes().to_vec(),
        options: GetOptions {
            timeout_ms: Some(TIMEOUT_MS),
            ..options
        },
    }
}
