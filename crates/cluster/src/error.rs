//! What each cluster operation can refuse with. The messages follow Riak's
//! `riak admin cluster` wording where Riak has one, so an operator sees
//! the text they know.

use std::path::PathBuf;

use eddy_ring::{ClaimError, NodeName, Partition, RingError};

/// Why a membership change could not be staged (or a node marked down).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// A node asked to join through itself.
    #[error("Failed: {0} cannot join itself in a cluster")]
    JoinSelf(NodeName),
    /// The node asking to join already belongs to a cluster of more than
    /// itself.
    #[error("Failed: {0} is already a member of a cluster")]
    AlreadyInCluster(NodeName),
    /// The node is already a member of this cluster.
    #[error("Failed: {0} is already a member of the cluster")]
    AlreadyMember(NodeName),
    /// The node is not a member of the cluster.
    #[error("Failed: {0} is not a member of the cluster")]
    NotMember(NodeName),
    /// Leaving or removing it would leave the cluster without members.
    #[error("Failed: {0} is the only member")]
    OnlyMember(NodeName),
    /// The node is leaving (or exiting) already.
    #[error("Failed: {0} is already in the process of leaving the cluster")]
    AlreadyLeaving(NodeName),
    /// A joining node cannot leave or be replaced; `cluster clear` cancels
    /// joins that are not committed.
    #[error("Failed: {0} is still joining; 'cluster clear' cancels a join that is not committed")]
    StillJoining(NodeName),
    /// A down node cannot hand its partitions off.
    #[error(
        "Failed: {0} is down; a down node cannot hand its data off: force-remove or force-replace it"
    )]
    IsDown(NodeName),
    /// The claimant cannot force itself out.
    #[error(
        "Failed: {0} is the claimant (see: ring-status); the claimant cannot forcefully \
         remove or replace itself: have it leave, or mark it down from another node"
    )]
    IsClaimant(NodeName),
    /// The replacement is not a newly joining node.
    #[error(
        "Failed: {0} is not a valid replacement candidate; only newly joining nodes can be \
         used for replacement"
    )]
    InvalidReplacement(NodeName),
    /// The replacement already replaces another node.
    #[error("Failed: {0} is already staged to replace another node")]
    AlreadyReplacement(NodeName),
    /// A change for this node is staged already.
    #[error(
        "Failed: a change for {0} is already staged; 'cluster clear' drops the staged \
         changes"
    )]
    AlreadyStaged(NodeName),
    /// The node to be marked down is reachable.
    #[error("Failed: {0} is up; only an unreachable node can be marked down")]
    IsUp(NodeName),
    /// The change must be made by the claimant.
    #[error("{me} is not the claimant; send the change to {claimant}")]
    NotClaimant {
        /// The node that was asked.
        me: NodeName,
        /// The claimant it knows of.
        claimant: NodeName,
    },
}

/// Why a plan could not be computed or committed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// Nothing is staged and no node is joining.
    #[error("Failed: there are no staged changes to commit")]
    EmptyPlan,
    /// Some member that is not down is unreachable or has not seen the
    /// claimant's latest state (Riak's ring-ready rule).
    #[error("Failed: the ring is not ready; waiting for {}", names(.waiting))]
    RingNotReady {
        /// The members that are unreachable or behind.
        waiting: Vec<NodeName>,
    },
    /// The change must be made by the claimant.
    #[error("{me} is not the claimant; send the commit to {claimant}")]
    NotClaimant {
        /// The node that was asked.
        me: NodeName,
        /// The claimant it knows of.
        claimant: NodeName,
    },
    /// The ring could not be built from the claim's owners.
    #[error("ring: {0}")]
    Ring(#[from] RingError),
    /// Claim could not place the partitions.
    #[error("claim failed: {0}")]
    Claim(#[from] ClaimError),
    /// A forced change staged under an earlier claimant names the node
    /// that is claimant now, which cannot force itself out.
    #[error(
        "Failed: {0} became the claimant after its force-remove or force-replace was \
         staged; the claimant cannot force itself out: clear the staged changes and stage \
         them again"
    )]
    ForcesOutClaimant(NodeName),
}

/// Why a completed transfer could not be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// The ring plans no such transfer.
    #[error("no transfer of partition {partition} from {from} to {to} is pending")]
    NotPending {
        /// The partition named.
        partition: Partition,
        /// The sender named.
        from: NodeName,
        /// The receiver named.
        to: NodeName,
    },
}

/// Why the state could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistError {
    /// Reading, writing, syncing or renaming failed.
    #[error("cluster state at {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a cluster state this version can read.
    #[error("cluster state at {path} is corrupt: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

fn names(nodes: &[NodeName]) -> String {
    let names: Vec<&str> = nodes.iter().map(|n| n.0.as_str()).collect();
    names.join(", ")
}
