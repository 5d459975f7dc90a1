//! A simulated cluster of membership services for the service tests: one
//! `SimNetwork`, one service per node with its state file in a temporary
//! directory, helpers to join, settle, crash and restart nodes, and a
//! condition wait in virtual time (tests run with paused time, so waits
//! cost nothing and the same seed gives the same run).

#![allow(dead_code)]

#[path = "../common/metadata.rs"]
mod metadata;
#[allow(unused_imports)]
pub use metadata::{active_type, json_of, patch};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use eddy_cluster::{ClusterState, Membership, MembershipConfig, NodeName};
use eddy_net::sim::SimNetwork;
use tokio::time::Instant;

pub const CLUSTER: &str = "test";
pub const RING_SIZE: u32 = 64;

pub fn name(i: usize) -> NodeName {
    NodeName(format!("dev{}@127.0.0.1", i + 1))
}

pub fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 10019 + 10 * u16::try_from(i).unwrap()))
}

pub struct SimCluster {
    pub net: SimNetwork,
    pub dir: tempfile::TempDir,
    pub nodes: Vec<Option<Membership>>,
}

impl SimCluster {
    /// `n` nodes, each a cluster of one, none joined yet.
    pub async fn new(seed: u64, n: usize) -> SimCluster {
        let net = SimNetwork::new(seed);
        let dir = tempfile::tempdir().unwrap();
        let mut cluster = SimCluster {
            net,
            dir,
            nodes: Vec::new(),
        };
        for i in 0..n {
            let transport = cluster.net.add_node(name(i)).unwrap();
            let state = ClusterState::new(CLUSTER, name(i), 1, addr(i).to_string(), RING_SIZE);
            let svc = Membership::start(cluster.config(i), transport, state.unwrap())
                .await
                .unwrap();
            svc.install_handler().unwrap();
            cluster.nodes.push(Some(svc));
        }
        cluster
    }

    pub fn state_path(&self, i: usize) -> PathBuf {
        self.dir
            .path()
            .join(format!("dev{}", i + 1))
            .join("cluster.json")
    }

    /// Node `i`'s settings: saves on the calling task, so that a seed
    /// replays exactly.
    pub fn config(&self, i: usize) -> MembershipConfig {
        let mut config = MembershipConfig::new(self.state_path(i));
        config.blocking_inline = true;
        config
    }

    pub fn svc(&self, i: usize) -> &Membership {
        self.nodes[i].as_ref().expect("node is running")
    }

    pub fn live(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|i| self.nodes[*i].is_some())
            .collect()
    }

    /// Node `i` joins node `target`'s cluster.
    pub async fn join(&self, i: usize, target: usize) {
        self.svc(i).join(name(target), addr(target)).await.unwrap();
    }

    /// Nodes 1.. join one by one, each through the node before it (from
    /// node 2 on, a member that is not the claimant), with plan and commit
    /// from the joining node and every transfer completed, settling
    /// between.
    pub async fn join_all(&self) {
        for i in 1..self.nodes.len() {
            self.join(i, i - 1).await;
            let plan = self.svc(i).plan().await.unwrap();
            assert_eq!(plan.changes.len(), 1);
            self.svc(i).commit().await.unwrap();
            let joined: Vec<usize> = (0..=i).collect();
            self.settle_among(&joined, Duration::from_secs(10)).await;
            self.complete_transfers(&joined).await;
        }
    }

    /// Reports every pending transfer finished, from its sender, and waits
    /// until the ring is settled on every live node.
    pub async fn complete_transfers(&self, nodes: &[usize]) {
        let ring = self.svc(nodes[0]).ring();
        for t in ring.pending() {
            let from = self.index(&t.from);
            self.svc(from)
                .transfer_complete(t.partition, t.from.clone(), t.to.clone())
                .await
                .unwrap();
        }
        let settled = self
            .wait_until(Duration::from_secs(10), || {
                nodes.iter().all(|i| self.svc(*i).ring().is_settled())
            })
            .await;
        assert!(settled, "transfers were not applied");
        self.settle_among(nodes, Duration::from_secs(10)).await;
    }

    pub fn index(&self, node: &NodeName) -> usize {
        (0..self.nodes.len()).find(|i| name(*i) == *node).unwrap()
    }

    /// Waits until every live node holds the same state; panics after
    /// `limit` of virtual time.
    pub async fn settle(&self, limit: Duration) {
        self.settle_among(&self.live(), limit).await;
    }

    /// Waits until `nodes` hold the same state; panics after `limit`.
    pub async fn settle_among(&self, nodes: &[usize], limit: Duration) {
        let same = self.wait_until(limit, || self.converged(nodes)).await;
        if !same {
            for &i in nodes {
                let s = self.svc(i).state();
                eprintln!("node {i}: {}", serde_json::to_string(&s).unwrap());
            }
        }
        assert!(same, "states did not converge: {:?}", self.digests());
    }

    pub fn converged(&self, nodes: &[usize]) -> bool {
        let digests: Vec<u128> = nodes
            .iter()
            .map(|i| self.svc(*i).state().digest())
            .collect();
        digests.windows(2).all(|w| w[0] == w[1])
    }

    pub fn digests(&self) -> Vec<Option<u128>> {
        let digest = |n: &Option<Membership>| n.as_ref().map(|s| s.state().digest());
        self.nodes.iter().map(digest).collect()
    }

    /// Waits in virtual time until `cond` holds; false after `limit`.
    pub async fn wait_until(&self, limit: Duration, cond: impl Fn() -> bool) -> bool {
        let end = Instant::now() + limit;
        loop {
            if cond() {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Kills node `i`: its service stops and its links are cut.
    pub fn crash(&mut self, i: usize) {
        if let Some(svc) = self.nodes[i].take() {
            svc.shutdown();
        }
        self.net.crash(&name(i)).unwrap();
    }

    /// Restarts node `i` as a new process from its saved state.
    pub async fn restart(&mut self, i: usize) {
        let transport = self.net.restart(&name(i)).unwrap();
        let state = ClusterState::load(&self.state_path(i)).unwrap().unwrap();
        let svc = Membership::start(self.config(i), transport, state)
            .await
            .unwrap();
        svc.install_handler().unwrap();
        self.nodes[i] = Some(svc);
    }

    /// The claimant as node `i` records it.
    pub fn claimant(&self, i: usize) -> NodeName {
        self.svc(i).state().ring_state().claimant.clone()
    }
}
