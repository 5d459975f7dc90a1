//! The part of the cluster state that only the claimant writes: the ring,
//! the members, the staged changes and when each pending transfer was
//! planned, under one `(epoch, claimant)` version.
//!
//! Every write by the claimant bumps the epoch, so of two versions the one
//! with the higher `(epoch, claimant)` is the newer decision and wins a
//! merge whole. Two different versions with the same key (two claimants
//! on two sides of a partition, or a node that took over from a stale
//! state) are ordered by a hash of their content: every node picks the
//! same one, and the loser's author redoes its change on the winner.
//!
//! Invariants: `planned_at` has an entry exactly for the ring's pending
//! transfers; every node named by the ring is a member.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use eddy_ring::{NodeName, Partition, Ring};
use serde::{Deserialize, Serialize};

use crate::member::{Member, MemberStatus};
use crate::staging::Change;

/// The claimant's decisions, versioned by `(epoch, claimant)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingState {
    /// Bumped by every write of the claimant.
    pub epoch: u64,
    /// The node that made this version.
    pub claimant: NodeName,
    /// Owners and pending ownership transfers.
    pub ring: Ring,
    /// Every member, by name.
    pub members: BTreeMap<NodeName, Member>,
    /// The changes staged for the next commit (joins are the `Joining`
    /// members, not entries here).
    pub staged: Vec<Change>,
    /// For each pending transfer, the epoch that planned it: a completion
    /// recorded before that epoch belongs to an older plan.
    pub planned_at: BTreeMap<Partition, u64>,
}

impl RingState {
    /// A cluster of one: `node` owns every partition of `ring`.
    pub(crate) fn single(node: NodeName, member: Member, ring: Ring) -> RingState {
        RingState {
            epoch: 1,
            claimant: node.clone(),
            ring,
            members: BTreeMap::from([(node, member)]),
            staged: Vec::new(),
            planned_at: BTreeMap::new(),
        }
    }

    /// Whether `self` wins a merge against `other`.
    pub fn wins_over(&self, other: &RingState) -> bool {
        let key = |s: &RingState| (s.epoch, s.claimant.clone());
        match key(self).cmp(&key(other)) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => self != other && self.content_hash() > other.content_hash(),
        }
    }

    /// A hash of the whole content, stable across nodes and builds.
    pub fn content_hash(&self) -> u128 {
        crate::digest::hash_json(self)
    }

    /// The member `node`, if it is one.
    pub fn member(&self, node: &NodeName) -> Option<&Member> {
        self.members.get(node)
    }

    /// The status of `node`, if it is a member.
    pub fn status(&self, node: &NodeName) -> Option<MemberStatus> {
        self.member(node).map(|m| m.status)
    }

    /// The members with one of `statuses`, in name order.
    pub fn members_with(&self, statuses: &[MemberStatus]) -> Vec<&NodeName> {
        self.members
            .iter()
            .filter(|(_, m)| statuses.contains(&m.status))
            .map(|(n, _)| n)
            .collect()
    }

    /// Sets `planned_at` for a new ring: transfers that were pending
    /// before, unchanged, keep their epoch; new ones get `epoch`.
    pub(crate) fn replan(&mut self, ring: Ring, epoch: u64) {
        let old = std::mem::replace(&mut self.ring, ring);
        let mut planned = BTreeMap::new();
        for t in self.ring.pending() {
            let same =
                old.owner(t.partition) == &t.from && old.next_owner(t.partition) == Some(&t.to);
            let kept = self.planned_at.get(&t.partition).filter(|_| same);
            planned.insert(t.partition, kept.copied().unwrap_or(epoch));
        }
        self.planned_at = planned;
    }
}
