//! Every admin refusal comes back through the service, as the same typed
//! error with Riak's wording, whether the claimant or the asked node
//! refused: joining itself or from a cluster, an empty plan, the last
//! node, unknown nodes, the claimant forced out, a bad replacement, a
//! commit while a member is unreachable, an unknown transfer.

mod service_support;

use std::time::Duration;

use eddy_cluster::{CommitError, MembershipError, StageError, TransferError};
use eddy_ring::Partition;
use service_support::{SimCluster, addr, name};

fn stage(r: Result<(), MembershipError>) -> StageError {
    match r {
        Err(MembershipError::Stage(e)) => e,
        other => panic!("expected a staging refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_single_node_refuses_what_riak_refuses() {
    let cluster = SimCluster::new(51, 1).await;
    let svc = cluster.svc(0);
    let e = stage(svc.join(name(0), addr(0)).await);
    assert_eq!(e, StageError::JoinSelf(name(0)));
    assert_eq!(
        e.to_string(),
        "Failed: dev1@127.0.0.1 cannot join itself in a cluster"
    );
    assert_eq!(
        stage(svc.leave(None).await),
        StageError::OnlyMember(name(0))
    );
    let plan = svc.plan().await.err();
    assert!(matches!(
        plan,
        Some(MembershipError::Commit(CommitError::EmptyPlan))
    ));
    let commit = svc.commit().await.err().unwrap();
    assert_eq!(
        commit.to_string(),
        "Failed: there are no staged changes to commit"
    );
    let unknown = name(9);
    let e = stage(svc.force_remove(unknown.clone()).await);
    assert_eq!(e, StageError::NotMember(unknown.clone()));
    assert_eq!(
        stage(svc.leave(Some(unknown.clone())).await),
        StageError::NotMember(unknown.clone())
    );
    assert_eq!(
        stage(svc.down(unknown.clone()).await),
        StageError::NotMember(unknown.clone())
    );
    let limit = svc.transfer_limit(Some(unknown.clone()), 4).await.err();
    assert!(matches!(
        limit,
        Some(MembershipError::Stage(StageError::NotMember(_)))
    ));
    let t = svc.transfer_complete(Partition(0), name(0), unknown).await;
    assert!(matches!(
        t,
        Err(MembershipError::Transfer(TransferError::NotPending { .. }))
    ));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn refusals_made_by_the_claimant_reach_the_asking_node() {
    let mut cluster = SimCluster::new(52, 4).await;
    cluster.join(1, 0).await;
    cluster.join(2, 0).await;
    cluster.svc(2).commit().await.unwrap();
    cluster
        .settle_among(&[0, 1, 2], Duration::from_secs(5))
        .await;
    cluster.complete_transfers(&[0, 1, 2]).await;
    let asker = cluster.svc(2);
    let e = stage(asker.join(name(3), addr(3)).await);
    assert_eq!(e, StageError::AlreadyInCluster(name(2)));
    let plan = asker.plan().await.err();
    assert!(matches!(
        plan,
        Some(MembershipError::Commit(CommitError::EmptyPlan))
    ));
    assert_eq!(
        stage(asker.force_remove(name(0)).await),
        StageError::IsClaimant(name(0))
    );
    let e = stage(asker.replace(name(1), name(2)).await);
    assert_eq!(e, StageError::InvalidReplacement(name(2)));
    assert_eq!(stage(asker.down(name(1)).await), StageError::IsUp(name(1)));
    assert_eq!(
        stage(asker.force_remove(name(7)).await),
        StageError::NotMember(name(7))
    );

    asker.leave(Some(name(1))).await.unwrap();
    let e = stage(asker.leave(Some(name(1))).await);
    assert_eq!(e, StageError::AlreadyStaged(name(1)));
    cluster.crash(1);
    let down = cluster
        .wait_until(Duration::from_secs(2), || !cluster.svc(2).is_up(&name(1)))
        .await;
    assert!(down);
    let commit = cluster.svc(2).commit().await.err();
    let waiting = match commit {
        Some(MembershipError::Commit(CommitError::RingNotReady { waiting })) => waiting,
        other => panic!("expected ring-not-ready, got {other:?}"),
    };
    assert_eq!(waiting, vec![name(1)]);
    assert_eq!(cluster.svc(2).ringready().await, Err(vec![name(1)]));
    cluster.svc(0).clear().await.unwrap();
    let plan = cluster.svc(2).plan().await.err();
    assert!(matches!(
        plan,
        Some(MembershipError::Commit(CommitError::EmptyPlan))
    ));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_join_through_an_unreachable_node_fails_and_changes_nothing() {
    let cluster = SimCluster::new(53, 2).await;
    cluster.net.crash(&name(1)).unwrap();
    let before = cluster.svc(0).state();
    let e = cluster.svc(0).join(name(1), addr(1)).await.err();
    assert!(
        matches!(e, Some(MembershipError::Unreachable { ref node, .. }) if *node == name(1)),
        "{e:?}"
    );
    assert_eq!(cluster.svc(0).state(), before);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn transfer_limits_are_set_per_node_or_everywhere() {
    let cluster = SimCluster::new(54, 3).await;
    cluster.join_all().await;
    let watches: Vec<_> = (0..3)
        .map(|i| cluster.svc(i).transfer_limit_watch())
        .collect();
    assert!(watches.iter().all(|w| *w.borrow() == 2));
    let report = cluster
        .svc(1)
        .transfer_limit(Some(name(2)), 5)
        .await
        .unwrap();
    assert_eq!(report.acked, vec![name(2)]);
    let limits: Vec<u32> = watches.iter().map(|w| *w.borrow()).collect();
    assert_eq!(limits, vec![2, 2, 5]);
    let report = cluster.svc(0).transfer_limit(None, 8).await.unwrap();
    assert!(report.is_complete());
    assert!(watches.iter().all(|w| *w.borrow() == 8));
}
