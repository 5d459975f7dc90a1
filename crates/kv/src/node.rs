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
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use eddy_object::Actor;
use eddy_ring::{NodeName, Partition, Ring, RingError};
use eddy_storage::{Backend, Clock, SystemClock};

use crate::coordinator::RingView;
use eddy_model::request::BucketRef;
use eddy_model::types::BucketRegistry;
use eddy_vnode::commitlog::{self, CommitLog, LogOptions};
use eddy_vnode::entries::Stores;
use eddy_vnode::table::VnodeTable;
use eddy_vnode::{VnodeHandle, replay};

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
    pub meta_limits: eddy_model::limits::MetaLimits,
    /// Bounds on multi-key requests.
    pub multi: eddy_model::limits::MultiLimits,
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
    /// Runs the blocking work of starting a vnode and of handoff (reads,
    /// merges, syncs, drops) on the calling task instead of tokio's
    /// blocking pool, so that a simulation on a current-thread runtime
    /// over backends that never wait replays exactly. Off in a server.
    pub blocking_inline: bool,
    /// Memory the vnodes may keep decoded big data type states in, so
    /// that an update does not decode them again
    /// ([`eddy_vnode::states`]); 0 keeps none.
    pub datatype_cache_bytes: usize,
    /// Runs map phases at this node's vnodes (the query layer's
    /// `Jobs`; design note 017); `None`: map folds fail.
    pub map_runner: Option<Arc<dyn eddy_vnode::mapphase::MapRunner>>,
    /// How often the expiry sweep looks for expired objects when none was
    /// due ([`crate::expiry`]); `None`: no sweep runs on its own (tests
    /// call `Node::sweep_expired`).
    pub expiry_sweep_every: Option<Duration>,
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
            meta_limits: eddy_model::limits::MetaLimits::default(),
            multi: eddy_model::limits::MultiLimits::default(),
            default_timeout_ms: 60_000,
            commit_log_dir: None,
            commit_log: LogOptions::default(),
            partitions_dir: None,
            clock: Arc::new(SystemClock),
            blocking_inline: false,
            datatype_cache_bytes: eddy_vnode::states::BUDGET_BYTES_DEFAULT,
            map_runner: None,
            expiry_sweep_every: Some(crate::expiry::SWEEP_EVERY),
        }
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
    ring: ArcSwap<RingView>,
    pub(crate) vnodes: Arc<VnodeTable>,
    log: Option<Arc<CommitLog>>,
    /// The vnodes' decoded data type states.
    states: Arc<eddy_vnode::states::StateCache>,
    pub(crate) registry: Arc<BucketRegistry>,
    /// The kv layer's figures (design note 025); shared with multi-key
    /// requests' runs.
    pub metrics: Arc<crate::metrics::NodeMetrics>,
    /// Every figure of the node; the front ends register theirs here too.
    figures: Arc<eddy_metrics::Registry>,
    /// How far the registry's changes were pushed to the cluster.
    pub(crate) metadata_pushes: crate::metadata_push::MetadataPushes,
    /// Partition repair's bookkeeping (design note 009).
    pub(crate) repair: crate::repair::RepairState,
    /// The last write refused for lack of a resource (design note 008).
    pub(crate) write_refusal: crate::refusal::WriteRefusal,
    /// The tombstone reap queue.
    pub(crate) reaper: crate::coordinator::reap::Reaper,
    /// How requests reach other nodes' vnodes; `None` on a single node.
    pub(crate) remote: Option<Arc<dyn crate::router::RemoteVnodes>>,
    /// Opens the backends of vnodes started after the node (fallbacks,
    /// handoff receivers); `None`: no vnode is started later.
    factory: Option<Arc<dyn VnodeFactory>>,
    /// Which partitions are being handed off; `None`: none is.
    transfers: Option<Arc<dyn Transfers>>,
    /// Which other nodes are up; `None`: all are (a single node).
    pub(crate) liveness: Option<Arc<dyn Liveness>>,
    /// Serialises the start of vnodes, so a partition gets one.
    starting: parking_lot::Mutex<()>,
    /// Serialises the sweeps of dropped buckets (design note 018).
    pub(crate) sweeping: parking_lot::Mutex<()>,
    /// The node itself, for work handed to other threads.
    pub(crate) me: std::sync::Weak<Node>,
    /// Vnodes opened at start whose incarnation the commit log says was
    /// dropped: not run; the caller destroys their data.
    dropped_at_start: Vec<(Partition, u64)>,
}

