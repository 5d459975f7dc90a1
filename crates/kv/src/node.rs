//! The node: its ring, its vnodes and its bucket registry, and the entry
//! points the API layer calls. Coordination lives in [`crate::coordinator`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use eddy_object::Actor;
use eddy_ring::{NodeName, Partition, Ring, RingError};
use eddy_storage::Backend;

use crate::request::BucketRef;
use crate::types::BucketRegistry;
use crate::vnode::{Vnode, VnodeHandle};

/// What happens to a tombstone once a delete succeeded (`delete_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteMode {
    /// Reap after this many milliseconds (Riak's default: 3000).
    DelayMs(u64),
    /// Keep tombstones forever.
    Keep,
    /// Reap at once.
    Immediate,
}

/// Node settings the kv layer uses.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub node_name: NodeName,
    pub ring_size: u32,
    pub delete_mode: DeleteMode,
    /// Siblings above which a warning is logged.
    pub siblings_warn: usize,
    /// Siblings above which a write is refused.
    pub siblings_max: usize,
    /// Object size above which a warning is logged.
    pub object_size_warn_bytes: usize,
    /// Object size above which a write is refused.
    pub object_size_max_bytes: usize,
    /// Longest key accepted.
    pub key_bytes_max: usize,
    /// Timeout when a request names none (Riak's is 60 s).
    pub default_timeout_ms: u64,
    /// Make `dw` replies wait for an fsync of the vnode's backend (always
    /// true in a running node: a dw reply promises durability). False only
    /// for tests that measure the cost of that promise.
    pub sync_on_dw: bool,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            node_name: NodeName("eddy@127.0.0.1".into()),
            ring_size: 64,
            delete_mode: DeleteMode::DelayMs(3000),
            siblings_warn: 25,
            siblings_max: 100,
            object_size_warn_bytes: 5 * 1024 * 1024,
            object_size_max_bytes: 50 * 1024 * 1024,
            key_bytes_max: eddy_storage::limits::KEY_BYTES_MAX,
            default_timeout_ms: 60_000,
            sync_on_dw: true,
        }
    }
}

/// Operation counters for `/stats`.
#[derive(Debug, Default)]
pub struct NodeCounters {
    pub gets: AtomicU64,
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub read_repairs: AtomicU64,
    pub siblings_warnings: AtomicU64,
    /// Requests sent to vnodes: gets (including a delete's read).
    pub vnode_gets: AtomicU64,
    /// Requests sent to vnodes: puts (coordinated, replicated, repairs).
    pub vnode_puts: AtomicU64,
}

impl NodeCounters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A running single node.
pub struct Node {
    pub(crate) config: NodeConfig,
    pub(crate) ring: Ring,
    pub(crate) handles: Vec<VnodeHandle>,
    vnodes: parking_lot::Mutex<Vec<Vnode>>,
    pub(crate) registry: Arc<BucketRegistry>,
    pub counters: NodeCounters,
}

impl Node {
    /// Starts one vnode per partition; `open(p)` gives each partition's
    /// backend and the actor id it coordinates writes as.
    pub fn start(
        config: NodeConfig,
        registry: Arc<BucketRegistry>,
        mut open: impl FnMut(Partition) -> (Arc<dyn Backend>, Actor),
    ) -> Result<Arc<Node>, RingError> {
        let ring = Ring::single(config.ring_size, config.node_name.clone())?;
        let vnodes: Vec<Vnode> = ring
            .partitions()
            .map(|p| {
                let (backend, actor) = open(p);
                Vnode::start(p, actor, backend)
            })
            .collect();
        let handles = vnodes.iter().map(Vnode::handle).collect();
        Ok(Arc::new(Node {
            config,
            ring,
            handles,
            vnodes: parking_lot::Mutex::new(vnodes),
            registry,
            counters: NodeCounters::default(),
        }))
    }

    /// The node's settings.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// The bucket registry.
    pub fn registry(&self) -> &Arc<BucketRegistry> {
        &self.registry
    }

    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// The vnode of partition `p`.
    pub(crate) fn vnode(&self, p: Partition) -> &VnodeHandle {
        &self.handles[p.0 as usize]
    }

    /// Partition `p`'s backend (operators' tools and tests).
    pub fn partition_backend(&self, p: Partition) -> Arc<dyn Backend> {
        self.vnode(p).backend().clone()
    }

    /// The hash a key is placed by.
    pub fn key_hash(bucket: &BucketRef, key: &[u8]) -> u64 {
        eddy_ring::key_hash(bucket.bucket_type.as_bytes(), &bucket.bucket, key)
    }

    /// Stops every vnode (finishing queued work) and closes their backends.
    pub fn shutdown(&self) {
        let vnodes = std::mem::take(&mut *self.vnodes.lock());
        for v in vnodes {
            v.stop();
        }
    }
}
