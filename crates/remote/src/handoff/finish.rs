//! Dropping a vnode whose data was handed off (design note 005's order):
//! its drop record is appended to the commit log and made durable first,
//! so that no replay brings its records back; then the vnode leaves the
//! node's table and closes, and its data is destroyed (crash-atomically,
//! by the [`super::PartitionStore`]). The node's inbound checkpoints of the
//! partition go with it: they described data that is gone.
//!
//! While this runs the partition is retiring ([`super::watch`]): a request
//! that would start a new vnode for it waits, so a new backend never opens
//! the directory being destroyed.

use eddy_ring::Partition;

use super::Handoffs;
use eddy_kv::node::Node;
use eddy_vnode::VnodeHandle;
use eddy_vnode::commitlog::CommitLog;

/// Drops `vnode`, partition `p`'s on `node`. Blocking.
pub(crate) fn drop_vnode(
    h: &Handoffs,
    node: &Node,
    p: Partition,
    vnode: &VnodeHandle,
) -> Result<(), String> {
    let _retiring = h.watch.retiring(p);
    if let Some(log) = node.commit_log() {
        log_drop(log, p, vnode.incarnation())?;
    }
    node.retire_vnode(p, vnode);
    // The drop record is durable: nothing the backend holds needs to be.
    if let Err(e) = vnode.close_discarding() {
        tracing::warn!(partition = p.0, "closing a handed-off vnode: {e}");
    }
    h.store.destroy(p)?;
    h.checkpoints
        .remove_partition(p.0)
        .map_err(|e| format!("removing checkpoints of partition {}: {e}", p.0))
}

/// Appends the drop record of `p`'s `incarnation` and waits until the log
/// holds it durably.
fn log_drop(log: &CommitLog, p: Partition, incarnation: u64) -> Result<(), String> {
    let at = log
        .append_drop(p.0, incarnation)
        .map_err(|e| format!("logging the drop of partition {}: {e}", p.0))?;
    let (tx, rx) = std::sync::mpsc::channel();
    log.when_durable(
        at.end,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    );
    rx.recv()
        .map_err(|_| "the commit log closed".to_string())?
        .map_err(|e| format!("the drop of partition {} is not durable: {e}", p.0))
}
