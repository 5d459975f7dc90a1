//! The node's bucket registry kept in the cluster's registers (design
//! note 026): the registers are the one store of bucket types and props;
//! the registry serves them.
//!
//! - Every saved change to the registers (a change made here, a push or a
//!   sync from another member, gossip) is applied to the registry before
//!   the membership's update returns, so before this node acknowledges it
//!   to the member that pushed it: a member that acked a change serves it.
//! - A change made here is written through [`ClusterStore`]: stamped and
//!   saved by the membership (applied here as above) before the request
//!   that made it goes on, then pushed to every reachable member by one
//!   task, in order. Each push's outcome (the members it did not reach)
//!   is reported to the node's `MetadataPushes`, which the request waits
//!   on before it answers.
//!
//! Invariant: change ids rise in the order the changes were saved, and a
//! push carries the whole state, so the push reported for id *n* carried
//! every change up to *n*.

use std::sync::{Arc, Mutex};

use eddy_cluster::Membership;
use eddy_kv::Node;
use eddy_kv::metadata_push::Sharing;
use eddy_model::metadata::{ChangeId, MetadataChange, MetadataStore};
use eddy_model::types::RegistryError;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Keeps `node`'s registry in `membership`'s registers, both ways.
pub fn share(node: &Arc<Node>, membership: &Membership) {
    let registry = node.registry();
    let weak = Arc::downgrade(registry);
    membership.on_metadata(Arc::new(move |metadata| {
        let Some(registry) = weak.upgrade() else {
            return;
        };
        if let Err(e) = registry.apply_registers(metadata) {
            tracing::error!("applying the cluster's bucket metadata: {e}");
        }
    }));
    let (pushes, queue) = unbounded_channel();
    registry.set_store(Arc::new(ClusterStore {
        membership: membership.clone(),
        runtime: tokio::runtime::Handle::current(),
        pushes,
        last: Mutex::new(ChangeId::NONE),
    }));
    tokio::spawn(push_in_order(
        membership.clone(),
        Arc::downgrade(node),
        queue,
    ));
}

/// The registry's store: the membership's registers.
struct ClusterStore {
    membership: Membership,
    runtime: tokio::runtime::Handle,
    /// The ids of saved changes, to push.
    pushes: UnboundedSender<ChangeId>,
    last: Mutex<ChangeId>,
}

impl MetadataStore for ClusterStore {
    fn write(&self, change: MetadataChange) -> Result<ChangeId, RegistryError> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let saved = self
            .runtime
            .block_on(self.membership.record_metadata(change));
        saved.map_err(|e| RegistryError::Store(e.to_string()))?;
        *last = ChangeId(last.0 + 1);
        let _ = self.pushes.send(*last);
        Ok(*last)
    }
}

/// Pushes the state once for the newest change queued (a push carries
/// every change before it), and reports it, until the node is gone.
async fn push_in_order(
    membership: Membership,
    node: std::sync::Weak<Node>,
    mut queue: UnboundedReceiver<ChangeId>,
) {
    while let Some(mut id) = queue.recv().await {
        while let Ok(later) = queue.try_recv() {
            id = id.max(later);
        }
        let report = membership.push_metadata().await;
        let outcome = match report.missing.is_empty() {
            true => Sharing::Complete,
            false => {
                tracing::info!(missing = ?report.missing, "bucket metadata not yet on every member");
                Sharing::Missing(report.missing)
            }
        };
        let Some(node) = node.upgrade() else { return };
        node.metadata_pushes().pushed(id, outcome);
    }
}
