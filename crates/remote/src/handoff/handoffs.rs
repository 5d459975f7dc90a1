//! The node's handoff manager: starts outbound transfers under the
//! transfer limit, serves inbound ones, and shows them all.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use eddy_net::{Incoming, Transport};
use eddy_ring::{NodeName, Partition};

use super::checkpoint::Checkpoints;
use super::figures::HandoffFigures;
use super::limit::TransferLimit;
use super::progress::{TransferState, TransferStatus};
use super::receiver::InboundStatus;
use super::sender::Outgoing;
use super::{
    HandoffConfig, HandoffError, Kind, OnComplete, PartitionStore, Underway, Watch, receiver,
};
use eddy_kv::node::Node;

/// A node's handoffs, outbound and inbound.
pub struct Handoffs {
    pub(crate) node: Weak<Node>,
    pub(crate) transport: Transport,
    pub(crate) store: Arc<dyn PartitionStore>,
    pub(crate) watch: Arc<Watch>,
    pub(crate) config: HandoffConfig,
    pub(crate) outbound: Arc<TransferLimit>,
    pub(crate) inbound: Arc<TransferLimit>,
    /// The transfers under way, which the node reads too.
    pub(crate) underway: Arc<Underway>,
    pub(crate) checkpoints: Checkpoints,
    pub(crate) on_complete: OnceLock<OnComplete>,
    /// What the sender and receiver count, in the node's registry.
    pub(crate) figures: HandoffFigures,
    /// Blocking work runs on the calling task (`NodeConfig::blocking_inline`).
    pub(crate) inline: bool,
    stopping: AtomicBool,
    me: Weak<Handoffs>,
}

