//! The claimant's duties and the transfer reports, run every
//! `gossip_interval` and whenever liveness changes:
//! - a node that finds itself claimant (the recorded one is down) takes
//!   over;
//! - the claimant applies the reported transfers (receivers become
//!   owners, emptied leavers exit, exited members go) and clears the down
//!   mark of a member that is up again (Riak's down node rejoins when it
//!   comes back);
//! - every node re-reports the transfers it finished while the ring still
//!   lists them, and sends its state to the claimant when it did.
//!
//! Invariant: only the recorded claimant writes the claimant's part, and
//! a node records itself claimant only when no earlier claimant is up.

use std::sync::Arc;

use eddy_ring::{NodeName, Partition};

use super::core::Inner;
use super::error::MembershipError;
use super::wire::Message;
use crate::member::MemberStatus;
use crate::state::ClusterState;

/// Runs the duties until the service stops.
pub(crate) async fn duties_loop(inner: Arc<Inner>) {
    loop {
        // Biased: an unbiased select picks among ready branches at random
        // (tokio's per-runtime seed), which a simulation cannot replay.
        tokio::select! {
            biased;
            () = tokio::time::sleep(inner.config.gossip_interval) => {}
            () = inner.duties_soon.notified() => {}
        }
        if let Err(e) = run_duties(&inner).await {
            tracing::warn!(node = %inner.me, error = %e, "claimant round failed");
        }
    }
}

/// One round of the duties.
pub(crate) async fn run_duties(inner: &Inner) -> Result<(), MembershipError> {
    let me = inner.me.clone();
    let is_up = |n: &NodeName| inner.is_up(n);
    let (reported, changed) = inner
        .update(|s| {
            s.take_over(&me, is_up);
            // An exiting claimant is still recorded until its successor
            // takes over; it has no duties left.
            if s.claimant(is_up) == Some(&me) {
                claimant_round(s, &me, is_up)?;
            }
            Ok(re_report(inner, s))
        })
        .await?;
    if reported {
        let state = inner.current();
        if let Some(claimant) = state.claimant(is_up).filter(|c| **c != me) {
            let msg = Message::State(Box::new((*state).clone()));
            inner.tell(claimant, &msg).await;
        }
    }
    if changed {
        inner.gossip_soon.notify_one();
    }
    Ok(())
}

/// The recorded claimant's work on its state.
fn claimant_round(
    s: &mut ClusterState,
    me: &NodeName,
    is_up: impl Fn(&NodeName) -> bool,
) -> Result<(), MembershipError> {
    s.apply_transfers(me)?;
    let back: Vec<NodeName> = s
        .members()
        .iter()
        .filter(|(n, m)| m.status == MemberStatus::Down && is_up(n))
        .map(|(n, _)| n.clone())
        .collect();
    for node in back {
        s.mark_up(me, &node)?;
    }
    Ok(())
}

/// Records again every transfer this node finished that the ring still
/// lists and no fact completes; forgets those the ring no longer lists.
/// Returns whether it recorded any.
fn re_report(inner: &Inner, s: &mut ClusterState) -> bool {
    let mut finished = inner.finished.lock();
    let pending = |(p, from, to): &(Partition, NodeName, NodeName)| {
        s.ring()
            .pending()
            .any(|t| t.partition == *p && t.from == *from && t.to == *to)
    };
    finished.retain(pending);
    let mut recorded = false;
    for (p, from, to) in finished.iter() {
        recorded |= s.transfer_complete(*p, from, to).unwrap_or(false);
    }
    recorded
}
