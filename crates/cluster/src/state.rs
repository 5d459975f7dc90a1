//! [`ClusterState`]: everything a node knows about its cluster, and the
//! merge that gossip applies to it.
//!
//! Three kinds of data, each merged its own way:
//! - the claimant's decisions ([`RingState`]: ring, members, staged
//!   changes), taken whole from the newer `(epoch, claimant)` version;
//! - completed-transfer facts, merged by union (a completion reported to
//!   a claimant that then died is not lost), each kept for
//!   [`FACT_EPOCHS_KEPT`] epochs after it was recorded;
//! - bucket types and bucket props, last-writer-wins registers.
//!
//! Invariants: `merge` is commutative, associative and idempotent, so
//! states exchanged in any order, any number of times, converge to one
//! state; a state never holds a fact older than its epoch allows.

use std::collections::{BTreeMap, BTreeSet};

use eddy_ring::{NodeName, Ring, RingError};
use serde::{Deserialize, Serialize};

use crate::member::{Member, MemberStatus};
use crate::ring_state::RingState;
use crate::transfers::{TransferFact, prune_facts};
use eddy_model::metadata::register::BucketMetadata;

/// How many epochs a completed-transfer fact outlives the epoch it was
/// recorded in. The claimant applies facts at once, so they are needed
/// only while they travel to it; a sender whose transfer is still pending
/// after that records it again.
pub const FACT_EPOCHS_KEPT: u64 = 64;

/// A node's view of its cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterState {
    pub(crate) cluster_name: String,
    pub(crate) ring: RingState,
    pub(crate) transfers_done: BTreeSet<TransferFact>,
    /// Bucket types and bucket props (their JSON fields `bucket_types`
    /// and `bucket_props` sit beside the others).
    #[serde(flatten)]
    pub(crate) metadata: BucketMetadata,
}

impl ClusterState {
    /// A new cluster of one: `node`, valid, owning all `ring_size`
    /// partitions, and its own claimant.
    pub fn new(
        cluster_name: impl Into<String>,
        node: NodeName,
        incarnation: u64,
        address: impl Into<String>,
        ring_size: u32,
    ) -> Result<ClusterState, RingError> {
        let ring = Ring::single(ring_size, node.clone())?;
        let member = Member::new(MemberStatus::Valid, incarnation, address);
        Ok(ClusterState {
            cluster_name: cluster_name.into(),
            ring: RingState::single(node, member, ring),
            transfers_done: BTreeSet::new(),
            metadata: BucketMetadata::default(),
        })
    }

    /// The cluster's name (nodes of different clusters never merge).
    pub fn cluster_name(&self) -> &str {
        &self.cluster_name
    }

    /// The claimant's decisions: ring, members, staged changes.
    pub fn ring_state(&self) -> &RingState {
        &self.ring
    }

    /// The ring, with its pending transfers.
    pub fn ring(&self) -> &Ring {
        &self.ring.ring
    }

    /// The version of the claimant's decisions.
    pub fn epoch(&self) -> u64 {
        self.ring.epoch
    }

    /// Every member, by name.
    pub fn members(&self) -> &BTreeMap<NodeName, Member> {
        &self.ring.members
    }

    /// The completed transfers reported and not yet forgotten.
    pub fn transfers_done(&self) -> &BTreeSet<TransferFact> {
        &self.transfers_done
    }

    /// The bucket type and bucket props registers.
    pub fn metadata(&self) -> &BucketMetadata {
        &self.metadata
    }

    /// The bucket type and bucket props registers, to write.
    pub fn metadata_mut(&mut self) -> &mut BucketMetadata {
        &mut self.metadata
    }

    /// Merges `other` into `self`. Returns whether `self` changed. A state
    /// of another cluster is ignored.
    pub fn merge(&mut self, other: &ClusterState) -> bool {
        if other.cluster_name != self.cluster_name {
            tracing::warn!(
                ours = %self.cluster_name,
                theirs = %other.cluster_name,
                "ignored the state of another cluster"
            );
            return false;
        }
        let mut changed = false;
        if other.ring.wins_over(&self.ring) {
            self.ring = other.ring.clone();
            changed = true;
        }
        let before = self.transfers_done.len();
        self.transfers_done
            .extend(other.transfers_done.iter().cloned());
        changed |= self.transfers_done.len() != before;
        changed |= self.prune_facts();
        changed | self.metadata.merge(&other.metadata)
    }

    /// A hash of the whole state: equal digests mean (but for a 2^-128
    /// chance) equal states, so gossip sends a full state only when the
    /// digests differ.
    pub fn digest(&self) -> u128 {
        crate::digest::hash_json(self)
    }

    /// Drops the facts the epoch has outlived. Returns whether any went.
    pub(crate) fn prune_facts(&mut self) -> bool {
        prune_facts(&mut self.transfers_done, self.ring.epoch)
    }

    /// Replaces the claimant's decisions with a newer version of its own
    /// making, bumping the epoch.
    pub(crate) fn bump(&mut self, me: &NodeName) {
        self.ring.epoch += 1;
        self.ring.claimant = me.clone();
        self.prune_facts();
    }
}
