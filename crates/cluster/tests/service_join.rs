//! Membership services over a simulated network: nodes join one by one
//! (join, plan, commit from the joining node), transfers complete, and
//! every node ends with the same state; a member leaves and, once its
//! partitions are handed off, is removed and becomes a cluster of one.

mod service_support;

use std::time::Duration;

use eddy_cluster::{Change, MemberStatus};
use service_support::{SimCluster, name};

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn nodes_join_one_by_one_and_converge() {
    for n in 3..=5 {
        let cluster = SimCluster::new(n as u64, n).await;
        cluster.join_all().await;
        let state = cluster.svc(0).state();
        assert_eq!(state.members().len(), n);
        assert!(
            state
                .members()
                .values()
                .all(|m| m.status == MemberStatus::Valid)
        );
        let ring = state.ring();
        assert!(ring.is_settled());
        for i in 0..n {
            let owned = ring.owned_by(&name(i)).len();
            let mean = ring.size() as usize / n;
            assert!(
                owned.abs_diff(mean) <= 1,
                "node {i} owns {owned} of {}",
                ring.size()
            );
        }
        assert!(cluster.converged(&cluster.live()));
        for i in 0..n {
            assert_eq!(*cluster.svc(i).ring(), *ring, "node {i}'s ring watch");
            assert!((0..n).all(|j| cluster.svc(i).is_up(&name(j))));
        }
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_ring_watch_sees_each_committed_ring() {
    let cluster = SimCluster::new(7, 2).await;
    let mut watch = cluster.svc(1).ring_watch();
    cluster.join(1, 0).await;
    let plan = cluster.svc(0).plan().await.unwrap();
    assert_eq!(plan.changes, vec![Change::Join { node: name(1) }]);
    let committed = cluster.svc(0).commit().await.unwrap();
    assert_eq!(committed.ring, plan.ring);
    let changed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            watch.changed().await.unwrap();
            if *watch.borrow_and_update().as_ref() == plan.ring {
                return;
            }
        }
    });
    changed.await.expect("node 1 saw the committed ring");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_member_leaves_hands_off_and_is_removed() {
    leave_and_check(2).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_claimant_leaves_and_its_successor_removes_it() {
    leave_and_check(0).await;
}

/// Node `leaver` of four leaves (staged from node 3, committed from node
/// 1); once its transfers are done it is removed everywhere and becomes a
/// cluster of one.
async fn leave_and_check(leaver: usize) {
    let cluster = SimCluster::new(11, 4).await;
    cluster.join_all().await;
    cluster.svc(3).leave(Some(name(leaver))).await.unwrap();
    let plan = cluster.svc(1).plan().await.unwrap();
    assert_eq!(plan.changes, vec![Change::Leave { node: name(leaver) }]);
    cluster.svc(1).commit().await.unwrap();
    cluster.settle(Duration::from_secs(10)).await;
    let state = cluster.svc(0).state();
    assert_eq!(state.members()[&name(leaver)].status, MemberStatus::Leaving);
    assert!(state.ring().future().owned_by(&name(leaver)).is_empty());
    let others: Vec<usize> = (0..4).filter(|i| *i != leaver).collect();
    cluster.complete_transfers(&others).await;
    let removed = cluster
        .wait_until(Duration::from_secs(10), || {
            others.iter().all(|i| {
                let s = cluster.svc(*i).state();
                !s.members().contains_key(&name(leaver)) && cluster.converged(&others)
            })
        })
        .await;
    assert!(
        removed,
        "the leaver was not removed: {:?}",
        cluster.svc(others[0]).member_status()
    );
    let left = cluster.wait_until(Duration::from_secs(10), || {
        cluster.svc(leaver).state().members().len() == 1
    });
    assert!(left.await, "the leaver did not become a cluster of one");
    let alone = cluster.svc(leaver).state();
    assert!(alone.ring().owners().iter().all(|o| *o == name(leaver)));
    assert_eq!(alone.members()[&name(leaver)].incarnation, 2);
    assert_eq!(cluster.svc(others[0]).state().members().len(), 3);
}

/// Joins three nodes and returns the network's trace.
async fn traced_run(seed: u64) -> Vec<eddy_net::sim::TraceEvent> {
    let cluster = SimCluster::new(seed, 3).await;
    cluster.join_all().await;
    cluster.net.trace()
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let run = |seed| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(traced_run(seed))
    };
    let first = run(5);
    assert!(first.len() > 100);
    assert_eq!(first, run(5));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_replacement_takes_exactly_the_replaced_nodes_partitions() {
    for forced in [false, true] {
        let cluster = SimCluster::new(61, 4).await;
        let three = [0, 1, 2];
        for i in 1..3 {
            cluster.join(i, 0).await;
            cluster.svc(i).commit().await.unwrap();
            cluster
                .settle_among(&three[..=i], Duration::from_secs(5))
                .await;
            cluster.complete_transfers(&three[..=i]).await;
        }
        let (old, new) = (name(1), name(3));
        let owned = cluster.svc(0).ring().owned_by(&old);
        cluster.join(3, 2).await;
        let asker = cluster.svc(2);
        if forced {
            asker.force_replace(old.clone(), new.clone()).await.unwrap();
        } else {
            asker.replace(old.clone(), new.clone()).await.unwrap();
        }
        let plan = asker.plan().await.unwrap();
        assert_eq!(plan.changes.len(), 2, "{:?}", plan.changes);
        assert_eq!(plan.lost, if forced { vec![old.clone()] } else { vec![] });
        asker.commit().await.unwrap();
        let rest = [0, 2, 3];
        cluster.settle_among(&rest, Duration::from_secs(5)).await;
        if !forced {
            cluster.complete_transfers(&rest).await;
        }
        let gone = cluster
            .wait_until(Duration::from_secs(10), || {
                rest.iter()
                    .all(|i| !cluster.svc(*i).state().members().contains_key(&old))
                    && cluster.converged(&rest)
            })
            .await;
        assert!(gone, "{old} is still a member (forced: {forced})");
        let ring = cluster.svc(3).ring();
        assert!(ring.is_settled());
        assert_eq!(ring.owned_by(&new), owned, "forced: {forced}");
    }
}
