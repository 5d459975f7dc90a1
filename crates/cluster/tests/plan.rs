//! `plan` and `commit`: what each kind of change does to members and
//! ring, that a commit does exactly what the plan showed, and that the
//! ring after any committed set of changes is balanced once handoff is
//! done, with a transfer for exactly each partition whose owner changes.

mod common;

use std::collections::BTreeMap;

use common::{Op, Sim, name, settle, settled_cluster};
use eddy_cluster::{ClaimParams, ClusterState, MemberStatus, NodeName, Plan, Ring};
use proptest::prelude::*;

fn commit(sim: &mut Sim) -> Plan {
    sim.sync();
    let me = name(0);
    let epoch = sim.states[0].epoch();
    let plan = sim.states[0].plan(&ClaimParams::default()).unwrap();
    let done = sim.states[0]
        .commit(&me, &ClaimParams::default(), |_| Some(epoch))
        .unwrap();
    assert_eq!(plan, done, "the commit did what the plan showed");
    sim.sync();
    let s = &sim.states[0];
    assert_eq!(s.epoch(), epoch + 1);
    assert_eq!(s.ring(), &plan.ring);
    assert_eq!(s.members(), &plan.members);
    assert!(s.staged().is_empty());
    plan
}

/// Every node of `members` owns ⌊size/m⌋ or ⌈size/m⌉ partitions of `ring`.
fn assert_balanced(ring: &Ring, members: &[NodeName]) {
    let mut count: BTreeMap<&NodeName, u32> = members.iter().map(|n| (n, 0)).collect();
    for owner in ring.owners() {
        *count.get_mut(owner).expect("owned by a member") += 1;
    }
    let m = members.len() as u32;
    let (lo, hi) = (ring.size() / m, ring.size().div_ceil(m));
    assert!(
        count.values().all(|c| (lo..=hi).contains(c)),
        "unbalanced: {count:?}"
    );
}

fn moved(ring: &Ring) -> usize {
    let future = ring.future();
    ring.partitions()
        .filter(|p| ring.owner(*p) != future.owner(*p))
        .count()
}

#[test]
fn a_join_gives_the_new_node_its_share_by_handoff() {
    let mut sim = settled_cluster(4, 3, 64);
    sim.apply(&Op::Join { joiner: 3, via: 1 }).unwrap();
    let plan = commit(&mut sim);
    assert_eq!(plan.changes.len(), 1);
    assert_eq!(plan.transfers, moved(&plan.ring));
    assert_eq!(plan.ring.future().owned_by(&name(3)).len(), 16);
    assert_eq!(plan.reassigned, 0);
    let d = plan.after.iter().find(|r| r.node == name(3)).unwrap();
    assert_eq!(
        (d.status, d.ring_pct, d.pending_pct),
        (MemberStatus::Valid, 0.0, Some(25.0))
    );
    let all: Vec<NodeName> = (0..4).map(name).collect();
    assert_balanced(&plan.ring.future(), &all);
    settle(&mut sim, 0);
    let s = &sim.states[0];
    assert_balanced(s.ring(), &all);
    assert!(
        s.member_status()
            .iter()
            .all(|r| r.ring_pct == 25.0 && r.pending_pct.is_none())
    );
}

#[test]
fn a_leave_hands_everything_off_then_the_node_exits_and_is_removed() {
    let mut sim = settled_cluster(4, 4, 64);
    sim.apply(&Op::Leave { by: 0, node: 3 }).unwrap();
    let plan = commit(&mut sim);
    assert_eq!(plan.members[&name(3)].status, MemberStatus::Leaving);
    assert!(plan.transfers >= 16);
    assert_eq!(plan.transfers, moved(&plan.ring));
    let rest: Vec<NodeName> = (0..3).map(name).collect();
    assert_balanced(&plan.ring.future(), &rest);
    // Handoff done: the node exits, then the claimant's next round removes it.
    common::report_all(&mut sim);
    sim.sync();
    sim.states[0].apply_transfers(&name(0)).unwrap();
    assert_eq!(
        sim.states[0].members()[&name(3)].status,
        MemberStatus::Exiting
    );
    sim.states[0].apply_transfers(&name(0)).unwrap();
    assert!(!sim.states[0].members().contains_key(&name(3)));
    assert_balanced(sim.states[0].ring(), &rest);
}

#[test]
fn a_replace_moves_exactly_the_replaced_nodes_partitions() {
    let mut sim = settled_cluster(4, 3, 64);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    sim.apply(&Op::Replace {
        by: 0,
        node: 1,
        with: 3,
    })
    .unwrap();
    let before = sim.states[0].ring().clone();
    let plan = commit(&mut sim);
    let owned = before.owned_by(&name(1));
    assert_eq!(plan.transfers, owned.len());
    for p in before.partitions() {
        let expect = if before.owner(p) == &name(1) {
            name(3)
        } else {
            before.owner(p).clone()
        };
        assert_eq!(plan.ring.future_owner(p), &expect);
    }
    assert_eq!(plan.members[&name(1)].status, MemberStatus::Leaving);
    assert_eq!(plan.members[&name(3)].status, MemberStatus::Valid);
    settle(&mut sim, 0);
    assert!(!sim.states[0].members().contains_key(&name(1)));
}

#[test]
fn a_force_replace_changes_owners_at_once_and_warns_of_lost_replicas() {
    let mut sim = settled_cluster(4, 3, 64);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    sim.apply(&Op::ForceReplace {
        by: 0,
        node: 2,
        with: 3,
    })
    .unwrap();
    let before = sim.states[0].ring().clone();
    let plan = commit(&mut sim);
    assert_eq!(plan.lost, vec![name(2)]);
    assert_eq!(plan.transfers, 0);
    assert_eq!(plan.reassigned, before.owned_by(&name(2)).len());
    assert_eq!(plan.ring.owned_by(&name(3)), before.owned_by(&name(2)));
    assert!(!plan.members.contains_key(&name(2)));
}

