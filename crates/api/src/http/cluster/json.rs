//! The cluster admin answers as JSON: plain data the CLI prints the way
//! `riak admin` does. Node names are strings, shares are percentages of
//! the ring's partitions, partitions are their numbers.
//!
//! - a member row: `{"node","status","ring_pct","pending_pct"}`
//!   (`pending_pct` null when nothing is pending: Riak's `--`);
//! - a plan: `{"changes":[{"action","node","with"?}],"lost","before","after",
//!   "transfers","reassigned","moves":[{"from","to","partitions"}]}`;
//! - a transfer: `{"partition","from","to","done"?}`;
//! - a transfer running on this node (`transfers`' `active`):
//!   `{"type","partition","from","to","state","objects","bytes","batches",
//!   "resumes","last_error","elapsed_ms","bytes_per_sec"}`, and one being
//!   received (`inbound`): `{"partition","from","to","batches","objects",
//!   "idle_ms"}`.

use std::collections::{BTreeMap, HashSet};

use eddy_cluster::{
    MemberStatusRow, Membership, NodeName, NodeTransfers, Plan, RingStatus, Transfer,
};
use eddy_remote::handoff::{InboundStatus, Kind, TransferState, TransferStatus};
use serde_json::{Value, json};

/// One `member-status` row.
pub fn row(r: &MemberStatusRow) -> Value {
    json!({
        "node": r.node,
        "status": r.status.as_str(),
        "ring_pct": r.ring_pct,
        "pending_pct": r.pending_pct,
    })
}

/// `member-status`.
pub fn member_status(rows: &[MemberStatusRow]) -> Value {
    json!({ "members": rows.iter().map(row).collect::<Vec<_>>() })
}

/// A plan, staged or carried out.
pub fn plan(p: &Plan) -> Value {
    let changes: Vec<Value> = p
        .changes
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect();
    json!({
        "changes": changes,
        "lost": p.lost,
        "before": p.before.iter().map(row).collect::<Vec<_>>(),
        "after": p.after.iter().map(row).collect::<Vec<_>>(),
        "transfers": p.transfers,
        "reassigned": p.reassigned,
        "moves": moves(p.ring.pending()),
    })
}

/// The plan when nothing is staged.
pub fn empty_plan() -> Value {
    json!({
        "changes": [],
        "lost": [],
        "before": [],
        "after": [],
        "transfers": 0,
        "reassigned": 0,
        "moves": [],
    })
}

/// How many partitions move from each node to each other node.
fn moves(pending: impl Iterator<Item = Transfer>) -> Vec<Value> {
    let mut counts: BTreeMap<(NodeName, NodeName), usize> = BTreeMap::new();
    for t in pending {
        *counts.entry((t.from, t.to)).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|((from, to), n)| json!({ "from": from, "to": to, "partitions": n }))
        .collect()
}

/// `cluster status`: every member with its liveness, the claimant and
/// whether the ring is ready, from this node's view.
pub fn cluster_status(m: &Membership) -> Value {
    let status = m.ring_status();
    let members: Vec<Value> = m
        .member_status()
        .iter()
        .map(|r| {
            let mut v = row(r);
            v["up"] = json!(m.is_up(&r.node));
            v["claimant"] = json!(status.claimant.as_ref() == Some(&r.node));
            v
        })
        .collect();
    json!({
        "node": m.node(),
        "claimant": status.claimant,
        "ring_ready": status.ring_ready.is_ok(),
        "members": members,
    })
}

/// `ring-status`: the claimant, ring-ready, the ownership handoffs
/// pending (each `done` once reported finished) and the unreachable
/// members.
pub fn ring_status(s: &RingStatus, transfers: &[NodeTransfers]) -> Value {
    let reported: HashSet<&Transfer> = transfers.iter().flat_map(|t| &t.reported).collect();
    let pending: Vec<Value> = s
        .pending
        .iter()
        .map(|t| {
            let mut v = transfer(t);
            v["done"] = json!(reported.contains(t));
            v
        })
        .collect();
    json!({
        "claimant": s.claimant,
        "ring_ready": s.ring_ready.is_ok(),
        "waiting": s.ring_ready.as_ref().err().cloned().unwrap_or_default(),
        "pending": pending,
        "unreachable": s.unreachable,
    })
}

/// `ringready`: whether every member answered at this node's epoch.
pub fn ringready(members: &[NodeName], ready: Result<(), Vec<NodeName>>) -> Value {
    json!({
        "ready": ready.is_ok(),
        "nodes": members,
        "waiting": ready.err().unwrap_or_default(),
    })
}

/// `transfers`: per sending node, the handoffs waiting and those reported
/// finished (not yet applied by the claimant).
pub fn transfers(rows: &[NodeTransfers]) -> Value {
    let rows: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "node": r.node,
                "waiting": r.waiting.iter().map(transfer).collect::<Vec<_>>(),
                "reported": r.reported.iter().map(transfer).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "transfers": rows })
}

