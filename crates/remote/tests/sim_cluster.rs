//! A deterministic cluster simulation: five nodes (simulated disks) whose
//! coordinators and vnodes talk over the simulated network, clients
//! writing, reading and deleting a few keys from every node while
//! partitions come and go and nodes crash and return, then a history
//! checker. One seed replays exactly (current_thread runtime, paused time,
//! seeded network, seeded workload, manual clock, fixed request ids).
//!
//! Checked after everything healed, on the merge of every copy of each key
//! on every vnode (primaries and fallbacks: what hinted handoff hands back):
//! - no write acknowledged with w = quorum is lost: the merge descends it;
//! - no acknowledged write that no other write superseded (wrote with a
//!   context that had seen it; a write that failed may still have been
//!   applied somewhere, so every attempt counts) is missing from the
//!   merge's values: concurrent writes became siblings;
//! - a key whose last write was an acknowledged delete that had seen every
//!   acknowledged write, and none of whose writes failed, stays deleted.

mod sim_support;

use eddy_checker::History;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sim_support::SimCluster;

const NODES: usize = 5;
const KEYS: usize = 6;
const STEPS: usize = 300;

async fn client_step(sim: &SimCluster, rng: &mut StdRng, history: &mut History, step: usize) {
    let key = format!("k{}", rng.random_range(0..KEYS));
    let at = rng.random_range(0..NODES);
    sim.client_op(rng, history, (at, step), key).await;
}

fn fault_step(sim: &SimCluster, rng: &mut StdRng) {
    match rng.random_range(0..4) {
        0 => {
            let cut = rng.random_range(1..NODES);
            let mut order: Vec<usize> = (0..NODES).collect();
            order.sort_by_key(|_| rng.random::<u32>());
            sim.partition(&order[..cut], &order[cut..]);
        }
        1 => sim.heal(),
        2 => sim.crash(rng.random_range(0..NODES)),
        _ => sim.restore_all(),
    }
}

async fn run(seed: u64) -> String {
    let sim = SimCluster::new(seed, NODES).await;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut history = History::default();
    for step in 0..STEPS {
        sim.tick();
        if rng.random_bool(0.08) {
            fault_step(&sim, &mut rng);
        } else {
            client_step(&sim, &mut rng, &mut history, step).await;
        }
    }
    sim.heal();
    sim.restore_all();
    sim.settle().await;
    let mut summary = String::new();
    for k in 0..KEYS {
        let key = format!("k{k}");
        let merged = sim.merged_copies(&key);
        history.check(&key, merged.as_ref());
        let acked = history.acked_count(&key);
        summary.push_str(&format!("{key}:{acked}:{:?};", merged.map(|o| o.vv)));
    }
    summary
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn acknowledged_writes_survive_partitions_and_crashes() {
    for seed in 0..64 {
        let summary = run(seed).await;
        assert!(!summary.is_empty());
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_seed_replays_exactly() {
    assert_eq!(run(42).await, run(42).await);
}
