//! Transfer completions through the service: one reported to a claimant
//! that dies before applying it is applied by the next claimant (the fact
//! travels in the reporter's state, not only in the message).

mod service_support;

use std::time::Duration;

use service_support::{SimCluster, name};

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_completion_the_dead_claimant_missed_is_applied_by_the_next() {
    completion_survives_the_claimant(false).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_completion_the_dead_claimant_received_is_applied_by_the_next() {
    completion_survives_the_claimant(true).await;
}

/// Node 1 reports a transfer finished; the claimant, node 0, dies before
/// applying it, with the report in flight or received (`received_first`).
async fn completion_survives_the_claimant(received_first: bool) {
    let mut cluster = SimCluster::new(31, 3).await;
    cluster.join(1, 0).await;
    cluster.svc(1).commit().await.unwrap();
    cluster.settle_among(&[0, 1], Duration::from_secs(5)).await;
    cluster.complete_transfers(&[0, 1]).await;
    cluster.join(2, 0).await;
    cluster.svc(2).commit().await.unwrap();
    cluster.settle(Duration::from_secs(5)).await;
    assert_eq!(cluster.claimant(1), name(0));
    let ring = cluster.svc(1).ring();
    let t = ring
        .pending()
        .find(|t| t.from == name(1))
        .expect("node 2 takes a partition from node 1");
    let others = ring.pending().count() - 1;
    cluster
        .svc(1)
        .transfer_complete(t.partition, t.from.clone(), t.to.clone())
        .await
        .unwrap();
    if received_first {
        let received = cluster
            .wait_until(Duration::from_secs(1), || {
                !cluster.svc(0).state().transfers_done().is_empty()
            })
            .await;
        assert!(received, "the claimant never got the report");
        let still_pending = cluster.svc(0).ring().next_owner(t.partition) == Some(&t.to);
        assert!(still_pending, "the claimant applied it before it died");
    }
    cluster.crash(0);
    let applied = cluster
        .wait_until(Duration::from_secs(10), || {
            [1, 2].iter().all(|i| {
                let ring = cluster.svc(*i).ring();
                ring.owner(t.partition) == &t.to && ring.next_owner(t.partition).is_none()
            })
        })
        .await;
    assert!(applied, "the next claimant did not apply the completion");
    assert_eq!(cluster.claimant(1), name(1));
    assert_eq!(cluster.svc(2).ring().pending().count(), others);
    let waiting: usize = cluster
        .svc(1)
        .transfers()
        .iter()
        .map(|n| n.waiting.len())
        .sum();
    assert_eq!(waiting, others);
}
