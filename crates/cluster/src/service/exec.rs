//! Admin operations on their way to the claimant and carried out there.
//!
//! Any node takes an operator's request; a node that is not the claimant
//! (by its own view) forwards it to the one it knows, at most
//! [`HOPS_MAX`] times, so views that disagree for a moment cannot bounce a
//! request forever. The claimant takes over first if the recorded one is
//! down, then applies the change to its state, saves it and answers with
//! its state before and after.
//!
//! A commit first pushes the claimant's state to every member that is up
//! and uses the epochs they acknowledge for Riak's ring-ready rule, so a
//! commit right after staging does not wait for gossip.

use std::collections::BTreeMap;
use std::sync::Arc;

use eddy_ring::NodeName;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::core::Inner;
use super::error::MembershipError;
use super::wire::{AdminDone, AdminRequest, Message, Reply};
use crate::member::MemberStatus;
use crate::state::ClusterState;

/// How many times an admin request may be forwarded.
pub(crate) const HOPS_MAX: u8 = 3;

/// Carries `request` out on the claimant, forwarding it there if this
/// node is not the claimant; `hops` is how often it was forwarded so far.
pub(crate) async fn route_admin(
    inner: &Arc<Inner>,
    hops: u8,
    request: AdminRequest,
) -> Result<AdminDone, MembershipError> {
    let is_up = |n: &NodeName| inner.is_up(n);
    let claimant = inner.current().claimant(is_up).cloned();
    let claimant = claimant.ok_or(MembershipError::NoClaimant)?;
    if claimant == inner.me {
        return execute(inner, request).await;
    }
    if hops >= HOPS_MAX {
        return Err(MembershipError::NoClaimant);
    }
    let msg = Message::Admin {
        hops: hops + 1,
        request,
    };
    let deadline = Instant::now() + inner.config.admin_timeout;
    match inner.ask(&claimant, &msg, deadline).await? {
        Reply::Admin(Ok(done)) => Ok(done),
        Reply::Admin(Err(e)) => Err(e.into_error()),
        _ => Err(MembershipError::BadReply {
            node: claimant,
            reason: "not an admin reply".into(),
        }),
    }
}

/// Carries `request` out on this node, the claimant.
async fn execute(inner: &Arc<Inner>, request: AdminRequest) -> Result<AdminDone, MembershipError> {
    if let AdminRequest::Commit = request {
        return commit(inner).await;
    }
    let me = inner.me.clone();
    let is_up = |n: &NodeName| inner.is_up(n);
    let (done, _) = inner
        .update(|s| {
            s.take_over(&me, is_up);
            let before = Box::new(s.clone());
            stage(s, &me, &request, is_up)?;
            let after = Box::new(s.clone());
            Ok(AdminDone { before, after })
        })
        .await?;
    Ok(done)
}

/// Applies one staging (or down) request to the claimant's state.
fn stage(
    s: &mut ClusterState,
    me: &NodeName,
    request: &AdminRequest,
    is_up: impl Fn(&NodeName) -> bool,
) -> Result<(), MembershipError> {
    match request {
        AdminRequest::Join { node, member } => s.join(me, node, member.clone())?,
        AdminRequest::Leave { node } => s.leave(me, node)?,
        AdminRequest::ForceRemove { node } => s.force_remove(me, node)?,
        AdminRequest::Replace { node, with } => s.replace(me, node, with)?,
        AdminRequest::ForceReplace { node, with } => s.force_replace(me, node, with)?,
        AdminRequest::Clear => {
            s.clear(me)?;
        }
        AdminRequest::Down { node } => {
            s.mark_down(me, node, is_up)?;
        }
        AdminRequest::Plan | AdminRequest::Commit => {}
    }
    Ok(())
}

/// Commits the staged changes on this node, the claimant.
async fn commit(inner: &Arc<Inner>) -> Result<AdminDone, MembershipError> {
    let me = inner.me.clone();
    let is_up = |n: &NodeName| inner.is_up(n);
    inner
        .update(|s| {
            s.take_over(&me, is_up);
            Ok(())
        })
        .await?;
    let state = inner.current();
    state.plan(&inner.config.claim)?;
    let targets = reachable_members(inner, &state);
    let epochs = push_state(inner, &state, targets).await;
    let params = inner.config.claim;
    let (done, _) = inner
        .update(|s| {
            let before = Box::new(s.clone());
            let my_epoch = s.epoch();
            let peer_epoch = |n: &NodeName| {
                if *n == me {
                    Some(my_epoch)
                } else {
                    epochs.get(n).copied()
                }
            };
            s.commit(&me, &params, peer_epoch)?;
            let after = Box::new(s.clone());
            Ok(AdminDone { before, after })
        })
        .await?;
    Ok(done)
}

/// The members other than this node that the failure detector reports up
/// and no operator marked down.
pub(crate) fn reachable_members(inner: &Inner, state: &ClusterState) -> Vec<NodeName> {
    state
        .members()
        .iter()
        .filter(|(n, m)| **n != inner.me && m.status != MemberStatus::Down && inner.is_up(n))
        .map(|(n, _)| n.clone())
        .collect()
}

/// Sends `state` to each of `targets` to merge and save, and waits until
/// each acked or `push_timeout` passed. Returns the epochs the ackers
/// hold after merging.
pub(crate) async fn push_state(
    inner: &Arc<Inner>,
    state: &ClusterState,
    targets: Vec<NodeName>,
) -> BTreeMap<NodeName, u64> {
    let deadline = Instant::now() + inner.config.push_timeout;
    let msg = Arc::new(Message::Sync(Box::new(state.clone())));
    let mut calls = JoinSet::new();
    for node in targets {
        let inner = inner.clone();
        let msg = msg.clone();
        calls.spawn(async move {
            let reply = inner.call(&node, &msg, deadline).await;
            (node, reply)
        });
    }
    let mut acked = BTreeMap::new();
    while let Some(done) = calls.join_next().await {
        if let Ok((node, Ok(Reply::Ack { epoch }))) = done {
            acked.insert(node, epoch);
        }
    }
    acked
}
