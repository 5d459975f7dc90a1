//! Three membership services over real TCP transports on loopback: two
//! nodes join the first, a commit gives them partitions, transfers are
//! reported, and all three converge on one state; a node whose transport
//! is shut down is seen down by the others.

use std::time::Duration;

use eddy_cluster::{ClusterState, Membership, MembershipConfig, NodeName};
use eddy_net::{NetConfig, Transport};

const CLUSTER: &str = "tcp-test";

fn name(i: usize) -> NodeName {
    NodeName(format!("dev{}@127.0.0.1", i + 1))
}

async fn start(i: usize, dir: &std::path::Path) -> (Membership, Transport) {
    let config = NetConfig {
        cluster_name: CLUSTER.into(),
        ..NetConfig::default()
    };
    let listen = "127.0.0.1:0".parse().unwrap();
    let transport = Transport::tcp(name(i), listen, config).await.unwrap();
    let address = transport.listen_addr().unwrap().to_string();
    let state = ClusterState::new(CLUSTER, name(i), 1, address, 64).unwrap();
    let path = dir.join(format!("dev{}", i + 1)).join("cluster.json");
    let svc = Membership::start(MembershipConfig::new(path), transport.clone(), state)
        .await
        .unwrap();
    svc.install_handler().unwrap();
    (svc, transport)
}

/// Polls `cond` every 10 ms until it holds or `limit` passes.
async fn eventually(limit: Duration, cond: impl Fn() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

fn converged(nodes: &[&Membership]) -> bool {
    let digests: Vec<u128> = nodes.iter().map(|n| n.state().digest()).collect();
    digests.windows(2).all(|w| w[0] == w[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_join_commit_and_converge_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = Vec::new();
    for i in 0..3 {
        nodes.push(start(i, dir.path()).await);
    }
    let first = nodes[0].1.listen_addr().unwrap();
    nodes[1].0.join(name(0), first).await.unwrap();
    nodes[2].0.join(name(0), first).await.unwrap();
    let plan = nodes[2].0.plan().await.unwrap();
    assert_eq!(plan.changes.len(), 2);
    nodes[1].0.commit().await.unwrap();
    let all: Vec<&Membership> = nodes.iter().map(|(s, _)| s).collect();
    assert!(eventually(Duration::from_secs(10), || converged(&all)).await);

    let ring = all[0].ring();
    assert_eq!(ring.pending().count(), plan.transfers);
    for t in ring.pending() {
        let sender = all.iter().find(|s| *s.node() == t.from).unwrap();
        sender
            .transfer_complete(t.partition, t.from.clone(), t.to.clone())
            .await
            .unwrap();
    }
    let settled = eventually(Duration::from_secs(10), || {
        converged(&all) && all[0].ring().is_settled()
    });
    assert!(
        settled.await,
        "transfers were not applied: {:?}",
        all[0].transfers()
    );
    let ring = all[2].ring();
    for (i, svc) in all.iter().enumerate() {
        assert!(!ring.owned_by(&name(i)).is_empty());
        assert_eq!(svc.member_status().len(), 3);
    }
    assert_eq!(all[1].ringready().await, Ok(()));

    nodes[2].0.shutdown();
    nodes[2].1.shutdown();
    let down = eventually(Duration::from_secs(5), || {
        !all[0].is_up(&name(2)) && !all[1].is_up(&name(2))
    });
    assert!(down.await, "the stopped node was not seen down");
    for (svc, transport) in &nodes {
        svc.shutdown();
        transport.shutdown();
    }
}
