//! Which handoffs a node runs (design note 010 §5), decided again every
//! second and whenever the ring or the set of up nodes changes:
//! - ownership: each partition the ring plans to move from this node to
//!   another (`next`) is handed to its next owner;
//! - hinted: each vnode this node runs for a partition it neither owns nor
//!   is to own (a fallback's) is handed back to the owner once it is up;
//! - after an ownership transfer finished and the ring moved the
//!   partition, the old vnode is dropped.
//!
//! A finished ownership transfer is reported to the membership service,
//! whose claimant then changes the ring. Starting a transfer that runs
//! already is no error, so deciding again is harmless.

use std::sync::Arc;
use std::time::Duration;

use eddy_cluster::Membership;
use eddy_kv::Node;
use eddy_net::Transport;
use eddy_remote::handoff::{
    HandoffConfig, HandoffError, Handoffs, Kind, PartitionStore, TransferState, Underway, Watch,
};
use eddy_ring::Partition;

use super::storage::Storage;

/// How often transfers are decided again without a ring or liveness change.
const DECIDE_EVERY: Duration = Duration::from_secs(1);

/// Destroys partitions' directories for handoff (crash-atomically).
struct PartitionDirs(Arc<Storage>);

impl PartitionStore for PartitionDirs {
    fn destroy(&self, p: Partition) -> Result<(), String> {
        eddy_storage::destroy::destroy_dir(&self.0.partition_dir(p)).map_err(|e| e.to_string())?;
        self.0.destroy_side(p).map_err(|e| e.to_string())
    }
}

/// Starts the node's handoff manager, recording its transfers in the
/// node's `underway`, and the task that decides transfers.
pub fn start(
    node: &Arc<Node>,
    underway: Arc<Underway>,
    transport: &Transport,
    membership: &Membership,
    storage: Arc<Storage>,
    watch: Arc<Watch>,
    config: HandoffConfig,
) -> Arc<Handoffs> {
    let store = Arc::new(PartitionDirs(storage));
    let handoffs = Handoffs::new(node, underway, transport.clone(), store, watch, config);
    let reporter = membership.clone();
    handoffs.on_complete(Arc::new(move |done| {
        let membership = reporter.clone();
        tokio::spawn(async move {
            let (p, from, to) = (done.partition, done.from, done.to);
            if let Err(e) = membership.transfer_complete(p, from, to).await {
                tracing::warn!(partition = p.0, "reporting a finished transfer: {e}");
            }
        });
    }));
    tokio::spawn(decide_loop(
        Arc::downgrade(node),
        Arc::downgrade(&handoffs),
        membership.clone(),
    ));
    follow_transfer_limit(&handoffs, membership);
    handoffs
}

/// Decides transfers every second and on every ring or liveness change.
async fn decide_loop(
    node: std::sync::Weak<Node>,
    handoffs: std::sync::Weak<Handoffs>,
    membership: Membership,
) {
    let mut rings = membership.ring_watch();
    let mut ups = membership.up_watch();
    loop {
        let (Some(node), Some(handoffs)) = (node.upgrade(), handoffs.upgrade()) else {
            return;
        };
        decide(&node, &handoffs, &membership);
        drop((node, handoffs));
        tokio::select! {
            _ = tokio::time::sleep(DECIDE_EVERY) => {}
            changed = rings.changed() => if changed.is_err() { return },
            changed = ups.changed() => if changed.is_err() { return },
        }
    }
}

/// Starts the transfers the ring and liveness call for now.
fn decide(node: &Node, handoffs: &Handoffs, membership: &Membership) {
    let ring = membership.ring();
    let me = &node.config().node_name;
    for t in ring.pending().filter(|t| t.from == *me) {
        started(
            t.partition,
            handoffs.start(t.partition, Kind::Ownership, t.to),
        );
    }
    let handed: Vec<Partition> = handoffs
        .transfers()
        .into_iter()
        .filter(|t| t.kind == Kind::Ownership && t.state == TransferState::Handed)
        .map(|t| t.partition)
        .collect();
    for p in node.fallback_partitions(&ring) {
        let owner = ring.owner(p);
        if handed.contains(&p) {
            started(p, handoffs.drop_handed_off(p));
        } else if membership.is_up(owner) {
            started(p, handoffs.start(p, Kind::Hinted, owner.clone()));
        }
    }
}

/// Logs a refused start, unless it is one that deciding again expects.
fn started(p: Partition, result: Result<(), HandoffError>) {
    match result {
        Ok(()) | Err(HandoffError::Busy { .. }) | Err(HandoffError::ShuttingDown) => {}
        Err(e) => tracing::debug!(partition = p.0, "handoff not started: {e}"),
    }
}

/// Applies the cluster's `transfer-limit` for this node as it changes.
fn follow_transfer_limit(handoffs: &Arc<Handoffs>, membership: &Membership) {
    let mut limits = membership.transfer_limit_watch();
    let weak = Arc::downgrade(handoffs);
    tokio::spawn(async move {
        while limits.changed().await.is_ok() {
            let limit = *limits.borrow_and_update();
            match weak.upgrade() {
                Some(h) => h.set_transfer_limit(limit as usize),
                None => return,
            }
        }
    });
}