impl std::fmt::Debug for Handoffs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoffs")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Handoffs {
    /// The handoff manager of `node`, whose vnodes' backends `watch`
    /// wrapped, sending over `transport`, recording its transfers in
    /// `underway` (the node's `NodeLinks::transfers`). Route the
    /// transport's [`eddy_net::Lane::Bulk`] calls to
    /// [`Handoffs::handle_bulk`].
    pub fn new(
        node: &Arc<Node>,
        underway: Arc<Underway>,
        transport: Transport,
        store: Arc<dyn PartitionStore>,
        watch: Arc<Watch>,
        mut config: HandoffConfig,
    ) -> Arc<Handoffs> {
        // A batch must fit a frame: objects larger than half of one travel
        // alone (and need the bulk lane's frame limit above the largest
        // object; a call with one that does not fit fails and is retried).
        let frame_max = transport.config().frame_body_bytes_max;
        config.batch_bytes_max = config.batch_bytes_max.min(frame_max / 2).max(1);
        Arc::new_cyclic(|me| Handoffs {
            node: Arc::downgrade(node),
            transport,
            store,
            watch,
            outbound: TransferLimit::new(config.transfer_limit),
            inbound: TransferLimit::new(config.transfer_limit),
            underway,
            checkpoints: Checkpoints::new(config.checkpoint_dir.clone()),
            config,
            on_complete: OnceLock::new(),
            figures: HandoffFigures::register(node.metrics_registry()),
            inline: node.config().blocking_inline,
            stopping: AtomicBool::new(false),
            me: me.clone(),
        })
    }

    /// Serves one call of the bulk lane (a sender's request); answers
    /// through its responder later. Does not block.
    pub fn handle_bulk(&self, incoming: Incoming) {
        if let Some(me) = self.me.upgrade() {
            receiver::handle(me, incoming);
        }
    }

    /// Sets what is called when an ownership transfer has finished (once).
    pub fn on_complete(&self, f: OnComplete) {
        let _ = self.on_complete.set(f);
    }

    /// Starts handing partition `p`'s vnode here to `to`; it runs in a task
    /// (so this must be called inside a tokio runtime), waiting first for a
    /// slot under the transfer limit. Starting a transfer that runs already
    /// is no error.
    pub fn start(&self, p: Partition, kind: Kind, to: NodeName) -> Result<(), HandoffError> {
        let node = self.node.upgrade().ok_or(HandoffError::ShuttingDown)?;
        if to == node.config().node_name {
            return Err(HandoffError::ToSelf(p.0));
        }
        let vnode = node.vnode(p).ok_or(HandoffError::NotHosted(p.0))?;
        if kind == Kind::Hinted && self.moving_here(p, vnode.incarnation()) {
            return Err(HandoffError::MovingHere(p.0));
        }
        let watched = self
            .watch
            .of(p, vnode.backend())
            .ok_or(HandoffError::NotWatched(p.0))?;
        let mut outgoing = self.underway.outgoing.lock();
        if let Some(t) = outgoing.get(&p.0)
            && t.status.state() != TransferState::Dropped
            && Arc::ptr_eq(&t.vnode, &vnode)
        {
            return match t.to == to && t.kind == kind {
                true => Ok(()),
                false => Err(HandoffError::Busy {
                    partition: p.0,
                    to: t.to.0.clone(),
                }),
            };
        }
        let incarnation = vnode.incarnation();
        let owned = node.owns_or_will_own(p);
        let t = Arc::new(Outgoing::new(
            p,
            kind,
            to,
            incarnation,
            vnode,
            watched,
            owned,
        ));
        outgoing.insert(p.0, t.clone());
        let me = self.me.upgrade().ok_or(HandoffError::ShuttingDown)?;
        tokio::spawn(super::sender::run(me, t));
        Ok(())
    }

    /// Drops partition `p`'s vnode after its ownership transfer finished
    /// and the ring no longer names this node its owner: the last writes
    /// are sent (the vnode refuses writes meanwhile), its drop is logged
    /// and its data destroyed, in a task.
    pub fn drop_handed_off(&self, p: Partition) -> Result<(), HandoffError> {
        let node = self.node.upgrade().ok_or(HandoffError::ShuttingDown)?;
        let t = self.underway.outgoing.lock().get(&p.0).cloned();
        let t = t
            .filter(|t| t.kind == Kind::Ownership && t.status.state() == TransferState::Handed)
            .ok_or(HandoffError::NotHanded(p.0))?;
        if *node.ring().owner(p) == node.config().node_name {
            return Err(HandoffError::StillOwner(p.0));
        }
        t.status.set_state(TransferState::Dropping);
        let me = self.me.upgrade().ok_or(HandoffError::ShuttingDown)?;
        tokio::spawn(super::sender::retire(me, t));
        Ok(())
    }

    /// Every outbound transfer this node knows of, by partition.
    pub fn transfers(&self) -> Vec<TransferStatus> {
        let outgoing = self.underway.outgoing.lock();
        outgoing.values().map(|t| t.status.snapshot()).collect()
    }

    /// The inbound transfers being received now.
    pub fn inbound(&self) -> Vec<InboundStatus> {
        self.underway.inbound.statuses()
    }

    /// True while a transfer of `p` from or to this node is not over:
    /// a tombstone of `p` must not be reaped meanwhile.
    pub fn is_pending(&self, p: Partition) -> bool {
        self.underway.is_pending(p)
    }

    /// True while an ownership transfer of `p` into this node runs, or a
    /// while after one finished into the vnode incarnation `incarnation`
    /// (a minute): that vnode is the partition's
    /// next home, whatever this node's ring says yet.
    pub(crate) fn moving_here(&self, p: Partition, incarnation: u64) -> bool {
        let stale_after = self.config.call_timeout * 2;
        self.underway
            .inbound
            .moving_here(p.0, incarnation, stale_after)
    }

    /// Transfers run at once, each way.
    pub fn transfer_limit(&self) -> usize {
        self.outbound.limit()
    }

    /// Changes the transfer limit while the node runs.
    pub fn set_transfer_limit(&self, limit: usize) {
        self.outbound.set(limit);
        self.inbound.set(limit);
    }

    /// What this node's transfers counted (design note 025).
    pub fn figures(&self) -> &HandoffFigures {
        &self.figures
    }

    /// The most outbound transfers that ran at once so far.
    pub fn outbound_peak(&self) -> usize {
        self.outbound.peak()
    }

    /// Stops every transfer's task at its next step (the node is stopping).
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// True once the node is stopping.
    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire) || self.node.strong_count() == 0
    }
}
