//! The service's shared core: the node's current state, the one path by
//! which it changes ([`Inner::update`]: change a copy, save it, then
//! publish it), and what publishing tells the rest of the node.
//!
//! Invariants: the published state is always the last saved one (a state
//! is saved before anyone can act on it); updates run one at a time, so no
//! change is lost between two concurrent ones; every member the state
//! names has its address given to the transport and is tracked by the
//! failure detector.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eddy_net::Transport;
use eddy_ring::{NodeName, Partition, Ring};
use parking_lot::{Mutex, RwLock};
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::{Notify, watch};
use tokio::task::AbortHandle;

use super::config::MembershipConfig;
use super::detector::Detector;
use super::error::MembershipError;
use crate::state::ClusterState;
use eddy_model::metadata::register::BucketMetadata;

/// Applies the bucket metadata of a state this node saved, before the
/// change that brought it is acknowledged to anyone (may block: run on a
/// blocking thread).
pub type MetadataApplier = Arc<dyn Fn(&BucketMetadata) + Send + Sync>;

/// A transfer this node reported finished: `(partition, from, to)`.
pub(crate) type Finished = (Partition, NodeName, NodeName);

pub(crate) struct Inner {
    pub(crate) me: NodeName,
    pub(crate) config: MembershipConfig,
    pub(crate) transport: Transport,
    current: RwLock<Arc<ClusterState>>,
    writer: tokio::sync::Mutex<()>,
    pub(crate) detector: Mutex<Detector>,
    ring_tx: watch::Sender<Arc<Ring>>,
    meta_tx: watch::Sender<Arc<BucketMetadata>>,
    /// Told of each saved change to the bucket metadata, in order.
    pub(crate) metadata_applier: std::sync::OnceLock<MetadataApplier>,
    pub(crate) up_tx: watch::Sender<Arc<BTreeSet<NodeName>>>,
    pub(crate) limit_tx: watch::Sender<u32>,
    /// Wakes the gossip loop early (the state changed).
    pub(crate) gossip_soon: Notify,
    /// Wakes the claimant's round early (liveness changed).
    pub(crate) duties_soon: Notify,
    pub(crate) rng: Mutex<StdRng>,
    /// Transfers reported finished here, re-reported while the ring still
    /// lists them.
    pub(crate) finished: Mutex<BTreeSet<Finished>>,
    /// Members a probe is in flight to.
    pub(crate) probing: Mutex<BTreeSet<NodeName>>,
    pub(crate) tasks: Mutex<Vec<AbortHandle>>,
    pub(crate) closed: AtomicBool,
}

impl Inner {
    pub(crate) fn new(
        config: MembershipConfig,
        transport: Transport,
        state: ClusterState,
    ) -> Inner {
        let me = transport.local().clone();
        let seed = xxhash_rust::xxh3::xxh3_64(me.0.as_bytes());
        let mut detector = Detector::new(me.clone(), config.down_after);
        detector.set_members(state.members().keys(), tokio::time::Instant::now());
        let up = detector.up_set();
        Inner {
            ring_tx: watch::channel(Arc::new(state.ring().clone())).0,
            meta_tx: watch::channel(Arc::new(state.metadata().clone())).0,
            metadata_applier: std::sync::OnceLock::new(),
            up_tx: watch::channel(Arc::new(up)).0,
            limit_tx: watch::channel(config.transfer_limit).0,
            current: RwLock::new(Arc::new(state)),
            writer: tokio::sync::Mutex::new(()),
            detector: Mutex::new(detector),
            gossip_soon: Notify::new(),
            duties_soon: Notify::new(),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            finished: Mutex::new(BTreeSet::new()),
            probing: Mutex::new(BTreeSet::new()),
            tasks: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            me,
            config,
            transport,
        }
    }

    /// The current (saved) state.
    pub(crate) fn current(&self) -> Arc<ClusterState> {
        self.current.read().clone()
    }

    pub(crate) fn is_up(&self, node: &NodeName) -> bool {
        self.detector.lock().is_up(node)
    }

    pub(crate) fn ring_watch(&self) -> watch::Receiver<Arc<Ring>> {
        self.ring_tx.subscribe()
    }

