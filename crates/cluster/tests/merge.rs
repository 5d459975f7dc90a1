//! The merge laws, over states that random runs of several simulated nodes
//! produce (joins, leaves, forced changes, commits, transfers, take-overs
//! after crashes, bucket metadata writes, and gossip in any order): merge
//! is commutative, associative and idempotent, and says truly whether it
//! changed anything.

mod common;

use common::{Op, Sim, op};
use eddy_cluster::ClusterState;
use proptest::prelude::*;

const NODES: usize = 5;

/// Runs `ops` and returns every state any node held along the way.
fn snapshots(ops: &[Op]) -> Vec<ClusterState> {
    let mut sim = Sim::new(NODES, 16);
    let mut seen = sim.states.clone();
    for op in ops {
        if sim.apply(op).is_ok() {
            seen.extend(sim.states.iter().cloned());
        }
    }
    seen
}

fn merged(a: &ClusterState, b: &ClusterState) -> ClusterState {
    let mut m = a.clone();
    m.merge(b);
    m
}

fn pick(states: &[ClusterState], i: prop::sample::Index) -> &ClusterState {
    &states[i.index(states.len())]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn merge_is_commutative_associative_and_idempotent(
        ops in prop::collection::vec(op(NODES), 0..200),
        picks in prop::array::uniform3(any::<prop::sample::Index>()),
    ) {
        let states = snapshots(&ops);
        let [a, b, c] = picks.map(|i| pick(&states, i).clone());
        prop_assert_eq!(merged(&a, &b), merged(&b, &a));
        prop_assert_eq!(merged(&merged(&a, &b), &c), merged(&a, &merged(&b, &c)));
        prop_assert_eq!(&merged(&a, &a), &a);
        prop_assert_eq!(merged(&a, &b).digest(), merged(&b, &a).digest());
    }

    #[test]
    fn merge_reports_change_exactly(
        ops in prop::collection::vec(op(NODES), 0..200),
        picks in prop::array::uniform2(any::<prop::sample::Index>()),
    ) {
        let states = snapshots(&ops);
        let [a, b] = picks.map(|i| pick(&states, i).clone());
        let mut m = a.clone();
        let changed = m.merge(&b);
        prop_assert_eq!(changed, m != a);
        prop_assert_eq!(changed, m.digest() != a.digest());
    }

    #[test]
    fn merge_keeps_the_newer_claimant_version_and_every_newer_register(
        ops in prop::collection::vec(op(NODES), 0..200),
        picks in prop::array::uniform2(any::<prop::sample::Index>()),
    ) {
        let states = snapshots(&ops);
        let [a, b] = picks.map(|i| pick(&states, i).clone());
        let m = merged(&a, &b);
        let winner = if b.ring_state().wins_over(a.ring_state()) { &b } else { &a };
        prop_assert_eq!(m.ring_state(), winner.ring_state());
        let types = |s: &ClusterState| s.metadata().bucket_types.clone();
        for (name, reg) in types(&a).iter().chain(&types(&b)) {
            let kept = &m.metadata().bucket_types[name];
            prop_assert!(kept == reg || kept.wins_over(reg));
        }
        for f in a.transfers_done().iter().chain(b.transfers_done()) {
            let outlived = f.epoch + eddy_cluster::FACT_EPOCHS_KEPT < m.epoch();
            prop_assert_eq!(m.transfers_done().contains(f), !outlived);
        }
    }
}

#[test]
fn two_versions_of_one_epoch_by_one_claimant_merge_alike_either_way() {
    // The claimant stages a change, restarts from an older saved state and
    // stages another: two different versions share (epoch, claimant).
    let mut sim = common::settled_cluster(4, 4, 16);
    sim.apply(&Op::Save { node: 0 }).unwrap();
    sim.apply(&Op::Leave { by: 0, node: 1 }).unwrap();
    let first = sim.states[0].clone();
    sim.apply(&Op::Restart { node: 0 }).unwrap();
    sim.apply(&Op::Leave { by: 0, node: 2 }).unwrap();
    let second = sim.states[0].clone();
    assert_eq!(first.epoch(), second.epoch());
    assert_ne!(first.ring_state(), second.ring_state());
    let (ab, ba) = (merged(&first, &second), merged(&second, &first));
    assert_eq!(ab, ba);
    assert!(ab.ring_state() == first.ring_state() || ab.ring_state() == second.ring_state());
}