/// What a node reaches beyond itself, given when it is built (design
/// note 021): each is made before the node and, where it changes, fed by
/// the cluster side afterwards. The default is a node alone: every vnode
/// local, every node up, no transfer, no vnode started later.
#[derive(Clone, Default)]
pub struct NodeLinks {
    /// How requests reach other nodes' vnodes (eddy-remote's `NetRemote`,
    /// built before the node and serving other nodes once it runs);
    /// `None`: such requests are answered `Unreachable`.
    pub remote: Option<Arc<dyn crate::router::RemoteVnodes>>,
    /// Opens the backends of vnodes started after the node (fallbacks,
    /// handoff receivers); `None`: no vnode is started later.
    pub vnode_factory: Option<Arc<dyn VnodeFactory>>,
    /// Which other nodes are up, as the membership publishes it; `None`:
    /// all are.
    pub liveness: Option<Arc<dyn Liveness>>,
    /// The transfers under way, as the handoff manager records them
    /// (eddy-remote's `Underway`); `None`: none is.
    pub transfers: Option<Arc<dyn Transfers>>,
}

/// Which nodes are up, as the cluster's failure detector sees them.
pub trait Liveness: Send + Sync {
    /// True while `node` is believed up.
    fn is_up(&self, node: &NodeName) -> bool;
}

/// The partitions being handed off from or to this node, as the node's
/// handoff manager records them (eddy-remote's `Underway`, which its
/// `Handoffs` updates).
pub trait Transfers: Send + Sync {
    /// True while a transfer of `p` from or to this node runs.
    fn is_pending(&self, p: Partition) -> bool;
}

/// What a vnode is made of: its backend, the actor it coordinates writes
/// as, and its incarnation (design note 010 §1; a new vnode gets a new
/// actor and an incarnation never used for its partition on this node).
#[derive(Clone)]
pub struct VnodeParts {
    pub backend: Arc<dyn Backend>,
    /// Where the vnode keeps its persistent buckets' index entries (none:
    /// its backend keeps them).
    pub side: Option<Arc<eddy_side::SideStore>>,
    pub actor: Actor,
    pub incarnation: u64,
}

impl VnodeParts {
    /// The vnode's backend and side store, on the system clock.
    pub fn stores(&self) -> Stores {
        Stores::new(self.backend.clone(), self.side.clone())
    }

    /// The vnode's backend and side store, on `clock`.
    fn stores_on(&self, clock: &Arc<dyn Clock>) -> Stores {
        Stores {
            clock: clock.clone(),
            ..self.stores()
        }
    }
}

/// The ttl in seconds (0: none) of the objects of `storage_bucket`, as
/// `registry` has its props now.
pub fn ttl_of(registry: &BucketRegistry, storage_bucket: &[u8]) -> u64 {
    registry
        .props_of_storage_bucket(storage_bucket)
        .and_then(|(props, _)| props.ttl)
        .map_or(0, |t| t.secs())
}

impl From<(Arc<dyn Backend>, Actor)> for VnodeParts {
    /// A partition's first incarnation (a single node's partitions).
    fn from((backend, actor): (Arc<dyn Backend>, Actor)) -> Self {
        VnodeParts {
            backend,
            side: None,
            actor,
            incarnation: commitlog::FIRST_INCARNATION,
        }
    }
}