    pub(crate) fn metadata_watch(&self) -> watch::Receiver<Arc<BucketMetadata>> {
        self.meta_tx.subscribe()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Changes the state with `f` on a copy; if the copy differs, saves it
    /// and then publishes it. An error from `f` changes nothing. Returns
    /// `f`'s value and whether the state changed.
    pub(crate) async fn update<T>(
        &self,
        f: impl FnOnce(&mut ClusterState) -> Result<T, MembershipError>,
    ) -> Result<(T, bool), MembershipError> {
        if self.is_closed() {
            return Err(MembershipError::Shutdown);
        }
        let _one_at_a_time = self.writer.lock().await;
        let old = self.current();
        let mut next = (*old).clone();
        let value = f(&mut next)?;
        if next == *old {
            return Ok((value, false));
        }
        let next = Arc::new(next);
        save(&self.config, next.clone()).await?;
        *self.current.write() = next.clone();
        self.apply_metadata(&old, &next).await;
        self.publish(&old, &next);
        Ok((value, true))
    }

    /// Hands `new`'s bucket metadata to the applier if it differs from
    /// `old`'s, under the writer's lock (so in order) and before the
    /// update returns (so before a push of it is acknowledged).
    async fn apply_metadata(&self, old: &ClusterState, new: &ClusterState) {
        let Some(applier) = self.metadata_applier.get().cloned() else {
            return;
        };
        if old.metadata() == new.metadata() {
            return;
        }
        let metadata = new.metadata().clone();
        if self.config.blocking_inline {
            applier(&metadata);
            return;
        }
        let applied = tokio::task::spawn_blocking(move || applier(&metadata)).await;
        if applied.is_err() {
            tracing::error!(node = %self.me, "applying the bucket metadata failed");
        }
    }

    /// Tells the node what changed from `old` to `new`.
    pub(crate) fn publish(&self, old: &ClusterState, new: &ClusterState) {
        if old.ring() != new.ring() {
            self.ring_tx.send_replace(Arc::new(new.ring().clone()));
        }
        if old.metadata() != new.metadata() {
            self.meta_tx.send_replace(Arc::new(new.metadata().clone()));
        }
        self.learn_members(new);
        if old.epoch() != new.epoch() || old.members() != new.members() {
            tracing::debug!(node = %self.me, epoch = new.epoch(), "cluster state changed");
        }
        self.gossip_soon.notify_one();
    }

    /// Gives the transport every member's address and has the detector
    /// track exactly the members.
    pub(crate) fn learn_members(&self, state: &ClusterState) {
        for (node, member) in state.members() {
            if *node == self.me {
                continue;
            }
            match member.address.parse::<SocketAddr>() {
                Ok(addr) => self.transport.set_peer_address(node.clone(), addr),
                Err(e) => tracing::warn!(%node, address = %member.address, error = %e,
                    "a member's address is not host:port"),
            }
        }
        let now = tokio::time::Instant::now();
        self.detector
            .lock()
            .set_members(state.members().keys(), now);
        self.liveness_changed();
    }

    /// Publishes the set of members up, if it changed, and then has the
    /// claimant's round run soon.
    pub(crate) fn liveness_changed(&self) {
        let up = self.detector.lock().up_set();
        let changed = self.up_tx.send_if_modified(|old| {
            let changed = **old != up;
            if changed {
                *old = Arc::new(up);
            }
            changed
        });
        if changed {
            self.duties_soon.notify_one();
        }
    }

    /// A random member other than this node and `except`, preferring
    /// members that are up.
    pub(crate) fn random_member(&self, except: Option<&NodeName>) -> Option<NodeName> {
        use rand::seq::IndexedRandom;
        let state = self.current();
        let others: Vec<&NodeName> = state
            .members()
            .keys()
            .filter(|n| **n != self.me && Some(*n) != except)
            .collect();
        let up: Vec<&NodeName> = others.iter().copied().filter(|n| self.is_up(n)).collect();
        let pool = if up.is_empty() { others } else { up };
        pool.choose(&mut *self.rng.lock()).map(|n| (*n).clone())
    }
}

/// Saves `state` at the configured path: on tokio's blocking pool, since
/// the save fsyncs, or on the calling task when the config says
/// `blocking_inline`.
pub(crate) async fn save(
    config: &MembershipConfig,
    state: Arc<ClusterState>,
) -> Result<(), MembershipError> {
    let path = config.state_path.clone();
    if config.blocking_inline {
        return Ok(state.save(&path)?);
    }
    match tokio::task::spawn_blocking(move || state.save(&path)).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(MembershipError::Shutdown),
    }
}
