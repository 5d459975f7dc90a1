//! The node: its ring, its vnodes, its commit log and its bucket registry,
//! and the entry points the API layer calls. Coordination lives in
//! [`crate::coordinator`].
//!
//! Start order: open every backend, replay the commit log into them, sync
//! them and drop the replayed segments, then open a fresh log and serve.
//! Shutdown reverses it: close the log (answering every waiter), close the
//! backends (which syncs them), and only if all closed cleanly delete the
//! log's segments.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use eddy_object::Actor;
use eddy_ring::{NodeName, Partition, Ring, RingError};
use eddy_storage::Backend;

use crate::clock::{Clock, SystemClock};
use crate::commitlog::{self, CommitLog, LogOptions};
use crate::request::BucketRef;
use crate::types::BucketRegistry;
use crate::vnode::table::VnodeTable;
use crate::vnode::{VnodeHandle, replay};

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
    /// Per-object limits on usermeta, links and index entries.
    pub meta_limits: crate::limits::MetaLimits,
    /// Timeout when a request names none (Riak's is 60 s).
    pub default_timeout_ms: u64,
    /// Where the node's commit log lives; `None` makes `dw` writes sync
    /// their backend instead (nodes over memory backends, tests).
    pub commit_log_dir: Option<PathBuf>,
    /// The commit log's sizes and intervals.
    pub commit_log: LogOptions,
    /// Where each partition's repair marker lives (`P/repair-needed`
    /// below it); `None` keeps marks in memory only (tests).
    pub partitions_dir: Option<PathBuf>,
    /// The wall clock coordinators stamp writes with.
    pub clock: Arc<dyn Clock>,
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
            meta_limits: crate::limits::MetaLimits::default(),
            default_timeout_ms: 60_000,
            commit_log_dir: None,
            commit_log: LogOptions::default(),
            partitions_dir: None,
            clock: Arc::new(SystemClock),
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

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// Why a node could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Ring(#[from] RingError),
    #[error(transparent)]
    Recover(#[from] commitlog::recover::RecoverError),
    #[error("commit log: {0}")]
    CommitLog(String),
}

/// A running node: the vnodes it runs for its ring, and the coordinators
/// of the requests it takes.
pub struct Node {
    pub(crate) config: NodeConfig,
    ring: ArcSwap<Ring>,
    pub(crate) vnodes: Arc<VnodeTable>,
    log: Option<Arc<CommitLog>>,
    pub(crate) registry: Arc<BucketRegistry>,
    pub counters: NodeCounters,
    /// Partition repair's bookkeeping (design note 009).
    pub(crate) repair: crate::repair::RepairState,
    /// The last write refused for lack of a resource (design note 008).
    pub(crate) write_refusal: crate::refusal::WriteRefusal,
    /// The tombstone reap queue.
    pub(crate) reaper: crate::coordinator::reap::Reaper,
    /// How requests reach other nodes' vnodes; unset on a single node.
    pub(crate) remote: OnceLock<Arc<dyn crate::router::RemoteVnodes>>,
    /// Opens the backends of vnodes started after the node (fallbacks,
    /// handoff receivers); unset: no vnode is started later.
    factory: OnceLock<Arc<dyn VnodeFactory>>,
    /// Serialises the start of vnodes, so a partition gets one.
    starting: parking_lot::Mutex<()>,
    /// The node itself, for work handed to other threads.
    pub(crate) me: std::sync::Weak<Node>,
}

/// Opens the backend of a vnode that starts while the node runs, and
/// gives the actor it coordinates as (a new one: design note 004).
pub trait VnodeFactory: Send + Sync {
    /// Opens partition `p`'s backend on this node. May block.
    fn open(&self, p: Partition) -> Result<(Arc<dyn Backend>, Actor), String>;
}

impl Node {
    /// Starts a single node: a ring of `config.ring_size` partitions, all
    /// its own; `open(p)` gives each partition's backend and the actor id
    /// it coordinates writes as.
    pub fn start(
        config: NodeConfig,
        registry: Arc<BucketRegistry>,
        open: impl FnMut(Partition) -> (Arc<dyn Backend>, Actor),
    ) -> Result<Arc<Node>, StartError> {
        let ring = Ring::single(config.ring_size, config.node_name.clone())?;
        let partitions: Vec<Partition> = ring.partitions().collect();
        Node::start_with(config, registry, ring, &partitions, open)
    }

