//! Failure detection and its consequences over a simulated network, in
//! virtual time: a killed node is down for every other within 2 s and a
//! killed claimant is succeeded; a partitioned node is down by timeout on
//! both sides and up again once the partition heals; a restarted node is
//! up again promptly; writes on both sides of a partition converge after
//! it heals; liveness never changes the ring.

mod service_support;

use std::time::Duration;

use eddy_cluster::{MemberStatus, MembershipError, StageError};
use eddy_net::sim::LinkFaults;
use serde_json::json;
use service_support::{SimCluster, active_type, json_of, name, patch};
use tokio::time::Instant;

const DETECTION_LIMIT: Duration = Duration::from_secs(2);

/// Waits until every node of `observers` sees `node` as `up`; the time it
/// took.
async fn time_until_seen(
    cluster: &SimCluster,
    observers: &[usize],
    node: usize,
    up: bool,
) -> Option<Duration> {
    let start = Instant::now();
    let seen = cluster
        .wait_until(Duration::from_secs(10), || {
            observers
                .iter()
                .all(|o| cluster.svc(*o).is_up(&name(node)) == up)
        })
        .await;
    seen.then(|| start.elapsed())
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_killed_claimant_is_detected_and_succeeded() {
    let mut cluster = SimCluster::new(21, 4).await;
    cluster.join_all().await;
    assert_eq!(cluster.claimant(1), name(0));
    let ring = cluster.svc(1).ring();
    cluster.crash(0);
    let took = time_until_seen(&cluster, &[1, 2, 3], 0, false).await;
    let took = took.expect("the killed node was never seen down");
    assert!(took <= DETECTION_LIMIT, "detected after {took:?}");
    let moved = cluster
        .wait_until(Duration::from_secs(5), || {
            [1, 2, 3].iter().all(|i| cluster.claimant(*i) == name(1))
        })
        .await;
    assert!(moved, "the claimant did not move to {}", name(1));
    for i in 1..4 {
        assert_eq!(*cluster.svc(i).ring(), *ring, "liveness changed the ring");
        let status = cluster.svc(i).state().members()[&name(0)].status;
        assert_eq!(status, MemberStatus::Valid);
        assert_eq!(cluster.svc(i).ring_status().unreachable, vec![name(0)]);
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_partitioned_node_is_down_by_timeout_and_up_after_the_heal() {
    let cluster = SimCluster::new(22, 4).await;
    cluster.join_all().await;
    let majority = [name(0), name(1), name(2)];
    cluster.net.partition(&majority, &[name(3)]);
    let took = time_until_seen(&cluster, &[0, 1, 2], 3, false).await;
    let took = took.expect("the partitioned node was never seen down");
    assert!(took <= DETECTION_LIMIT, "detected after {took:?}");
    let alone = cluster
        .wait_until(DETECTION_LIMIT, || {
            (0..3).all(|i| !cluster.svc(3).is_up(&name(i)))
        })
        .await;
    assert!(alone, "the partitioned node still sees the others up");
    cluster.net.heal();
    let took = time_until_seen(&cluster, &[0, 1, 2], 3, true).await;
    let took = took.expect("the node never came back up");
    assert!(took <= Duration::from_secs(1), "up again after {took:?}");
    let back = cluster
        .wait_until(Duration::from_secs(1), || {
            (0..3).all(|i| cluster.svc(3).is_up(&name(i)))
        })
        .await;
    assert!(back);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_restarted_node_is_up_again_and_marked_down_only_by_an_operator() {
    let mut cluster = SimCluster::new(23, 3).await;
    cluster.join_all().await;
    cluster.crash(2);
    let took = time_until_seen(&cluster, &[0, 1], 2, false).await;
    assert!(took.is_some_and(|t| t <= DETECTION_LIMIT));
    cluster.svc(1).down(name(2)).await.unwrap();
    cluster.settle(Duration::from_secs(5)).await;
    let status = |c: &SimCluster, i: usize| c.svc(i).state().members()[&name(2)].status;
    assert_eq!(status(&cluster, 0), MemberStatus::Down);
    assert_eq!(status(&cluster, 1), MemberStatus::Down);
    cluster.restart(2).await;
    let took = time_until_seen(&cluster, &[0, 1], 2, true).await;
    assert!(
        took.is_some_and(|t| t <= Duration::from_secs(1)),
        "{took:?}"
    );
    let valid = cluster
        .wait_until(Duration::from_secs(5), || {
            (0..3).all(|i| status(&cluster, i) == MemberStatus::Valid)
                && cluster.converged(&[0, 1, 2])
        })
        .await;
    assert!(valid, "the restarted node is not valid again everywhere");
    let refused = cluster.svc(0).down(name(2)).await;
    assert!(
        matches!(refused, Err(MembershipError::Stage(StageError::IsUp(ref n))) if *n == name(2)),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn writes_on_both_sides_of_a_partition_converge_after_the_heal() {
    let cluster = SimCluster::new(24, 5).await;
    cluster.join_all().await;
    let (a, b) = ([name(0), name(1)], [name(2), name(3), name(4)]);
    cluster.net.partition(&a, &b);
    let split = cluster
        .wait_until(DETECTION_LIMIT, || !cluster.svc(0).is_up(&name(4)))
        .await;
    assert!(split);
    let left = cluster
        .svc(1)
        .set_bucket_props("default", "left", patch(json!({"n_val": 2})))
        .await
        .unwrap();
    assert_eq!(left.acked, vec![name(0)]);
    assert_eq!(left.missing, b.to_vec());
    let right = cluster
        .svc(3)
        .set_bucket_type("maps", active_type(json!({"datatype": "map"})));
    let right = right.await.unwrap();
    assert_eq!(right.missing, a.to_vec());
    cluster.net.heal();
    cluster.settle(Duration::from_secs(10)).await;
    for i in 0..5 {
        let state = cluster.svc(i).state();
        let props = &state.metadata().bucket_props["default"]["left"].props;
        assert_eq!(json_of(props), json!({"n_val": 2}));
        assert_eq!(
            json_of(&state.metadata().bucket_types["maps"].props.patch),
            json!({"datatype": "map"})
        );
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn gossip_converges_over_lossy_reordering_links() {
    for seed in 0..4 {
        let cluster = SimCluster::new(100 + seed, 4).await;
        cluster.join_all().await;
        cluster.net.set_default_faults(LinkFaults {
            drop_probability: 0.3,
            delay_min: Duration::from_millis(1),
            delay_max: Duration::from_millis(40),
        });
        for i in 0..4 {
            let bucket = format!("b{i}");
            let props = json!({ "n_val": i + 1 });
            // Pushes may miss members here; gossip must make up for it.
            cluster
                .svc(i)
                .set_bucket_props("default", &bucket, patch(props))
                .await
                .unwrap();
        }
        cluster.settle(Duration::from_secs(30)).await;
        let state = cluster.svc(0).state();
        let props = &state.metadata().bucket_props["default"];
        for i in 0..4 {
            let n_val = json_of(&props[&format!("b{i}")].props)["n_val"].clone();
            assert_eq!(n_val, i + 1, "seed {seed}");
        }
    }
}
