//! What the membership service's operations can fail with, and the form
//! those errors take on the wire, so a refusal made by the claimant comes
//! back to the node an operator asked as the same typed error.

use std::sync::Arc;

use eddy_ring::NodeName;
use serde::{Deserialize, Serialize};

use crate::error::{CommitError, PersistError, StageError, TransferError};

/// Why a membership operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum MembershipError {
    /// The claimant (or this node) refused the change.
    #[error(transparent)]
    Stage(#[from] StageError),
    /// The plan could not be computed or committed.
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// The completed transfer is not one the ring plans.
    #[error(transparent)]
    Transfer(#[from] TransferError),
    /// This node could not save its state, so it did not act on it.
    #[error("{0}")]
    Persist(Arc<PersistError>),
    /// A node the operation needs did not answer.
    #[error("Failed: {node} is not reachable: {reason}")]
    Unreachable {
        /// The node.
        node: NodeName,
        /// What the transport reported.
        reason: String,
    },
    /// No valid or leaving member is up to act as the claimant.
    #[error("Failed: no claimant is reachable: no valid member is up")]
    NoClaimant,
    /// Another node failed (not a refusal) while carrying the operation
    /// out, e.g. it could not save its state.
    #[error("Failed on {node}: {reason}")]
    Remote {
        /// The node that failed.
        node: NodeName,
        /// Its error, as text.
        reason: String,
    },
    /// A peer answered with something that is not the expected reply.
    #[error("bad reply from {node}: {reason}")]
    BadReply {
        /// The peer.
        node: NodeName,
        /// What was wrong.
        reason: String,
    },
    /// The service was shut down.
    #[error("the membership service is shut down")]
    Shutdown,
}

impl From<PersistError> for MembershipError {
    fn from(e: PersistError) -> MembershipError {
        MembershipError::Persist(Arc::new(e))
    }
}

/// [`StageError`] as it crosses the wire: serde checks at compile time
/// that this mirror names every variant and field.
#[derive(Serialize, Deserialize)]
#[serde(remote = "StageError")]
enum StageErrorDef {
    JoinSelf(NodeName),
    AlreadyInCluster(NodeName),
    AlreadyMember(NodeName),
    NotMember(NodeName),
    OnlyMember(NodeName),
    AlreadyLeaving(NodeName),
    StillJoining(NodeName),
    IsDown(NodeName),
    IsClaimant(NodeName),
    InvalidReplacement(NodeName),
    AlreadyReplacement(NodeName),
    AlreadyStaged(NodeName),
    IsUp(NodeName),
    NotClaimant { me: NodeName, claimant: NodeName },
}

/// [`TransferError`] as it crosses the wire.
#[derive(Serialize, Deserialize)]
#[serde(remote = "TransferError")]
enum TransferErrorDef {
    NotPending {
        partition: eddy_ring::Partition,
        from: NodeName,
        to: NodeName,
    },
}

/// A [`MembershipError`] on the wire. Errors of the ring and claim layers
/// and local I/O errors travel as text ([`MembershipError::Remote`]): they
/// are failures of the node that met them, not refusals the asker acts on.
#[derive(Serialize, Deserialize)]
pub(crate) enum ErrorWire {
    Stage(#[serde(with = "StageErrorDef")] StageError),
    Transfer(#[serde(with = "TransferErrorDef")] TransferError),
    EmptyPlan,
    RingNotReady { waiting: Vec<NodeName> },
    CommitNotClaimant { me: NodeName, claimant: NodeName },
    Unreachable { node: NodeName, reason: String },
    NoClaimant,
    Remote { node: NodeName, reason: String },
}

impl ErrorWire {
    /// The wire form of `e`, met on node `at`.
    pub(crate) fn from_error(e: MembershipError, at: &NodeName) -> ErrorWire {
        let remote = |reason: String| ErrorWire::Remote {
            node: at.clone(),
            reason,
        };
        match e {
            MembershipError::Stage(e) => ErrorWire::Stage(e),
            MembershipError::Transfer(e) => ErrorWire::Transfer(e),
            MembershipError::Commit(CommitError::EmptyPlan) => ErrorWire::EmptyPlan,
            MembershipError::Commit(CommitError::RingNotReady { waiting }) => {
                ErrorWire::RingNotReady { waiting }
            }
            MembershipError::Commit(CommitError::NotClaimant { me, claimant }) => {
                ErrorWire::CommitNotClaimant { me, claimant }
            }
            MembershipError::Unreachable { node, reason } => {
                ErrorWire::Unreachable { node, reason }
            }
            MembershipError::NoClaimant => ErrorWire::NoClaimant,
            MembershipError::Remote { node, reason } => ErrorWire::Remote { node, reason },
            other => remote(other.to_string()),
        }
    }

    /// The error the asker returns.
    pub(crate) fn into_error(self) -> MembershipError {
        match self {
            ErrorWire::Stage(e) => MembershipError::Stage(e),
            ErrorWire::Transfer(e) => MembershipError::Transfer(e),
            ErrorWire::EmptyPlan => CommitError::EmptyPlan.into(),
            ErrorWire::RingNotReady { waiting } => CommitError::RingNotReady { waiting }.into(),
            ErrorWire::CommitNotClaimant { me, claimant } => {
                CommitError::NotClaimant { me, claimant }.into()
            }
            ErrorWire::Unreachable { node, reason } => {
                MembershipError::Unreachable { node, reason }
            }
            ErrorWire::NoClaimant => MembershipError::NoClaimant,
            ErrorWire::Remote { node, reason } => MembershipError::Remote { node, reason },
        }
    }
}
