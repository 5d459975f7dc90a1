//! Who the claimant is, how another node takes over from a lost one, the
//! operator's down mark, and Riak's ring-ready rule.
//!
//! The claimant is the node that recorded the current [`RingState`]
//! version, as long as it is a valid or leaving member that the failure
//! detector reports up; otherwise it is the first such member by name.
//! So a lost claimant is replaced by a node every member computes alike
//! (given the same liveness view), and the claimant does not move while it
//! is healthy.
//!
//! [`RingState`]: crate::RingState

use eddy_ring::NodeName;

use crate::error::StageError;
use crate::member::MemberStatus;
use crate::state::ClusterState;

impl ClusterState {
    /// The claimant, given the failure detector's view: the recorded one
    /// while it may claim and is up, else the first valid or leaving
    /// member by name that is up. `None` when no such member is up.
    pub fn claimant(&self, is_up: impl Fn(&NodeName) -> bool) -> Option<&NodeName> {
        let eligible =
            |n: &NodeName| self.ring.status(n).is_some_and(MemberStatus::may_claim) && is_up(n);
        let recorded = &self.ring.claimant;
        if eligible(recorded) {
            return Some(recorded);
        }
        self.members().keys().find(|n| eligible(n))
    }

    /// Makes `me` the recorded claimant if it is the claimant and is not
    /// recorded yet (the previous one was lost). Returns whether it took
    /// over.
    pub fn take_over(&mut self, me: &NodeName, is_up: impl Fn(&NodeName) -> bool) -> bool {
        if self.ring.claimant == *me || self.claimant(is_up) != Some(me) {
            return false;
        }
        self.bump(me);
        true
    }

    /// Marks `node` down (Riak's `riak admin down`): it keeps its
    /// partitions, and the ring-ready rule stops waiting for it. Only the
    /// claimant marks, and only a node the failure detector reports down.
    pub fn mark_down(
        &mut self,
        me: &NodeName,
        node: &NodeName,
        is_up: impl Fn(&NodeName) -> bool,
    ) -> Result<bool, StageError> {
        self.require_claimant(me)
            .map_err(|claimant| StageError::NotClaimant {
                me: me.clone(),
                claimant,
            })?;
        let member = self
            .ring
            .members
            .get_mut(node)
            .ok_or_else(|| StageError::NotMember(node.clone()))?;
        if node == me || is_up(node) {
            return Err(StageError::IsUp(node.clone()));
        }
        if member.status == MemberStatus::Down {
            return Ok(false);
        }
        member.status = MemberStatus::Down;
        self.bump(me);
        Ok(true)
    }

    /// Clears `node`'s down mark once it is reachable again: it is valid
    /// again. Returns whether anything changed.
    pub fn mark_up(&mut self, me: &NodeName, node: &NodeName) -> Result<bool, StageError> {
        self.require_claimant(me)
            .map_err(|claimant| StageError::NotClaimant {
                me: me.clone(),
                claimant,
            })?;
        match self.ring.members.get_mut(node) {
            Some(m) if m.status == MemberStatus::Down => m.status = MemberStatus::Valid,
            Some(_) => return Ok(false),
            None => return Err(StageError::NotMember(node.clone())),
        }
        self.bump(me);
        Ok(true)
    }

    /// Riak's ring-ready rule: every member that is not down is reachable
    /// and holds this state's epoch. `peer_epoch` gives a member's epoch as
    /// last reported, or `None` when it is unreachable (the caller answers
    /// for itself). `Err` lists the members waited for.
    pub fn ring_ready(
        &self,
        peer_epoch: impl Fn(&NodeName) -> Option<u64>,
    ) -> Result<(), Vec<NodeName>> {
        let waiting: Vec<NodeName> = self
            .members()
            .iter()
            .filter(|(_, m)| m.status != MemberStatus::Down)
            .filter(|(n, _)| peer_epoch(n) != Some(self.epoch()))
            .map(|(n, _)| n.clone())
            .collect();
        if waiting.is_empty() {
            Ok(())
        } else {
            Err(waiting)
        }
    }

    /// Whether `me` is the recorded claimant and still may claim; `Err`
    /// names the recorded claimant.
    pub(crate) fn require_claimant(&self, me: &NodeName) -> Result<(), NodeName> {
        let may = self.ring.status(me).is_some_and(MemberStatus::may_claim);
        if self.ring.claimant == *me && may {
            Ok(())
        } else {
            Err(self.ring.claimant.clone())
        }
    }
}
