//! Completed-transfer facts: they complete only the plan they were
//! reported under, and they are kept until the epoch outlives them.

mod common;

use common::{Op, name, report_all, settle, settled_cluster, single};
use eddy_cluster::{FACT_EPOCHS_KEPT, Partition};

#[test]
fn a_fact_from_an_older_plan_of_the_same_move_completes_nothing() {
    let mut sim = settled_cluster(4, 3, 16);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    sim.sync();
    // Every transfer to node 3 is reported, but node 3 leaves (and wipes
    // its disk) before the claimant applies any of them.
    report_all(&mut sim);
    sim.sync();
    let stale: Vec<_> = sim.states[0].transfers_done().iter().cloned().collect();
    assert!(!stale.is_empty());
    sim.apply(&Op::Leave { by: 0, node: 3 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    settle(&mut sim, 0);
    assert!(!sim.states[0].members().contains_key(&name(3)));

    // The same node name joins again, and the same moves are planned.
    sim.states[3] = single(3, 16);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    sim.sync();
    let s = &sim.states[0];
    let replanned: Vec<Partition> = s
        .ring()
        .pending()
        .filter(|t| {
            stale
                .iter()
                .any(|f| (f.partition, &f.from, &f.to) == (t.partition, &t.from, &t.to))
        })
        .map(|t| t.partition)
        .collect();
    assert!(!replanned.is_empty(), "the test needs a move planned twice");
    assert!(
        s.transfers_done()
            .iter()
            .any(|f| replanned.contains(&f.partition))
    );
    sim.states[0].apply_transfers(&name(0)).unwrap();
    for p in replanned {
        assert!(
            sim.states[0].ring().next_owner(p).is_some(),
            "{p} still waits for its handoff"
        );
    }
}

#[test]
fn facts_are_forgotten_once_the_epoch_outlives_them() {
    let mut sim = settled_cluster(3, 2, 16);
    sim.apply(&Op::Join { joiner: 2, via: 0 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    sim.sync();
    sim.apply(&Op::Complete { k: 0 }).unwrap();
    sim.sync();
    let s = &sim.states[0];
    let reported = s.transfers_reported();
    assert_eq!(reported.len(), 1);
    let t = &reported[0];
    let same = |f: &&eddy_cluster::TransferFact| {
        (f.partition, &f.from, &f.to) == (t.partition, &t.from, &t.to)
    };
    let fact = s.transfers_done().iter().find(same).unwrap().clone();
    // Epochs go by (each clear of a join bumps it twice).
    let me = name(0);
    while sim.states[0].epoch() <= fact.epoch + FACT_EPOCHS_KEPT {
        assert!(sim.states[0].transfers_done().contains(&fact));
        sim.states[0].take_over(&me, |_| true);
        let m = common::member(4);
        sim.states[0].join(&me, &common::name(4), m).unwrap();
        sim.states[0].clear(&me).unwrap();
    }
    assert!(!sim.states[0].transfers_done().contains(&fact));
    // A sender whose transfer is still pending reports it again.
    sim.sync();
    let t = sim.states[0]
        .transfers_waiting()
        .into_iter()
        .find(|t| t.partition == fact.partition);
    let t = t.expect("the forgotten transfer waits again");
    let sender = (0..3).find(|i| name(*i) == t.from).unwrap();
    assert!(
        sim.states[sender]
            .transfer_complete(t.partition, &t.from, &t.to)
            .unwrap()
    );
}
