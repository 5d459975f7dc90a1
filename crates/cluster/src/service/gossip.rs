//! Gossip: every `gossip_interval` (sooner after a change) this node sends
//! its state's digest to one random member; a member whose digest differs
//! answers with its full state, which this node merges; if this node then
//! holds something the member lacked, it pushes its state back, and if its
//! own state changed, it pushes it on to another random member.
//!
//! Invariants: a state is merged only when it comes from a member of this
//! node's own state (a removed node's stale state wins nothing); a node
//! that finds it was removed from the cluster becomes a cluster of one
//! again, with a new incarnation (Riak's removed node resets its ring).

use std::sync::Arc;

use eddy_ring::NodeName;
use tokio::time::Instant;

use super::core::Inner;
use super::error::MembershipError;
use super::wire::{Message, Reply, split_digest};
use crate::error::CommitError;
use crate::state::ClusterState;

/// Runs gossip rounds until the service stops.
pub(crate) async fn gossip_loop(inner: Arc<Inner>) {
    loop {
        // Biased: an unbiased select picks among ready branches at random
        // (tokio's per-runtime seed), which a simulation cannot replay.
        tokio::select! {
            biased;
            () = tokio::time::sleep(inner.config.gossip_interval) => {}
            () = inner.gossip_soon.notified() => {
                tokio::time::sleep(inner.config.gossip_after_change).await;
            }
        }
        gossip_round(&inner).await;
    }
}

/// One exchange with one random member.
async fn gossip_round(inner: &Arc<Inner>) {
    let Some(peer) = inner.random_member(None) else {
        return;
    };
    let digest = split_digest(inner.current().digest());
    let deadline = Instant::now() + inner.config.push_timeout;
    let theirs = match inner
        .call(&peer, &Message::Digest { digest }, deadline)
        .await
    {
        Ok(Reply::State(theirs)) => theirs,
        _ => return,
    };
    let changed = match absorb(inner, &peer, &theirs).await {
        Ok(changed) => changed,
        Err(e) => {
            tracing::warn!(node = %inner.me, %peer, error = %e, "gossip merge not saved");
            return;
        }
    };
    let mine = inner.current();
    if mine.digest() != theirs.digest() {
        inner
            .tell(&peer, &Message::State(Box::new((*mine).clone())))
            .await;
    }
    if changed {
        push_on(inner, Some(&peer)).await;
    }
}

/// Pushes this node's state to a random member other than `except`.
pub(crate) async fn push_on(inner: &Inner, except: Option<&NodeName>) {
    if let Some(next) = inner.random_member(except) {
        let mine = inner.current();
        inner
            .tell(&next, &Message::State(Box::new((*mine).clone())))
            .await;
    }
}

/// The answer to a member's digest: nothing when equal, else this node's
/// state. Non-members get it too, so a removed node learns it was.
pub(crate) fn answer_digest(inner: &Inner, digest: [u64; 2]) -> Reply {
    let mine = inner.current();
    if split_digest(mine.digest()) == digest {
        Reply::Same
    } else {
        Reply::State(Box::new((*mine).clone()))
    }
}

/// Merges `theirs`, sent by `from`, into this node's state if `from` is a
/// member; saves and publishes the result. Returns whether it changed.
pub(crate) async fn absorb(
    inner: &Inner,
    from: &NodeName,
    theirs: &ClusterState,
) -> Result<bool, MembershipError> {
    let me = inner.me.clone();
    let (_, changed) = inner
        .update(|s| {
            if !s.members().contains_key(from) {
                return Ok(());
            }
            let mine = s.members().get(&me).cloned();
            s.merge(theirs);
            match mine {
                Some(member) if !s.members().contains_key(&me) => {
                    tracing::info!(node = %me, "removed from the cluster: now a cluster of one");
                    let size = s.ring().size();
                    let incarnation = member.incarnation + 1;
                    *s = ClusterState::new(s.cluster_name(), me, incarnation, member.address, size)
                        .map_err(CommitError::Ring)?;
                }
                _ => {}
            }
            Ok(())
        })
        .await?;
    Ok(changed)
}

/// A one-way state push from `from`: merged, and passed on if it changed
/// this node's state.
pub(crate) async fn receive_state(inner: &Inner, from: &NodeName, theirs: &ClusterState) {
    match absorb(inner, from, theirs).await {
        Ok(true) => push_on(inner, Some(from)).await,
        Ok(false) => {}
        Err(e) => tracing::warn!(node = %inner.me, peer = %from, error = %e,
            "pushed state not saved"),
    }
}
