//! `plan` and `commit`: what the staged changes do to members and ring.
//!
//! At commit, joining members become valid; a leaving or replaced node
//! becomes `Leaving` and keeps its partitions until handoff moves them; a
//! force-removed or force-replaced node is dropped and its partitions
//! change owner at once, without handoff. The target owners are:
//! - with the same set of owners as before (replacements only): the
//!   ring's future owners with each replaced node swapped for its
//!   replacement, so nothing else moves;
//! - otherwise claim's answer (note 011) for the members that remain,
//!   starting from those swapped owners.
//!
//! Partitions whose target differs from their owner get that target as
//! their next owner: those are the plan's transfers.
//!
//! Invariants: a commit needs a non-empty plan, the ring-ready rule, and
//! the claimant; it bumps the epoch once, and its result is exactly what
//! `plan` showed for the same state.

use std::collections::{BTreeMap, BTreeSet};

use eddy_ring::{ClaimParams, NodeName, Ring, claim};

use crate::error::CommitError;
use crate::member::{Member, MemberStatus};
use crate::staging::Change;
use crate::state::ClusterState;
use crate::views::{MemberStatusRow, member_rows};

/// What committing the staged changes would do.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The changes, joins first.
    pub changes: Vec<Change>,
    /// Nodes whose replicas are dropped without handoff (force-remove,
    /// force-replace): Riak's "all of X's replicas will be lost".
    pub lost: Vec<NodeName>,
    /// Membership now.
    pub before: Vec<MemberStatusRow>,
    /// Membership after the commit: status, ring share at once, share once
    /// the transfers are done.
    pub after: Vec<MemberStatusRow>,
    /// The partitions that change owner by handoff.
    pub transfers: usize,
    /// The partitions that change owner at once (forced).
    pub reassigned: usize,
    /// The ring after the commit, with its pending transfers.
    pub ring: Ring,
    /// The members after the commit.
    pub members: BTreeMap<NodeName, Member>,
}

impl ClusterState {
    /// What committing the staged changes would do, with claim aiming for
    /// `params`.
    pub fn plan(&self, params: &ClaimParams) -> Result<Plan, CommitError> {
        let changes = self.staged();
        if changes.is_empty() {
            return Err(CommitError::EmptyPlan);
        }
        let claimant = &self.ring.claimant;
        if changes
            .iter()
            .any(|c| c.is_forced() && c.node() == claimant)
        {
            return Err(CommitError::ForcesOutClaimant(claimant.clone()));
        }
        let members = self.members_after(&changes);
        let (ring, reassigned) = self.ring_after(&changes, &members, params)?;
        let lost = changes
            .iter()
            .filter(|c| c.is_forced())
            .map(|c| c.node().clone());
        Ok(Plan {
            lost: lost.collect(),
            before: member_rows(self.members(), self.ring()),
            after: member_rows(&members, &ring),
            transfers: ring.pending().count(),
            reassigned,
            changes,
            ring,
            members,
        })
    }

    /// The claimant `me` commits the staged changes, if every member not
    /// down is reachable and at this epoch (`peer_epoch`, as for
    /// [`ClusterState::ring_ready`]). Returns the plan it carried out.
    pub fn commit(
        &mut self,
        me: &NodeName,
        params: &ClaimParams,
        peer_epoch: impl Fn(&NodeName) -> Option<u64>,
    ) -> Result<Plan, CommitError> {
        self.require_claimant(me)
            .map_err(|claimant| CommitError::NotClaimant {
                me: me.clone(),
                claimant,
            })?;
        let plan = self.plan(params)?;
        self.ring_ready(peer_epoch)
            .map_err(|waiting| CommitError::RingNotReady { waiting })?;
        let epoch = self.epoch() + 1;
        self.ring.members = plan.members.clone();
        self.ring.staged.clear();
        self.ring.replan(plan.ring.clone(), epoch);
        self.bump(me);
        Ok(plan)
    }

    fn members_after(&self, changes: &[Change]) -> BTreeMap<NodeName, Member> {
        let mut members = self.members().clone();
        let mut set = |node: &NodeName, status| {
            if let Some(m) = members.get_mut(node) {
                m.status = status;
            }
        };
        for change in changes {
            match change {
                Change::Join { node } => set(node, MemberStatus::Valid),
                Change::Leave { node } | Change::Replace { node, .. } => {
                    set(node, MemberStatus::Leaving);
                }
                Change::ForceRemove { .. } | Change::ForceReplace { .. } => {}
            }
        }
        for change in changes.iter().filter(|c| c.is_forced()) {
            members.remove(change.node());
        }
        members
    }

    /// The ring after `changes`, and how many partitions changed owner at
    /// once.
    fn ring_after(
        &self,
        changes: &[Change],
        members: &BTreeMap<NodeName, Member>,
        params: &ClaimParams,
    ) -> Result<(Ring, usize), CommitError> {
        let swaps: BTreeMap<&NodeName, &NodeName> = changes
            .iter()
            .filter_map(|c| Some((c.node(), c.replacement()?)))
            .collect();
        let swap = |n: &NodeName| swaps.get(n).copied().unwrap_or(n).clone();
        let base: Vec<NodeName> = self.ring().future().owners().iter().map(swap).collect();
        let claiming: Vec<NodeName> = members
            .iter()
            .filter(|(_, m)| m.status.is_claiming())
            .map(|(n, _)| n.clone())
            .collect();
        let owners_of_base: BTreeSet<&NodeName> = base.iter().collect();
        let target = if owners_of_base == claiming.iter().collect() {
            base
        } else {
            claim(&Ring::from_owners(base)?, &claiming, params)?.owners
        };
        let mut reassigned = 0;
        let owners: Vec<NodeName> = self
            .ring()
            .owners()
            .iter()
            .zip(&target)
            .map(|(owner, to)| {
                if members.contains_key(owner) {
                    owner.clone()
                } else {
                    reassigned += 1;
                    to.clone()
                }
            })
            .collect();
        let ring = Ring::from_owners(owners)?.with_target(&target)?;
        Ok((ring, reassigned))
    }
}
