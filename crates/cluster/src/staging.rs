//! Staged membership changes (Riak's `riak admin cluster join | leave |
//! force-remove | replace | force-replace | clear`).
//!
//! A change is checked when it is staged and takes effect only at commit
//! (see `plan`). A join is not a staged entry: the node becomes a
//! `Joining` member at once, which is how it learns it was accepted, and
//! the next commit gives it partitions; `clear` drops the staged entries
//! and the joining members alike.
//!
//! Invariants, each refused with a [`StageError`]: at most one change per
//! node; a replacement is a joining node with no change of its own, used
//! once; the changes never leave the cluster without a valid or joining
//! member; the claimant never forces itself out; only the claimant
//! stages.

use std::collections::BTreeSet;

use eddy_ring::NodeName;
use serde::{Deserialize, Serialize};

use crate::error::StageError;
use crate::member::{Member, MemberStatus};
use crate::state::ClusterState;

/// One membership change, as `plan` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Change {
    /// `node` joins and gets its share of partitions.
    Join {
        /// The joining node.
        node: NodeName,
    },
    /// `node` hands its partitions off, then exits.
    Leave {
        /// The leaving node.
        node: NodeName,
    },
    /// `node` is removed at once; its replicas are lost.
    ForceRemove {
        /// The removed node.
        node: NodeName,
    },
    /// `node` hands exactly its partitions to `with`, then exits.
    Replace {
        /// The node replaced.
        node: NodeName,
        /// The joining node that takes its partitions.
        with: NodeName,
    },
    /// `with` takes `node`'s partitions at once; `node`'s replicas are
    /// lost.
    ForceReplace {
        /// The node replaced.
        node: NodeName,
        /// The joining node that takes its partitions.
        with: NodeName,
    },
}

impl Change {
    /// The node the change is for.
    pub fn node(&self) -> &NodeName {
        match self {
            Change::Join { node }
            | Change::Leave { node }
            | Change::ForceRemove { node }
            | Change::Replace { node, .. }
            | Change::ForceReplace { node, .. } => node,
        }
    }

    /// The replacement, for a replace.
    pub fn replacement(&self) -> Option<&NodeName> {
        match self {
            Change::Replace { with, .. } | Change::ForceReplace { with, .. } => Some(with),
            _ => None,
        }
    }

    /// Whether the node's replicas are dropped rather than handed off.
    pub fn is_forced(&self) -> bool {
        matches!(
            self,
            Change::ForceRemove { .. } | Change::ForceReplace { .. }
        )
    }

    /// The action's name as the CLI spells it.
    pub fn action(&self) -> &'static str {
        match self {
            Change::Join { .. } => "join",
            Change::Leave { .. } => "leave",
            Change::ForceRemove { .. } => "force-remove",
            Change::Replace { .. } => "replace",
            Change::ForceReplace { .. } => "force-replace",
        }
    }
}

impl ClusterState {
    /// Checks, on the node `me` that was asked to join the cluster through
    /// `target`, that it may: not through itself, and not while it belongs
    /// to a cluster of more than itself.
    pub fn check_join(&self, me: &NodeName, target: &NodeName) -> Result<(), StageError> {
        if me == target {
            return Err(StageError::JoinSelf(me.clone()));
        }
        if self.members().keys().any(|n| n != me) {
            return Err(StageError::AlreadyInCluster(me.clone()));
        }
        Ok(())
    }

    /// The claimant `me` admits `node` as a joining member.
    pub fn join(
        &mut self,
        me: &NodeName,
        node: &NodeName,
        member: Member,
    ) -> Result<(), StageError> {
        self.require_claimant_to_stage(me)?;
        if self.members().contains_key(node) {
            return Err(StageError::AlreadyMember(node.clone()));
        }
        let joining = Member {
            status: MemberStatus::Joining,
            ..member
        };
        self.ring.members.insert(node.clone(), joining);
        self.bump(me);
        Ok(())
    }

    /// On the joining node `me`: takes the state of the cluster that
    /// admitted it (where `me` is a joining member) in place of its own
    /// cluster of one, keeping its bucket metadata where newer. A merge
    /// would not do: its own cluster's version could win.
    pub fn adopt(&mut self, me: &NodeName, cluster: &ClusterState) -> Result<(), StageError> {
        if self.members().keys().any(|n| n != me) {
            return Err(StageError::AlreadyInCluster(me.clone()));
        }
        if cluster.ring.status(me) != Some(MemberStatus::Joining) {
            return Err(StageError::NotMember(me.clone()));
        }
        let mine = std::mem::replace(self, cluster.clone());
        self.metadata.merge(&mine.metadata);
        Ok(())
    }

    /// Stages `node`'s leave: it hands its partitions off, then exits.
    pub fn leave(&mut self, me: &NodeName, node: &NodeName) -> Result<(), StageError> {
        self.require_claimant_to_stage(me)?;
        self.require_handoff_source(node)?;
        self.require_unstaged(node)?;
        self.require_others_remain(node)?;
        self.stage(me, Change::Leave { node: node.clone() })
    }

    /// Stages `node`'s removal without handoff.
    pub fn force_remove(&mut self, me: &NodeName, node: &NodeName) -> Result<(), StageError> {
        self.require_claimant_to_stage(me)?;
        self.require_forceable(me, node)?;
        self.require_unstaged(node)?;
        self.require_others_remain(node)?;
        self.stage(me, Change::ForceRemove { node: node.clone() })
    }

