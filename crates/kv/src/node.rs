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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eddy_object::Actor;
use eddy_ring::{NodeName, Partition, Ring, RingError};
use eddy_storage::Backend;

use crate::clock::{Clock, SystemClock};
use crate::commitlog::{self, CommitLog, LogOptions};
use crate::request::BucketRef;
use crate::types::BucketRegistry;
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

/// A running single node.
pub struct Node {
    pub(crate) config: NodeConfig,
    pub(crate) ring: Ring,
    pub(crate) handles: Vec<VnodeHandle>,
    log: Option<Arc<CommitLog>>,
    pub(crate) registry: Arc<BucketRegistry>,
    pub counters: NodeCounters,
    /// Partition repair's bookkeeping (design note 009).
    pub(crate) repair: crate::repair::RepairState,
    /// The last write refused for lack of a resource (design note 008).
    pub(crate) write_refusal: crate::refusal::WriteRefusal,
    /// The tombstone reap queue.
    pub(crate) reaper: crate::coordinator::reap::Reaper,
    /// How requests reach other nodes' vnodes; `None` on a single node.
    pub(crate) remote: Option<Arc<dyn crate::router::RemoteVnodes>>,
}

impl Node {
    /// Starts one vnode per partition; `open(p)` gives each partition's
    /// backend and the actor id it coordinates writes as. With a commit
    /// log, what it holds is replayed into the backends first.
    pub fn start(
        config: NodeConfig,
        registry: Arc<BucketRegistry>,
        mut open: impl FnMut(Partition) -> (Arc<dyn Backend>, Actor),
    ) -> Result<Arc<Node>, StartError> {
        let ring = Ring::single(config.ring_size, config.node_name.clone())?;
        let opened: Vec<_> = ring.partitions().map(&mut open).collect();
        let backends: Vec<_> = opened.iter().map(|(b, _)| b.clone()).collect();
        let log = match &config.commit_log_dir {
            Some(dir) => Some(Arc::new(start_log(dir, &config.commit_log, backends)?)),
            None => None,
        };
        let handles = ring
            .partitions()
            .zip(opened)
            .map(|(p, (backend, actor))| crate::vnode::Vnode::new(p, actor, backend, log.clone()))
            .collect();
        let node = Node {
            config,
            ring,
            handles,
            log,
            registry,
            counters: NodeCounters::default(),
            repair: Default::default(),
            write_refusal: Default::default(),
            reaper: Default::default(),
            remote: None,
        };
        node.mark_damaged_at_start(node.config.partitions_dir.as_deref());
        Ok(Arc::new(node))
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
        let list = self.ring.preflist(hash, props.n_val);
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
        for v in &self.handles {
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

/// Replays the log in `dir` into `backends`, syncs them, drops what was
/// replayed and opens a fresh log whose checkpoint syncs them all.
fn start_log(
    dir: &std::path::Path,
    opts: &LogOptions,
    backends: Vec<Arc<dyn Backend>>,
) -> Result<CommitLog, StartError> {
    let recovered = commitlog::recover(dir, |record| {
        let backend = backends
            .get(record.partition as usize)
            .ok_or_else(|| format!("partition {} is not on this ring", record.partition))?;
        replay::apply_record(&**backend, record)
    })?;
    if recovered.records > 0 {
        tracing::info!(
            records = recovered.records,
            segments = recovered.segments.len(),
            "commit log replayed"
        );
    }
    sync_each(&backends, Duration::ZERO).map_err(StartError::CommitLog)?;
    recovered
        .remove()
        .map_err(|e| StartError::CommitLog(format!("removing replayed segments: {e}")))?;
    let pace = opts.checkpoint_pace;
    let checkpoint = move || sync_each(&backends, pace);
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
fn sync_each(backends: &[Arc<dyn Backend>], pace: Duration) -> Result<(), String> {
    for (i, b) in backends.iter().enumerate() {
        if i > 0 && !pace.is_zero() {
            std::thread::sleep(pace);
        }
        b.sync().map_err(|e| format!("partition {i}: {e}"))?;
    }
    Ok(())
}
