//! The admin views: `member-status`, `ring-status` and `transfers`.

mod common;

use common::{Op, name, settled_cluster};
use eddy_cluster::{MemberStatus, NodeName, Transfer};

#[test]
fn a_settled_cluster_is_ready_with_nothing_pending() {
    let sim = settled_cluster(3, 3, 16);
    let s = &sim.states[0];
    let epoch = s.epoch();
    let status = s.ring_status(|_| true, |_| Some(epoch));
    assert_eq!(status.claimant, Some(name(0)));
    assert_eq!(status.ring_ready, Ok(()));
    assert!(status.pending.is_empty() && status.unreachable.is_empty());
    assert!(s.transfers().is_empty());
    let rows = s.member_status();
    assert_eq!(
        rows.iter().map(|r| r.node.clone()).collect::<Vec<_>>(),
        vec![name(0), name(1), name(2)]
    );
    assert!(
        rows.iter()
            .all(|r| r.status == MemberStatus::Valid && r.pending_pct.is_none())
    );
}

#[test]
fn hinted_handoffs_join_their_senders_waiting_ones() {
    let sim = settled_cluster(3, 3, 16);
    let s = &sim.states[0];
    let p = s.ring().owned_by(&name(2))[0];
    let hinted = Transfer {
        partition: p,
        from: name(1),
        to: name(2),
    };
    let rows = s.transfers_with(vec![hinted.clone()]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].node, name(1));
    assert_eq!(rows[0].waiting, vec![hinted]);
    assert!(rows[0].reported.is_empty());
}

#[test]
fn transfers_show_what_waits_and_what_is_reported_per_sender() {
    let mut sim = settled_cluster(4, 3, 32);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    sim.sync();
    let s = &sim.states[1];
    let pending: Vec<_> = s.ring().pending().collect();
    let rows = s.transfers();
    let listed: usize = rows.iter().map(|r| r.waiting.len()).sum();
    assert_eq!(listed, pending.len());
    assert!(
        rows.iter()
            .all(|r| r.waiting.iter().all(|t| t.from == r.node) && r.reported.is_empty())
    );

    // Node 1 reports one of its transfers: it moves from waiting to reported.
    let t = rows.iter().find(|r| r.node == name(1)).unwrap().waiting[0].clone();
    assert!(
        sim.states[1]
            .transfer_complete(t.partition, &t.from, &t.to)
            .unwrap()
    );
    assert!(
        !sim.states[1]
            .transfer_complete(t.partition, &t.from, &t.to)
            .unwrap(),
        "once"
    );
    let row = sim.states[1]
        .transfers()
        .into_iter()
        .find(|r| r.node == name(1))
        .unwrap();
    assert_eq!(row.reported, vec![t.clone()]);
    assert!(!row.waiting.contains(&t));

    // The claimant applies it: the receiver owns the partition.
    sim.sync();
    sim.states[0].apply_transfers(&name(0)).unwrap();
    assert_eq!(sim.states[0].ring().owner(t.partition), &t.to);
    assert!(sim.states[0].ring().next_owner(t.partition).is_none());
    let status = sim.states[0].ring_status(|_| true, |_| None);
    assert_eq!(status.pending.len(), pending.len() - 1);
}

#[test]
fn an_unreachable_node_is_listed_and_holds_the_ring_back() {
    let sim = settled_cluster(3, 3, 16);
    let s = &sim.states[1];
    let epoch = s.epoch();
    let up = |n: &NodeName| *n != name(0);
    let status = s.ring_status(up, |n| up(n).then_some(epoch));
    assert_eq!(status.unreachable, vec![name(0)]);
    assert_eq!(status.ring_ready, Err(vec![name(0)]));
    assert_eq!(
        status.claimant,
        Some(name(1)),
        "the next valid member takes over"
    );
}