    /// Starts a node of `ring` running a vnode for each of `partitions`
    /// (those it owns and those it holds data for); `open(p)` gives each
    /// one's backend and actor. With a commit log, what it holds for these
    /// partitions is replayed into their backends first; records of other
    /// partitions belong to vnodes this node no longer runs.
    pub fn start_with(
        config: NodeConfig,
        registry: Arc<BucketRegistry>,
        ring: Ring,
        partitions: &[Partition],
        mut open: impl FnMut(Partition) -> (Arc<dyn Backend>, Actor),
    ) -> Result<Arc<Node>, StartError> {
        let vnodes = Arc::new(VnodeTable::new(ring.size()));
        let opened: Vec<_> = partitions.iter().map(|p| (*p, open(*p))).collect();
        let log = match &config.commit_log_dir {
            Some(dir) => Some(Arc::new(start_log(
                dir,
                &config.commit_log,
                &opened,
                &vnodes,
            )?)),
            None => None,
        };
        for (p, (backend, actor)) in opened {
            vnodes.insert(crate::vnode::Vnode::new(p, actor, backend, log.clone()));
        }
        let node = Node {
            config,
            ring: ArcSwap::from_pointee(ring),
            vnodes,
            log,
            registry,
            counters: NodeCounters::default(),
            repair: Default::default(),
            write_refusal: Default::default(),
            reaper: Default::default(),
            remote: OnceLock::new(),
            factory: OnceLock::new(),
            starting: parking_lot::Mutex::new(()),
            me: std::sync::Weak::new(),
        };
        node.mark_damaged_at_start(node.config.partitions_dir.as_deref());
        Ok(Arc::new_cyclic(|me| Node {
            me: me.clone(),
            ..node
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

    /// Why the last write was refused because a resource (disk space,
    /// descriptors) ran out, until a write is acknowledged again.
    pub fn write_refusal(&self) -> Option<String> {
        self.write_refusal.reason()
    }

    /// The node's commit log, if it has one.
    pub fn commit_log(&self) -> Option<&Arc<CommitLog>> {
        self.log.as_ref()
    }

    /// The ring as this node knows it now.
    pub fn ring(&self) -> Arc<Ring> {
        self.ring.load_full()
    }

    /// The ring, without taking a reference (request paths).
    pub(crate) fn ring_now(&self) -> arc_swap::Guard<Arc<Ring>> {
        self.ring.load()
    }

    /// Replaces the ring (the cluster layer, after a membership change).
    pub fn set_ring(&self, ring: Ring) {
        self.ring.store(Arc::new(ring));
    }

    /// Connects the node to other nodes' vnodes (once).
    pub fn set_remote(&self, remote: Arc<dyn crate::router::RemoteVnodes>) {
        let _ = self.remote.set(remote);
    }

    /// Lets the node start vnodes while it runs (once).
    pub fn set_vnode_factory(&self, factory: Arc<dyn VnodeFactory>) {
        let _ = self.factory.set(factory);
    }

    /// Starts partition `p`'s vnode on this node if it runs none, and
    /// returns it. Blocking (opens a backend): not for a runtime thread.
    pub fn start_vnode(&self, p: Partition) -> Result<VnodeHandle, crate::KvError> {
        let _one_at_a_time = self.starting.lock();
        if let Some(vnode) = self.vnode(p) {
            return Ok(vnode);
        }
        if p.0 >= self.ring_now().size() {
            return Err(crate::KvError::NotHosted(p.0));
        }
        let factory = self.factory.get().ok_or(crate::KvError::NotHosted(p.0))?;
        let (backend, actor) = factory.open(p).map_err(crate::KvError::VnodeStart)?;
        let vnode = crate::vnode::Vnode::new(p, actor, backend, self.log.clone());
        self.vnodes.insert(vnode.clone());
        tracing::info!(partition = p.0, "vnode started");
        Ok(vnode)
    }

    /// The vnode of partition `p` on this node, if it runs one.
    pub(crate) fn vnode(&self, p: Partition) -> Option<VnodeHandle> {
        self.vnodes.get(p)
    }

    /// Every vnode this node runs, in partition order.
    pub(crate) fn local_vnodes(&self) -> Vec<VnodeHandle> {
        self.vnodes.all()
    }

    /// Partition `p`'s backend on this node (operators' tools and tests).
    pub fn partition_backend(&self, p: Partition) -> Option<Arc<dyn Backend>> {
        self.vnode(p).map(|v| v.backend().clone())
    }

    /// The hash a key is placed by.
    pub fn key_hash(bucket: &BucketRef, key: &[u8]) -> u64 {
        eddy_ring::key_hash(bucket.bucket_type.as_bytes(), &bucket.bucket, key)
    }

    /// The key's preference list: its bucket's n_val partitions, each with
    /// its owner, all primaries (Riak's `get_preflist`, PB and HTTP).
    pub fn preflist(
        &self,
        bucket: &BucketRef,
        key: &[u8],
    ) -> Result<Vec<(Partition, NodeName)>, crate::KvError> {
        let props = self.props(bucket)?;
        self.check_key(key)?;
        let hash = Node::key_hash(bucket, key);
        let ring = self.ring_now();
        let list = ring.preflist(hash, props.n_val);
        Ok(list.into_iter().map(|(p, n)| (p, n.clone())).collect())
    }

    /// Closes the commit log (answering every waiter) and every backend;
    /// deletes the log's segments if every backend closed cleanly.
    pub fn shutdown(&self) {
        let log_closed = self.log.as_ref().is_none_or(|log| match log.close() {
            Ok(()) => true,
            Err(e) => {
                tracing::error!("commit log: {e}");
                false
            }
        });
        let mut clean = log_closed;
        for v in self.local_vnodes() {
            if let Err(e) = v.close() {
                tracing::error!(partition = v.partition.0, "closing backend: {e}");
                clean = false;
            }
        }
        if let (true, Some(log)) = (clean, &self.log)
            && let Err(e) = log.remove_segments()
        {
            tracing::warn!("removing commit log segments: {e}");
        }
    }
}

/// A partition's backend and the actor its vnode coordinates as.
type Opened = (Arc<dyn Backend>, Actor);

/// Replays the log in `dir` into the `opened` partitions' backends, syncs
/// them, drops what was replayed and opens a fresh log whose checkpoint
/// syncs every vnode in `vnodes` at the time.
fn start_log(
    dir: &std::path::Path,
    opts: &LogOptions,
    opened: &[(Partition, Opened)],
    vnodes: &Arc<VnodeTable>,
) -> Result<CommitLog, StartError> {
    let backends: Vec<_> = opened.iter().map(|(p, (b, _))| (*p, b.clone())).collect();
    let mut skipped = 0u64;
    let recovered = commitlog::recover(dir, |record| {
        match opened.iter().find(|(p, _)| p.0 == record.partition) {
            Some((_, (backend, _))) => replay::apply_record(&**backend, record),
            None => {
                skipped += 1;
                Ok(())
            }
        }
    })?;
    if recovered.records > 0 {
        tracing::info!(
            records = recovered.records,
            skipped,
            segments = recovered.segments.len(),
            "commit log replayed"
        );
    }
    sync_each(&backends, Duration::ZERO).map_err(StartError::CommitLog)?;
    recovered
        .remove()
        .map_err(|e| StartError::CommitLog(format!("removing replayed segments: {e}")))?;
    let pace = opts.checkpoint_pace;
    let table = Arc::downgrade(vnodes);
    let checkpoint = move || {
        let live = table.upgrade().map(|t| t.all()).unwrap_or_default();
        let backends: Vec<_> = live
            .iter()
            .map(|v| (v.partition, v.backend().clone()))
            .collect();
        sync_each(&backends, pace)
    };
    CommitLog::open(
        dir,
        recovered.next_seq(),
        opts.clone(),
        Box::new(checkpoint),
    )
    .map_err(|e| StartError::CommitLog(format!("{}: {e}", dir.display())))
}

/// Syncs every backend, pausing `pace` between two, so that a checkpoint's
/// writeback reaches the disk as a trickle beside the log's fdatasyncs
/// rather than as one burst in front of them.
fn sync_each(backends: &[(Partition, Arc<dyn Backend>)], pace: Duration) -> Result<(), String> {
    for (i, (p, b)) in backends.iter().enumerate() {
        if i > 0 && !pace.is_zero() {
            std::thread::sleep(pace);
        }
        b.sync().map_err(|e| format!("partition {}: {e}", p.0))?;
    }
    Ok(())
}
