//! What the admin commands show, as data the CLI prints: `member-status`,
//! `ring-status` and `transfers` (Riak's names and columns).

use std::collections::BTreeMap;

use eddy_ring::{NodeName, Ring, Transfer};

use crate::member::{Member, MemberStatus};
use crate::state::ClusterState;

/// One line of `member-status`.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberStatusRow {
    /// The member.
    pub node: NodeName,
    /// Its status.
    pub status: MemberStatus,
    /// The share of partitions it owns now, in percent.
    pub ring_pct: f64,
    /// The share it will own once the pending transfers are done, in
    /// percent; `None` when nothing is pending (Riak prints `--`).
    pub pending_pct: Option<f64>,
}

/// What `ring-status` shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingStatus {
    /// The claimant, if any eligible member is up.
    pub claimant: Option<NodeName>,
    /// Whether the ring is ready for a commit; `Err` lists the members
    /// waited for.
    pub ring_ready: Result<(), Vec<NodeName>>,
    /// The ownership transfers pending, whether reported done or not.
    pub pending: Vec<Transfer>,
    /// Members the failure detector reports down.
    pub unreachable: Vec<NodeName>,
}

/// One line of `transfers`: a node's handoffs still to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeTransfers {
    /// The sender.
    pub node: NodeName,
    /// Transfers from it that are not reported done (and, on the node's own
    /// line when it answers, its hinted handoffs).
    pub waiting: Vec<Transfer>,
    /// Transfers from it reported done, not yet applied by the claimant.
    pub reported: Vec<Transfer>,
}

impl ClusterState {
    /// `member-status`: every member with its ring share, in name order.
    pub fn member_status(&self) -> Vec<MemberStatusRow> {
        member_rows(self.members(), self.ring())
    }

    /// `ring-status`, given the failure detector's view and the epochs the
    /// members last reported (`None`: unreachable).
    pub fn ring_status(
        &self,
        is_up: impl Fn(&NodeName) -> bool,
        peer_epoch: impl Fn(&NodeName) -> Option<u64>,
    ) -> RingStatus {
        RingStatus {
            claimant: self.claimant(&is_up).cloned(),
            ring_ready: self.ring_ready(peer_epoch),
            pending: self.ring().pending().collect(),
            unreachable: self
                .members()
                .keys()
                .filter(|n| !is_up(n))
                .cloned()
                .collect(),
        }
    }

    /// `transfers`: for each node with ownership handoffs pending, the
    /// ones waiting and the ones reported done, in name order.
    pub fn transfers(&self) -> Vec<NodeTransfers> {
        self.transfers_with(Vec::new())
    }

    /// `transfers` with `hinted` (hinted handoffs a node knows it has to
    /// send: its fallback vnodes) added to their senders' waiting ones.
    pub fn transfers_with(&self, hinted: Vec<Transfer>) -> Vec<NodeTransfers> {
        let mut by_node: BTreeMap<NodeName, NodeTransfers> = BTreeMap::new();
        let mut add = |t: Transfer, reported: bool| {
            let row = by_node
                .entry(t.from.clone())
                .or_insert_with(|| NodeTransfers {
                    node: t.from.clone(),
                    waiting: Vec::new(),
                    reported: Vec::new(),
                });
            if reported {
                row.reported.push(t)
            } else {
                row.waiting.push(t)
            }
        };
        for t in self.transfers_waiting() {
            add(t, false);
        }
        for t in self.transfers_reported() {
            add(t, true);
        }
        for t in hinted {
            add(t, false);
        }
        by_node.into_values().collect()
    }
}

/// `member-status` rows for `members` over `ring`.
pub(crate) fn member_rows(
    members: &BTreeMap<NodeName, Member>,
    ring: &Ring,
) -> Vec<MemberStatusRow> {
    let size = f64::from(ring.size());
    let share = |count: usize| count as f64 * 100.0 / size;
    let future = (!ring.is_settled()).then(|| ring.future());
    members
        .iter()
        .map(|(node, m)| MemberStatusRow {
            node: node.clone(),
            status: m.status,
            ring_pct: share(ring.owned_by(node).len()),
            pending_pct: future.as_ref().map(|f| share(f.owned_by(node).len())),
        })
        .collect()
}
