//! Cluster members and their life stages (Riak's member statuses).
//!
//! A node enters as `Joining` (it asked to join; it owns nothing), becomes
//! `Valid` when a commit gives it a share of the ring, `Leaving` when a
//! commit plans its departure (it keeps serving what it still owns while
//! handoff moves it away), `Exiting` once it owns nothing, and is then
//! removed. `Down` is an operator's mark for a member that is unreachable:
//! it keeps its partitions but takes no part in the ring-ready rule.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A member's life stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberStatus {
    /// Asked to join; owns nothing until a commit gives it partitions.
    Joining,
    /// A full member: owns (or is about to own) its share of the ring.
    Valid,
    /// Planned to leave: hands its partitions off, then exits.
    Leaving,
    /// Owns nothing any more; removed by the claimant's next round.
    Exiting,
    /// Marked down by an operator: keeps its partitions, but is not waited
    /// for by the ring-ready rule.
    Down,
}

impl MemberStatus {
    /// Every status, in the order `member-status` counts them.
    pub const ALL: [MemberStatus; 5] = [
        MemberStatus::Valid,
        MemberStatus::Leaving,
        MemberStatus::Exiting,
        MemberStatus::Joining,
        MemberStatus::Down,
    ];

    /// The status as Riak's `member-status` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberStatus::Joining => "joining",
            MemberStatus::Valid => "valid",
            MemberStatus::Leaving => "leaving",
            MemberStatus::Exiting => "exiting",
            MemberStatus::Down => "down",
        }
    }

    /// Whether a member of this status may act as the claimant (Riak takes
    /// the claimant among valid and leaving members).
    pub fn may_claim(self) -> bool {
        matches!(self, MemberStatus::Valid | MemberStatus::Leaving)
    }

    /// Whether claim gives partitions to a member of this status once the
    /// staged changes are committed (Riak's claiming members: joining,
    /// valid and down).
    pub fn is_claiming(self) -> bool {
        matches!(
            self,
            MemberStatus::Joining | MemberStatus::Valid | MemberStatus::Down
        )
    }
}

impl fmt::Display for MemberStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One member of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Member {
    /// Its life stage.
    pub status: MemberStatus,
    /// Which life of the node this is: a node that lost its data and came
    /// back under the same name has a higher incarnation (the failure
    /// detector's identity).
    pub incarnation: u64,
    /// Where its cluster listener accepts node-to-node connections
    /// (`host:port`).
    pub address: String,
}

impl Member {
    /// A member with this status.
    pub fn new(status: MemberStatus, incarnation: u64, address: impl Into<String>) -> Member {
        Member {
            status,
            incarnation,
            address: address.into(),
        }
    }
}