/// Opens the backend of a vnode that starts while the node runs, and
/// gives the actor it coordinates as (a new one: design note 004).
pub trait VnodeFactory: Send + Sync {
    /// Opens partition `p`'s backend on this node, as a new incarnation.
    /// May block.
    fn open(&self, p: Partition) -> Result<VnodeParts, String>;
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
        let mut open = open;
        let open = move |p| VnodeParts::from(open(p));
        let partitions: Vec<Partition> = ring.partitions().collect();
        Node::start_with(config, registry, ring, &partitions, open)
    }

    /// Starts a node of `ring` without links ([`NodeLinks::default`]):
    /// see [`Node::start_linked`].
    pub fn start_with(
        config: NodeConfig,
        registry: Arc<BucketRegistry>,
        ring: Ring,
        partitions: &[Partition],
        open: impl FnMut(Partition) -> VnodeParts,
    ) -> Result<Arc<Node>, StartError> {
        let links = NodeLinks::default();
        Node::start_linked(config, links, registry, ring, partitions, open)
    }

    /// Starts a node of `ring` running a vnode for each of `partitions`
    /// (those it owns and those it holds data for), reaching beyond itself
    /// through `links`; `open(p)` gives each vnode's backend and actor.
    /// With a commit log, what it holds for these partitions is replayed
    /// into their backends first; records of other partitions belong to
    /// vnodes this node no longer runs.
    pub fn start_linked(
        config: NodeConfig,
        links: NodeLinks,
        registry: Arc<BucketRegistry>,
        ring: Ring,
        partitions: &[Partition],
        mut open: impl FnMut(Partition) -> VnodeParts,
    ) -> Result<Arc<Node>, StartError> {
        let vnodes = Arc::new(VnodeTable::new(ring.size()));
        let figures = Arc::new(eddy_metrics::Registry::new());
        let mut opened: Vec<_> = partitions.iter().map(|p| (*p, open(*p))).collect();
        let (log, dropped_at_start) = match &config.commit_log_dir {
            Some(dir) => {
                let log_figures = commitlog::LogFigures::register(&figures);
                let opts = &config.commit_log;
                let ttl = |bucket: &[u8]| ttl_of(&registry, bucket);
                let at = (&mut opened, &vnodes);
                let (log, left_out) = start_log(dir, opts, at, &ttl, log_figures)?;
                (Some(Arc::new(log)), left_out)
            }
            None => (None, Vec::new()),
        };
        let states = Arc::new(eddy_vnode::states::StateCache::new(
            config.datatype_cache_bytes,
        ));
        let metrics = Arc::new(crate::metrics::NodeMetrics::register(&figures));
        for (p, parts) in opened {
            vnodes.insert(eddy_vnode::Vnode::with_incarnation(
                p,
                parts.incarnation,
                parts.actor,
                parts.stores_on(&config.clock),
                log.clone(),
                states.clone(),
                metrics.vnodes.clone(),
            ));
        }
        let me = config.node_name.clone();
        let node = Node {
            config,
            ring: ArcSwap::from_pointee(RingView::new(ring, me)),
            vnodes,
            log,
            states,
            registry,
            metrics,
            figures,
            metadata_pushes: Default::default(),
            repair: Default::default(),
            write_refusal: Default::default(),
            reaper: Default::default(),
            remote: links.remote,
            factory: links.vnode_factory,
            liveness: links.liveness,
            transfers: links.transfers,
            starting: parking_lot::Mutex::new(()),
            sweeping: parking_lot::Mutex::new(()),
            me: std::sync::Weak::new(),
            dropped_at_start,
        };
        node.mark_damaged_at_start(node.config.partitions_dir.as_deref());
        // What replay wrote under a dropped bucket's earlier names goes
        // before any request is taken (design note 018).
        node.sweep_all_dropped();
        let node = Arc::new_cyclic(|me| Node {
            me: me.clone(),
            ..node
        });
        node.sweep_on_generation();
        crate::expiry::start(&node);
        Ok(node)
    }

    /// The node's settings.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// Every figure of the node, for `/stats` and `/metrics`, and for
    /// the parts above kv to register theirs in (design note 025).
    pub fn metrics_registry(&self) -> &Arc<eddy_metrics::Registry> {
        &self.figures
    }

    /// The bucket registry.
    pub fn registry(&self) -> &Arc<BucketRegistry> {
        &self.registry
    }

    /// How far the registry's changes were pushed to the cluster: the
    /// cluster layer reports each push here.
    pub fn metadata_pushes(&self) -> &crate::metadata_push::MetadataPushes {
        &self.metadata_pushes
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

    /// The ring as this node knows it now (a [`RingView`] derefs to it).
    pub fn ring(&self) -> Arc<RingView> {
        self.ring.load_full()
    }

    /// The ring, without taking a reference (request paths).
    pub(crate) fn ring_now(&self) -> arc_swap::Guard<Arc<RingView>> {
        self.ring.load()
    }

    /// Replaces the ring (the cluster layer, after a membership change).
    pub fn set_ring(&self, ring: Ring) {
        let me = self.config.node_name.clone();
        self.ring.store(Arc::new(RingView::new(ring, me)));
    }

    /// The partitions (and incarnations) opened at start that the commit
    /// log says were dropped after a handoff: the node does not run them,
    /// and whoever opened their data destroys it.
    pub fn dropped_at_start(&self) -> &[(Partition, u64)] {
        &self.dropped_at_start
    }

    /// True while partition `p` is being handed off from or to this node,
    /// or the ring plans to move it.
    pub(crate) fn handoff_pending(&self, p: Partition) -> bool {
        let local = self.transfers.as_ref().is_some_and(|t| t.is_pending(p));
        local || self.ring_now().next_owner(p).is_some()
    }

    /// The node's map runner, if it was given one.
    pub fn map_runner(&self) -> Option<Arc<dyn eddy_vnode::mapphase::MapRunner>> {
        self.config.map_runner.clone()
    }

    /// Starts partition `p`'s vnode on this node if it runs none, and
    /// returns it. Blocking (opens a backend): not for a runtime thread.
    pub fn start_vnode(&self, p: Partition) -> Result<VnodeHandle, eddy_model::KvError> {
        let _one_at_a_time = self.starting.lock();
        if let Some(vnode) = self.vnode(p) {
            return Ok(vnode);
        }
        if p.0 >= self.ring_now().size() {
            return Err(eddy_model::KvError::Signal(
                eddy_model::error::Signal::NotHosted(p.0),
            ));
        }
        let factory = self.factory.as_ref().ok_or(eddy_model::KvError::Signal(
            eddy_model::error::Signal::NotHosted(p.0),
        ))?;
        let parts = factory.open(p).map_err(eddy_model::KvError::VnodeStart)?;
        let vnode = eddy_vnode::Vnode::with_incarnation(
            p,
            parts.incarnation,
            parts.actor,
            parts.stores_on(&self.config.clock),
            self.log.clone(),
            self.states.clone(),
            self.metrics.vnodes.clone(),
        );
        self.vnodes.insert(vnode.clone());
        tracing::info!(partition = p.0, "vnode started");
        Ok(vnode)
    }

    /// The vnode of partition `p` on this node, if it runs one.
    pub fn vnode(&self, p: Partition) -> Option<VnodeHandle> {
        self.vnodes.get(p)
    }

    /// Takes `vnode` out of the node's table if it still runs partition
    /// `p` (a handed-off vnode being dropped); a newer one is left alone.
    pub fn retire_vnode(&self, p: Partition, vnode: &VnodeHandle) {
        if self.vnodes.get(p).is_some_and(|v| Arc::ptr_eq(&v, vnode)) {
            self.vnodes.remove(p);
        }
    }

    /// The partitions this node runs vnodes for, in order.
    pub fn local_partitions(&self) -> Vec<Partition> {
        self.local_vnodes().iter().map(|v| v.partition).collect()
    }

    /// True when this node's ring has it own partition `p` now, or once
    /// a pending transfer is done.
    pub fn owns_or_will_own(&self, p: Partition) -> bool {
        let ring = self.ring_now();
        let me = &self.config.node_name;
        ring.owner(p) == me || ring.next_owner(p) == Some(me)
    }

    /// The partitions this node runs vnodes for that `ring` gives it neither
    /// now nor next: fallbacks, whose data a hinted handoff hands back to
    /// the owner (and, briefly, a vnode an ownership transfer moved away,
    /// until it is dropped).
    pub fn fallback_partitions(&self, ring: &Ring) -> Vec<Partition> {
        let me = &self.config().node_name;
        self.local_partitions()
            .into_iter()
            .filter(|&p| ring.owner(p) != me && ring.next_owner(p) != Some(me))
            .collect()
    }

    /// Every vnode this node runs, in partition order.
    pub(crate) fn local_vnodes(&self) -> Vec<VnodeHandle> {
        self.vnodes.all()
    }

    /// The vnodes' cache of decoded data type states: what it holds and
    /// how often it served.
    pub fn datatype_states(&self) -> eddy_vnode::states::StateCacheStats {
        self.states.stats()
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
    ) -> Result<Vec<(Partition, NodeName)>, eddy_model::KvError> {
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

/// Replays the log in `dir` into the `opened` vnodes' backends (records of
/// other partitions or other incarnations belong to vnodes this node no
/// longer runs), closes and leaves out an opened incarnation the log says
/// was dropped (a crash between its drop record and its destroy: the
/// caller destroys it), syncs the rest, drops what was replayed, and opens
/// a fresh log whose checkpoint syncs every vnode in `vnodes` at the time.
fn start_log(
    dir: &std::path::Path,
    opts: &LogOptions,
    (opened, vnodes): (&mut Vec<(Partition, VnodeParts)>, &Arc<VnodeTable>),
    ttl_of: &replay::TtlOf<'_>,
    figures: commitlog::LogFigures,
) -> Result<(CommitLog, Vec<(Partition, u64)>), StartError> {
    let live: Vec<(u32, u64)> = opened.iter().map(|(p, v)| (p.0, v.incarnation)).collect();
    let is_live = |p: u32, inc: u64| live.contains(&(p, inc));
    let recovered = commitlog::recover_live(dir, is_live, |record| {
        let at = opened.iter().find(|(p, _)| p.0 == record.partition);
        at.map_or(Ok(()), |(_, v)| {
            replay::apply_record(&v.stores(), record, ttl_of)
        })
    })?;
    figures.replayed(&recovered);
    if recovered.records > 0 {
        tracing::info!(
            records = recovered.records,
            skipped = recovered.skipped,
            segments = recovered.segments.len(),
            "commit log replayed"
        );
    }
    let left_out = leave_out_dropped(opened, &recovered.dropped)?;
    let stores: Vec<_> = opened.iter().map(|(p, v)| (*p, v.stores())).collect();
    sync_each(&stores, Duration::ZERO).map_err(StartError::CommitLog)?;
    recovered
        .remove()
        .map_err(|e| StartError::CommitLog(format!("removing replayed segments: {e}")))?;
    let pace = opts.checkpoint_pace;
    let table = Arc::downgrade(vnodes);
    let checkpoint = move || {
        let live = table.upgrade().map(|t| t.all()).unwrap_or_default();
        // Records in the closed segments may belong to writes still
        // storing: they finish before anything is synced.
        live.iter().for_each(|v| v.fence());
        let stores: Vec<_> = live
            .iter()
            .map(|v| (v.partition, v.stores().clone()))
            .collect();
        sync_each(&stores, pace)
    };
    let log = CommitLog::open(
        dir,
        recovered.next_seq(),
        opts.clone(),
        Box::new(checkpoint),
        figures,
    )
    .map_err(|e| StartError::CommitLog(format!("{}: {e}", dir.display())))?;
    // The replayed segments held the drop records: the new log keeps the
    // facts until the caller has destroyed what they name.
    for (p, incarnation) in &left_out {
        log.append_drop(p.0, *incarnation)
            .map_err(|e| StartError::CommitLog(format!("recording a drop: {e}")))?;
    }
    Ok((log, left_out))
}

/// Takes out of `opened` (closing them) the vnodes whose incarnation the
/// log says was dropped: their data is never served again.
fn leave_out_dropped(
    opened: &mut Vec<(Partition, VnodeParts)>,
    dropped: &std::collections::BTreeSet<commitlog::Dropped>,
) -> Result<Vec<(Partition, u64)>, StartError> {
    let is_dropped = |p: &Partition, v: &VnodeParts| {
        dropped
            .iter()
            .any(|d| d.partition == p.0 && d.incarnation == v.incarnation)
    };
    let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(opened)
        .into_iter()
        .partition(|(p, v)| is_dropped(p, v));
    *opened = kept;
    let left_out = gone.iter().map(|(p, v)| (*p, v.incarnation)).collect();
    for (p, v) in gone {
        tracing::info!(
            partition = p.0,
            incarnation = v.incarnation,
            "left out a dropped vnode's data"
        );
        v.backend.close().map_err(|e| {
            StartError::CommitLog(format!("closing dropped partition {}: {e}", p.0))
        })?;
    }
    Ok(left_out)
}

/// Syncs every backend and side store, pausing `pace` between two
/// vnodes, so that a checkpoint's writeback reaches the disk as a trickle
/// beside the log's fdatasyncs rather than as one burst in front of them.
fn sync_each(stores: &[(Partition, Stores)], pace: Duration) -> Result<(), String> {
    for (i, (p, b)) in stores.iter().enumerate() {
        if i > 0 && !pace.is_zero() {
            std::thread::sleep(pace);
        }
        match b.sync() {
            // Closing syncs: a vnode dropped or stopped since the list was
            // taken has nothing left to make durable.
            Ok(()) | Err(eddy_storage::StorageError::Closed) => {}
            Err(e) => return Err(format!("partition {}: {e}", p.0)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use eddy_storage::memory::{MemoryBackend, MemoryConfig};

    use super::*;

    #[test]
    fn a_checkpoint_passes_over_a_vnode_closed_since_the_list_was_taken() {
        let open: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        let closed: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        closed.close().unwrap();
        let stores = |backend| Stores::new(backend, None);
        let all = vec![(Partition(1), stores(closed)), (Partition(2), stores(open))];
        assert_eq!(sync_each(&all, Duration::ZERO), Ok(()));
    }
}