#[test]
fn a_force_remove_reassigns_the_nodes_partitions_at_once() {
    let mut sim = settled_cluster(4, 4, 64);
    sim.apply(&Op::ForceRemove { by: 0, node: 2 }).unwrap();
    let before = sim.states[0].ring().clone();
    let plan = commit(&mut sim);
    assert_eq!(plan.lost, vec![name(2)]);
    assert_eq!(plan.reassigned, before.owned_by(&name(2)).len());
    assert!(plan.ring.owned_by(&name(2)).is_empty());
    assert!(
        plan.ring
            .pending()
            .all(|t| t.from != name(2) && t.to != name(2))
    );
    let rest: Vec<NodeName> = [0, 1, 3].map(name).to_vec();
    assert_balanced(&plan.ring.future(), &rest);
}

#[test]
fn member_status_shares_add_up() {
    let mut sim = settled_cluster(5, 3, 32);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    sim.apply(&Op::Join { joiner: 4, via: 0 }).unwrap();
    let plan = commit(&mut sim);
    let sum = |f: &dyn Fn(&eddy_cluster::MemberStatusRow) -> f64| -> f64 {
        plan.after.iter().map(f).sum()
    };
    assert!((sum(&|r| r.ring_pct) - 100.0).abs() < 1e-9);
    assert!((sum(&|r| r.pending_pct.unwrap()) - 100.0).abs() < 1e-9);
    assert!(plan.before.iter().all(|r| r.pending_pct.is_none()));
}

/// A staging step of the random test: a change by the claimant.
#[derive(Clone, Debug)]
enum Step {
    Join(usize),
    Leave(usize),
    ForceRemove(usize),
    Replace(usize, usize),
    ForceReplace(usize, usize),
}

fn step(nodes: usize) -> impl Strategy<Value = Step> {
    let n = 0..nodes;
    prop_oneof![
        3 => n.clone().prop_map(Step::Join),
        1 => n.clone().prop_map(Step::Leave),
        1 => n.clone().prop_map(Step::ForceRemove),
        1 => (n.clone(), n.clone()).prop_map(|(a, b)| Step::Replace(a, b)),
        1 => (n.clone(), n.clone()).prop_map(|(a, b)| Step::ForceReplace(a, b)),
    ]
}

/// Stages `s` unless it would move node 0, the claimant of the test.
fn stage(sim: &mut Sim, s: &Step) {
    let op = match *s {
        Step::Leave(0) | Step::ForceRemove(0) | Step::Replace(0, _) | Step::ForceReplace(0, _) => {
            return;
        }
        Step::Join(j) => Op::Join { joiner: j, via: 0 },
        Step::Leave(node) => Op::Leave { by: 0, node },
        Step::ForceRemove(node) => Op::ForceRemove { by: 0, node },
        Step::Replace(node, with) => Op::Replace { by: 0, node, with },
        Step::ForceReplace(node, with) => Op::ForceReplace { by: 0, node, with },
    };
    let _ = sim.apply(&op);
}

fn claiming(s: &ClusterState) -> Vec<NodeName> {
    let m = s
        .members()
        .iter()
        .filter(|(_, m)| m.status == MemberStatus::Valid);
    m.map(|(n, _)| n.clone()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_committed_plan_settles_balanced(
        size_log in 3u32..7,
        start in 1usize..5,
        rounds in prop::collection::vec(prop::collection::vec(step(7), 1..4), 1..4),
    ) {
        let mut sim = settled_cluster(7, start, 1 << size_log);
        for steps in &rounds {
            for s in steps {
                stage(&mut sim, s);
            }
            if sim.states[0].plan(&ClaimParams::default()).is_err() {
                continue;
            }
            let before = sim.states[0].ring().clone();
            let plan = commit(&mut sim);
            prop_assert_eq!(plan.transfers, moved(&plan.ring));
            for p in before.partitions() {
                let kept = plan.members.contains_key(before.owner(p));
                prop_assert_eq!(kept, plan.ring.owner(p) == before.owner(p));
            }
            let members = claiming(&sim.states[0]);
            assert_balanced(&plan.ring.future(), &members);
            settle(&mut sim, 0);
            assert_balanced(sim.states[0].ring(), &members);
            for s in sim.live_members(0) {
                prop_assert_eq!(sim.states[s].digest(), sim.states[0].digest());
            }
        }
    }
}

#[test]
fn a_leaving_claimant_hands_off_exits_and_its_successor_removes_it() {
    let mut sim = settled_cluster(3, 3, 16);
    sim.apply(&Op::Leave { by: 1, node: 0 }).unwrap();
    commit(&mut sim);
    common::report_all(&mut sim);
    sim.sync();
    sim.states[0].apply_transfers(&name(0)).unwrap();
    assert_eq!(
        sim.states[0].members()[&name(0)].status,
        MemberStatus::Exiting
    );
    sim.sync();
    let up = |_: &NodeName| true;
    assert_eq!(
        sim.states[2].claimant(up),
        Some(&name(1)),
        "an exiting node cannot claim"
    );
    sim.take_over(1);
    assert!(sim.states[1].apply_transfers(&name(1)).unwrap());
    assert!(!sim.states[1].members().contains_key(&name(0)));
    assert_balanced(sim.states[1].ring(), &[name(1), name(2)]);
}
