//! A simulated cluster for the tests: several nodes, each with its own
//! `ClusterState`, a liveness view, and operations that each node applies
//! to its own state as the real driver would (the claimant's operations
//! run on the node its own state names claimant), plus gossip between two
//! nodes. Every operation is deterministic; errors are returned, so
//! random sequences simply skip what a node refuses.

#![allow(dead_code)]

use eddy_cluster::{ClaimParams, ClusterState, Member, MemberStatus, NodeName, Partition};

pub const CLUSTER: &str = "test";

#[path = "metadata.rs"]
mod metadata;
mod ops;
#[allow(unused_imports)]
pub use metadata::{active_type, json_of, patch};

#[allow(unused_imports)]
pub use ops::{Op, op};

pub fn name(i: usize) -> NodeName {
    NodeName(format!("dev{}@127.0.0.1", i + 1))
}

pub fn member(i: usize) -> Member {
    Member::new(
        MemberStatus::Joining,
        1,
        format!("127.0.0.1:{}", 10019 + 10 * i),
    )
}

/// A fresh node's state: a cluster of one.
pub fn single(i: usize, ring_size: u32) -> ClusterState {
    let m = member(i);
    ClusterState::new(CLUSTER, name(i), m.incarnation, m.address, ring_size).unwrap()
}

/// The simulated nodes.
pub struct Sim {
    pub states: Vec<ClusterState>,
    pub saved: Vec<ClusterState>,
    pub up: Vec<bool>,
    pub params: ClaimParams,
    pub now_ms: u64,
}

impl Sim {
    /// `nodes` fresh nodes, each a cluster of one.
    pub fn new(nodes: usize, ring_size: u32) -> Sim {
        let states: Vec<ClusterState> = (0..nodes).map(|i| single(i, ring_size)).collect();
        Sim {
            saved: states.clone(),
            states,
            up: vec![true; nodes],
            params: ClaimParams::default(),
            now_ms: 1_000,
        }
    }

    pub fn is_up(&self) -> impl Fn(&NodeName) -> bool + '_ {
        |n: &NodeName| (0..self.up.len()).any(|i| name(i) == *n && self.up[i])
    }

    /// The epoch each node holds, as the ring-ready rule asks; `None` for
    /// nodes that are down.
    pub fn peer_epoch(&self) -> impl Fn(&NodeName) -> Option<u64> + '_ {
        |n: &NodeName| {
            let i = (0..self.up.len()).find(|i| name(*i) == *n)?;
            self.up[i].then(|| self.states[i].epoch())
        }
    }

    /// `to` receives `from`'s state, as the gossip driver would: a node
    /// that was admitted adopts the cluster's state, members merge, and
    /// a node sends only to the members it knows.
    pub fn gossip(&mut self, from: usize, to: usize) -> Result<(), String> {
        if from == to || !self.up[from] || !self.up[to] {
            return Err("down".into());
        }
        if !self.states[from].members().contains_key(&name(to)) {
            return Err("not a member".into());
        }
        let sent = self.states[from].clone();
        let receiver = &mut self.states[to];
        if receiver.adopt(&name(to), &sent).is_err() {
            receiver.merge(&sent);
        }
        Ok(())
    }

    /// Node `c` takes over as claimant if its state says it should, as the
    /// driver does before any claimant work.
    pub fn take_over(&mut self, c: usize) {
        let up = self.up.clone();
        let is_up = move |n: &NodeName| (0..up.len()).any(|i| name(i) == *n && up[i]);
        self.states[c].take_over(&name(c), is_up);
    }

    /// The index of the claimant as node `by` sees it, if up.
    pub fn claimant_of(&self, by: usize) -> Result<usize, String> {
        if !self.up[by] {
            return Err("down".into());
        }
        let c = self.states[by]
            .claimant(self.is_up())
            .ok_or("no claimant")?;
        let i = (0..self.up.len())
            .find(|i| name(*i) == *c)
            .ok_or("unknown")?;
        Ok(i)
    }

    /// Gossip between every pair of up nodes, in index order, until no
    /// state changes.
    pub fn sync(&mut self) -> usize {
        let n = self.up.len();
        let order: Vec<(usize, usize)> = (0..n).flat_map(|a| (0..n).map(move |b| (a, b))).collect();
        self.settle_gossip(&order)
    }

    /// Every up node gossips with every other up member, in the given
    /// order, until no state changes. Returns the rounds it took.
    pub fn settle_gossip(&mut self, order: &[(usize, usize)]) -> usize {
        for round in 1..=64 {
            let before: Vec<u128> = self.states.iter().map(ClusterState::digest).collect();
            for &(from, to) in order {
                let _ = self.gossip(from, to);
            }
            let after: Vec<u128> = self.states.iter().map(ClusterState::digest).collect();
            if before == after {
                return round;
            }
        }
        panic!("gossip did not settle in 64 rounds");
    }

    /// The nodes that are up and members of node `of`'s cluster.
    pub fn live_members(&self, of: usize) -> Vec<usize> {
        (0..self.up.len())
            .filter(|&i| self.up[i] && self.states[of].members().contains_key(&name(i)))
            .collect()
    }

    /// Partition count of a ring owned by `node`.
    pub fn owned(&self, of: usize, node: usize) -> usize {
        self.states[of].ring().owned_by(&name(node)).len()
    }
}

/// Every pending transfer is reported by its sender (in the sender's own
/// state) — what handoff does once the receivers made the data durable.
pub fn report_all(sim: &mut Sim) {
    for i in 0..sim.states.len() {
        if !sim.up[i] {
            continue;
        }
        let waiting = sim.states[i].transfers_waiting();
        for t in waiting.into_iter().filter(|t| t.from == name(i)) {
            sim.states[i]
                .transfer_complete(t.partition, &t.from, &t.to)
                .unwrap();
        }
    }
}

pub fn partition(p: u32) -> Partition {
    Partition(p)
}

/// A settled cluster of `n` nodes (node 0 the claimant), built the way an
/// operator does: joins through node 0, plan, commit, handoff reported,
/// the claimant's rounds, gossip until every node agrees.
pub fn settled_cluster(nodes: usize, members: usize, ring_size: u32) -> Sim {
    let mut sim = Sim::new(nodes, ring_size);
    for j in 1..members {
        sim.apply(&Op::Join { joiner: j, via: 0 }).unwrap();
    }
    sim.sync();
    if members > 1 {
        sim.apply(&Op::Commit { by: 0 }).unwrap();
    }
    settle(&mut sim, 0);
    sim
}

/// Reports every transfer, lets claimant `c` apply them, and gossips,
/// until the ring is settled and every node agrees.
pub fn settle(sim: &mut Sim, c: usize) {
    for _ in 0..16 {
        sim.sync();
        report_all(sim);
        sim.sync();
        sim.take_over(c);
        sim.states[c].apply_transfers(&name(c)).unwrap();
        sim.sync();
        let settled = sim.states[c].ring().is_settled();
        let exiting = sim.states[c]
            .members()
            .values()
            .any(|m| m.status == MemberStatus::Exiting);
        if settled && !exiting {
            return;
        }
    }
    panic!("the ring did not settle");
}