/// What this node is sending and receiving now: its outbound transfers
/// that are running (waiting ones are `transfers`' `waiting`; handed ones
/// its `reported`), and the inbound ones heard from within `fresh_ms`.
pub fn active(
    me: &NodeName,
    outbound: &[TransferStatus],
    inbound: &[InboundStatus],
    fresh_ms: u128,
) -> (Value, Value) {
    let running =
        |t: &&TransferStatus| matches!(t.state, TransferState::Running | TransferState::Dropping);
    let out: Vec<Value> = outbound
        .iter()
        .filter(running)
        .map(|t| {
            json!({
                "type": kind(t.kind),
                "partition": t.partition.0,
                "from": me,
                "to": t.to,
                "state": state(&t.state),
                "objects": t.objects,
                "bytes": t.bytes,
                "batches": t.batches_acked,
                "resumes": t.resumes,
                "last_error": t.last_error,
                "elapsed_ms": t.elapsed.as_millis() as u64,
                "bytes_per_sec": t.bytes_per_sec,
            })
        })
        .collect();
    let inb: Vec<Value> = inbound
        .iter()
        .filter(|t| t.idle.as_millis() < fresh_ms)
        .map(|t| {
            json!({
                "partition": t.partition.0,
                "from": t.from,
                "to": me,
                "batches": t.batches,
                "objects": t.objects,
                "idle_ms": t.idle.as_millis() as u64,
            })
        })
        .collect();
    (Value::Array(out), Value::Array(inb))
}

/// Riak's names for the two kinds of transfer.
fn kind(k: Kind) -> &'static str {
    match k {
        Kind::Ownership => "ownership_transfer",
        Kind::Hinted => "hinted_handoff",
    }
}

fn state(s: &TransferState) -> &'static str {
    match s {
        TransferState::Waiting => "waiting",
        TransferState::Running => "running",
        TransferState::Handed => "handed",
        TransferState::Dropping => "dropping",
        TransferState::Dropped => "dropped",
    }
}

fn transfer(t: &Transfer) -> Value {
    json!({ "partition": t.partition.0, "from": t.from, "to": t.to })
}

#[cfg(test)]
mod tests {
    use eddy_cluster::{MemberStatus, Partition};

    use super::*;

    fn n(s: &str) -> NodeName {
        NodeName(s.into())
    }

    fn t(p: u32, from: &str, to: &str) -> Transfer {
        Transfer {
            partition: Partition(p),
            from: n(from),
            to: n(to),
        }
    }

    #[test]
    fn rows_say_pending_null_when_settled() {
        let r = MemberStatusRow {
            node: n("a@h"),
            status: MemberStatus::Valid,
            ring_pct: 100.0,
            pending_pct: None,
        };
        assert_eq!(
            row(&r),
            json!({"node":"a@h","status":"valid","ring_pct":100.0,"pending_pct":null})
        );
    }

    #[test]
    fn moves_count_partitions_per_pair() {
        let pending = [t(0, "a@h", "b@h"), t(1, "a@h", "c@h"), t(2, "a@h", "b@h")];
        assert_eq!(
            moves(pending.into_iter()),
            vec![
                json!({"from":"a@h","to":"b@h","partitions":2}),
                json!({"from":"a@h","to":"c@h","partitions":1}),
            ]
        );
    }

    #[test]
    fn ring_status_marks_reported_transfers_done() {
        let s = RingStatus {
            claimant: Some(n("a@h")),
            ring_ready: Err(vec![n("c@h")]),
            pending: vec![t(0, "a@h", "b@h"), t(1, "a@h", "c@h")],
            unreachable: vec![n("c@h")],
        };
        let rows = [NodeTransfers {
            node: n("a@h"),
            waiting: vec![t(1, "a@h", "c@h")],
            reported: vec![t(0, "a@h", "b@h")],
        }];
        let v = ring_status(&s, &rows);
        assert_eq!(v["ring_ready"], json!(false));
        assert_eq!(v["waiting"], json!(["c@h"]));
        assert_eq!(v["pending"][0]["done"], json!(true));
        assert_eq!(v["pending"][1]["done"], json!(false));
        assert_eq!(v["unreachable"], json!(["c@h"]));
    }

    #[test]
    fn ringready_lists_who_is_waited_for() {
        let members = [n("a@h"), n("b@h")];
        let v = ringready(&members, Err(vec![n("b@h")]));
        assert_eq!(
            v,
            json!({"ready":false,"nodes":["a@h","b@h"],"waiting":["b@h"]})
        );
        assert_eq!(ringready(&members, Ok(()))["ready"], json!(true));
    }

    #[test]
    fn active_shows_running_transfers_and_fresh_inbound_ones() {
        use std::time::Duration;
        let status = |p: u32, state: TransferState| TransferStatus {
            partition: Partition(p),
            kind: Kind::Hinted,
            to: n("b@h"),
            state,
            objects: 10,
            bytes: 2048,
            batches_sent: 2,
            batches_acked: 1,
            resumes: 0,
            last_error: None,
            elapsed: Duration::from_millis(1500),
            bytes_per_sec: 1365,
        };
        let outbound = [
            status(1, TransferState::Waiting),
            status(2, TransferState::Running),
            status(3, TransferState::Handed),
        ];
        let inbound = |p: u32, idle_ms: u64| InboundStatus {
            partition: Partition(p),
            from: n("c@h"),
            batches: 4,
            objects: 400,
            idle: Duration::from_millis(idle_ms),
        };
        let (active, received) = active(
            &n("a@h"),
            &outbound,
            &[inbound(5, 20), inbound(6, 60_000)],
            10_000,
        );
        assert_eq!(
            active,
            json!([{
                "type": "hinted_handoff", "partition": 2, "from": "a@h", "to": "b@h",
                "state": "running", "objects": 10, "bytes": 2048, "batches": 1,
                "resumes": 0, "last_error": null, "elapsed_ms": 1500,
                "bytes_per_sec": 1365,
            }])
        );
        assert_eq!(
            received,
            json!([{
                "partition": 5, "from": "c@h", "to": "a@h", "batches": 4,
                "objects": 400, "idle_ms": 20,
            }])
        );
    }
}
