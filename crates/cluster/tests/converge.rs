//! Runs of several simulated nodes: after random changes, crashes and
//! gossip, states exchanged in any order converge to one state; and a
//! claimant lost in the middle of a change is replaced by a node that
//! finishes the change.

mod common;

use common::{Op, Sim, name, op, report_all, settle, settled_cluster};
use eddy_cluster::{MemberStatus, NodeName};
use proptest::prelude::*;

const NODES: usize = 5;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn states_exchanged_in_any_order_converge(
        ops in prop::collection::vec(op(NODES), 0..200),
        order in Just((0..NODES).flat_map(|a| (0..NODES).map(move |b| (a, b))).collect::<Vec<_>>())
            .prop_shuffle(),
    ) {
        let mut sim = settled_cluster(NODES, 3, 16);
        for o in &ops {
            let _ = sim.apply(o);
        }
        sim.up = vec![true; NODES];
        sim.settle_gossip(&order);
        let mutual = |i: usize, j: usize| {
            sim.states[i].members().contains_key(&name(j))
                && sim.states[j].members().contains_key(&name(i))
        };
        for i in 0..NODES {
            for j in (0..NODES).filter(|&j| mutual(i, j)) {
                prop_assert_eq!(sim.states[i].digest(), sim.states[j].digest());
            }
        }
    }
}

#[test]
fn gossip_carries_a_props_change_to_every_member() {
    let mut sim = settled_cluster(4, 4, 16);
    sim.apply(&Op::SetProps {
        by: 2,
        bucket: 1,
        value: 5,
    })
    .unwrap();
    sim.apply(&Op::Tick).unwrap();
    sim.apply(&Op::SetProps {
        by: 3,
        bucket: 1,
        value: 1,
    })
    .unwrap();
    sim.sync();
    for s in &sim.states {
        let b1 = &s.metadata().bucket_props["default"]["b1"];
        assert_eq!(
            common::json_of(&b1.props)["n_val"],
            1,
            "the later write wins everywhere"
        );
        assert_eq!(b1.stamp.node, name(3));
    }
}

/// A five-node cluster with a node joining: the commit plans transfers,
/// every sender reports its transfers done, and the claimant dies before
/// it applies them.
fn claimant_dies_after_commit() -> Sim {
    let mut sim = settled_cluster(5, 4, 64);
    sim.apply(&Op::Join { joiner: 4, via: 2 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 3 }).unwrap();
    sim.sync();
    assert!(!sim.states[0].ring().is_settled());
    report_all(&mut sim);
    // The claimant's own reports reach node 1 only; then it is lost.
    sim.gossip(0, 1).unwrap();
    sim.apply(&Op::Crash { node: 0 }).unwrap();
    sim.sync();
    sim
}

#[test]
fn a_lost_claimant_is_replaced_and_the_change_completes() {
    let mut sim = claimant_dies_after_commit();
    let future = sim.states[1].ring().future();
    let up = |n: &NodeName| *n != name(0);
    assert_eq!(
        sim.states[2].claimant(up),
        Some(&name(1)),
        "the first valid member that is up"
    );
    settle(&mut sim, 1);
    for i in 1..NODES {
        let s = &sim.states[i];
        assert!(s.ring().is_settled());
        assert_eq!(s.ring(), &future);
        assert_eq!(s.ring_state().claimant, name(1));
        assert_eq!(s.members()[&name(4)].status, MemberStatus::Valid);
        assert_eq!(s.digest(), sim.states[1].digest());
    }
}

#[test]
fn a_claimant_that_applied_part_of_a_change_and_died_loses_nothing() {
    let mut sim = settled_cluster(5, 4, 64);
    sim.apply(&Op::Join { joiner: 4, via: 0 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    sim.sync();
    let future = sim.states[0].ring().future();
    // Node 2's reports reach the claimant, which applies them and dies
    // before its new state leaves it; node 1 never saw them applied.
    let waiting = sim.states[2].transfers_waiting();
    for t in waiting.iter().filter(|t| t.from == name(2)) {
        sim.states[2]
            .transfer_complete(t.partition, &t.from, &t.to)
            .unwrap();
    }
    sim.gossip(2, 0).unwrap();
    assert!(sim.states[0].apply_transfers(&name(0)).unwrap());
    let dead_epoch = sim.states[0].epoch();
    sim.apply(&Op::Crash { node: 0 }).unwrap();
    // The senders still up report the rest; node 0's own stay pending.
    report_all(&mut sim);
    settle_without(&mut sim, 1);
    let s = &sim.states[1];
    assert!(
        s.epoch() > dead_epoch,
        "the successor's version wins when node 0 returns"
    );
    let pending: Vec<_> = s.ring().pending().collect();
    assert!(
        pending.iter().all(|t| t.from == name(0)),
        "only the dead node's own transfers wait"
    );
    assert_eq!(s.ring().future(), future);
    // Node 0 comes back, reports its transfers, and the change completes.
    sim.apply(&Op::Recover { node: 0 }).unwrap();
    settle(&mut sim, 1);
    assert_eq!(sim.states[0].ring(), &future);
    assert_eq!(
        sim.states[0].ring_state().claimant,
        name(1),
        "the claimant does not move back"
    );
}

/// Node `c` takes over and applies whatever is reported, with gossip,
/// until nothing changes (some transfers may stay pending).
fn settle_without(sim: &mut Sim, c: usize) {
    for _ in 0..8 {
        sim.sync();
        sim.take_over(c);
        sim.states[c].apply_transfers(&name(c)).unwrap();
    }
    sim.sync();
}