    /// Stages `node`'s replacement by the joining node `with`, by handoff.
    pub fn replace(
        &mut self,
        me: &NodeName,
        node: &NodeName,
        with: &NodeName,
    ) -> Result<(), StageError> {
        self.require_claimant_to_stage(me)?;
        self.require_handoff_source(node)?;
        self.require_unstaged(node)?;
        self.require_replacement(with)?;
        let (node, with) = (node.clone(), with.clone());
        self.stage(me, Change::Replace { node, with })
    }

    /// Stages `node`'s replacement by the joining node `with`, at once.
    pub fn force_replace(
        &mut self,
        me: &NodeName,
        node: &NodeName,
        with: &NodeName,
    ) -> Result<(), StageError> {
        self.require_claimant_to_stage(me)?;
        self.require_forceable(me, node)?;
        if self.ring.status(node) == Some(MemberStatus::Joining) {
            return Err(StageError::StillJoining(node.clone()));
        }
        self.require_unstaged(node)?;
        self.require_replacement(with)?;
        let (node, with) = (node.clone(), with.clone());
        self.stage(me, Change::ForceReplace { node, with })
    }

    /// Drops every staged change and every joining member. Returns whether
    /// there was anything to drop.
    pub fn clear(&mut self, me: &NodeName) -> Result<bool, StageError> {
        self.require_claimant_to_stage(me)?;
        let joining: Vec<NodeName> = self.joining().cloned().collect();
        if joining.is_empty() && self.ring.staged.is_empty() {
            return Ok(false);
        }
        for node in joining {
            self.ring.members.remove(&node);
        }
        self.ring.staged.clear();
        self.bump(me);
        Ok(true)
    }

    /// The staged changes, joins first, as `plan` lists them.
    pub fn staged(&self) -> Vec<Change> {
        let joins = self
            .joining()
            .map(|node| Change::Join { node: node.clone() });
        joins.chain(self.ring.staged.iter().cloned()).collect()
    }

    fn joining(&self) -> impl Iterator<Item = &NodeName> {
        self.members()
            .iter()
            .filter(|(_, m)| m.status == MemberStatus::Joining)
            .map(|(n, _)| n)
    }

    fn stage(&mut self, me: &NodeName, change: Change) -> Result<(), StageError> {
        self.ring.staged.push(change);
        self.bump(me);
        Ok(())
    }

    fn require_claimant_to_stage(&self, me: &NodeName) -> Result<(), StageError> {
        self.require_claimant(me)
            .map_err(|claimant| StageError::NotClaimant {
                me: me.clone(),
                claimant,
            })
    }

    /// A node that is to hand its partitions off: a valid member.
    fn require_handoff_source(&self, node: &NodeName) -> Result<(), StageError> {
        match self.ring.status(node) {
            None => Err(StageError::NotMember(node.clone())),
            Some(MemberStatus::Valid) => Ok(()),
            Some(MemberStatus::Joining) => Err(StageError::StillJoining(node.clone())),
            Some(MemberStatus::Down) => Err(StageError::IsDown(node.clone())),
            Some(MemberStatus::Leaving | MemberStatus::Exiting) => {
                Err(StageError::AlreadyLeaving(node.clone()))
            }
        }
    }

    /// A node that may be forced out: a member other than the claimant
    /// that is not on its way out already.
    fn require_forceable(&self, me: &NodeName, node: &NodeName) -> Result<(), StageError> {
        match self.ring.status(node) {
            None => Err(StageError::NotMember(node.clone())),
            Some(_) if node == me => Err(StageError::IsClaimant(node.clone())),
            Some(MemberStatus::Exiting) => Err(StageError::AlreadyLeaving(node.clone())),
            Some(_) => Ok(()),
        }
    }

    fn require_unstaged(&self, node: &NodeName) -> Result<(), StageError> {
        let involved = |c: &Change| c.node() == node || c.replacement() == Some(node);
        if self.ring.staged.iter().any(involved) {
            return Err(StageError::AlreadyStaged(node.clone()));
        }
        Ok(())
    }

    fn require_replacement(&self, with: &NodeName) -> Result<(), StageError> {
        let staged = &self.ring.staged;
        if staged.iter().any(|c| c.replacement() == Some(with)) {
            return Err(StageError::AlreadyReplacement(with.clone()));
        }
        let joining = self.ring.status(with) == Some(MemberStatus::Joining);
        if !joining || staged.iter().any(|c| c.node() == with) {
            return Err(StageError::InvalidReplacement(with.clone()));
        }
        Ok(())
    }

    /// After the staged changes and `node`'s departure, some valid or
    /// joining member must remain to own the ring.
    fn require_others_remain(&self, node: &NodeName) -> Result<(), StageError> {
        let mut departing: BTreeSet<&NodeName> =
            self.ring.staged.iter().map(Change::node).collect();
        departing.insert(node);
        let remain = self.members().iter().any(|(n, m)| {
            matches!(m.status, MemberStatus::Valid | MemberStatus::Joining)
                && !departing.contains(n)
        });
        if remain {
            Ok(())
        } else {
            Err(StageError::OnlyMember(node.clone()))
        }
    }
}
