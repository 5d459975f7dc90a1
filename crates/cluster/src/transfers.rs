//! Completed ownership transfers: the facts senders report, and the
//! claimant's round that turns them into ring changes.
//!
//! When a partition's receiver has made all its data durable, the sender
//! records a [`TransferFact`] in its state; gossip carries it to the
//! claimant (facts merge by union, so one reported to a claimant that died
//! reaches its successor). The claimant's [`ClusterState::apply_transfers`]
//! then makes the receiver the owner, moves a leaving member that owns
//! nothing to `Exiting`, removes members that were exiting, and bumps the
//! epoch.
//!
//! Invariants: a fact completes only the transfer it names, and only if
//! it was recorded at or after the epoch that planned that transfer (so a
//! fact from an older plan of the same move completes nothing); a fact is
//! forgotten [`FACT_EPOCHS_KEPT`] epochs after it was recorded, which only
//! depends on the epoch, so merges stay associative; a sender whose
//! transfer is still pending after that records it again.
//!
//! [`FACT_EPOCHS_KEPT`]: crate::FACT_EPOCHS_KEPT

use std::collections::BTreeSet;

use eddy_ring::{NodeName, Partition, Transfer};
use serde::{Deserialize, Serialize};

use crate::error::{StageError, TransferError};
use crate::member::MemberStatus;
use crate::state::{ClusterState, FACT_EPOCHS_KEPT};

/// A transfer's receiver has made the partition's data durable.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TransferFact {
    /// The partition moved.
    pub partition: Partition,
    /// The sender (the owner when it was planned).
    pub from: NodeName,
    /// The receiver (the next owner).
    pub to: NodeName,
    /// The epoch of the reporter's state when it recorded the fact.
    pub epoch: u64,
}

impl TransferFact {
    fn completes(&self, t: &Transfer, planned_at: u64) -> bool {
        self.partition == t.partition
            && self.from == t.from
            && self.to == t.to
            && self.epoch >= planned_at
    }
}

/// Drops the facts recorded more than [`FACT_EPOCHS_KEPT`] epochs before
/// `epoch`. Returns whether any went.
pub(crate) fn prune_facts(facts: &mut BTreeSet<TransferFact>, epoch: u64) -> bool {
    let before = facts.len();
    facts.retain(|f| f.epoch.saturating_add(FACT_EPOCHS_KEPT) >= epoch);
    facts.len() != before
}

impl ClusterState {
    /// Records that the transfer of `partition` from `from` to `to` is
    /// done (the receiver made the data durable). Any node may record it;
    /// recording it twice changes nothing. Returns whether the state
    /// changed.
    pub fn transfer_complete(
        &mut self,
        partition: Partition,
        from: &NodeName,
        to: &NodeName,
    ) -> Result<bool, TransferError> {
        let pending = self.pending_transfer(partition);
        let Some(t) = pending.filter(|t| &t.from == from && &t.to == to) else {
            return Err(TransferError::NotPending {
                partition,
                from: from.clone(),
                to: to.clone(),
            });
        };
        if self.is_done(&t) {
            return Ok(false);
        }
        let fact = TransferFact {
            partition,
            from: t.from,
            to: t.to,
            epoch: self.epoch(),
        };
        Ok(self.transfers_done.insert(fact))
    }

    /// The claimant `me` applies the reported transfers: receivers become
    /// owners, leaving members that own nothing exit, exiting members are
    /// removed. Returns whether the state changed (then the epoch is
    /// bumped once).
    pub fn apply_transfers(&mut self, me: &NodeName) -> Result<bool, StageError> {
        self.require_claimant(me)
            .map_err(|claimant| StageError::NotClaimant {
                me: me.clone(),
                claimant,
            })?;
        let mut changed = self.remove_exiting(me);
        let mut ring = self.ring().clone();
        let done: Vec<Partition> = ring
            .pending()
            .filter(|t| self.is_done(t))
            .map(|t| t.partition)
            .collect();
        for p in done {
            ring = ring.with_transfer_done(p).unwrap_or(ring);
            changed = true;
        }
        let epoch = self.epoch() + 1;
        self.ring.replan(ring, epoch);
        changed |= self.exit_emptied();
        if changed {
            self.bump(me);
        }
        Ok(changed)
    }

    /// The pending transfers that no fact completes yet (Riak's
    /// `transfers`: waiting to hand off).
    pub fn transfers_waiting(&self) -> Vec<Transfer> {
        self.ring().pending().filter(|t| !self.is_done(t)).collect()
    }

    /// The pending transfers whose completion is reported but not yet
    /// applied by the claimant.
    pub fn transfers_reported(&self) -> Vec<Transfer> {
        self.ring().pending().filter(|t| self.is_done(t)).collect()
    }

    fn pending_transfer(&self, p: Partition) -> Option<Transfer> {
        self.ring().pending().find(|t| t.partition == p)
    }

    fn is_done(&self, t: &Transfer) -> bool {
        let planned_at = self.ring.planned_at.get(&t.partition).copied().unwrap_or(0);
        self.transfers_done
            .iter()
            .any(|f| f.completes(t, planned_at))
    }

    /// Removes members that were exiting, except `me` (a claimant that
    /// exits is removed by its successor).
    fn remove_exiting(&mut self, me: &NodeName) -> bool {
        let before = self.ring.members.len();
        self.ring
            .members
            .retain(|n, m| m.status != MemberStatus::Exiting || n == me);
        self.ring.members.len() != before
    }

    /// Leaving members that own nothing, now or after pending transfers,
    /// become exiting.
    fn exit_emptied(&mut self) -> bool {
        let ring = self.ring.ring.clone();
        let mut changed = false;
        for (node, m) in &mut self.ring.members {
            let owns = ring
                .partitions()
                .any(|p| ring.owner(p) == node || ring.next_owner(p) == Some(node));
            if m.status == MemberStatus::Leaving && !owns {
                m.status = MemberStatus::Exiting;
                changed = true;
            }
        }
        changed
    }
}
