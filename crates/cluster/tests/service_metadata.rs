//! Bucket metadata through the service: a write on any node is saved on
//! every reachable member before it returns (the report names who has not
//! acked), reaches a member that was down once it is back, and shows in
//! every node's metadata watch; a member's applier has it before the
//! member acks.

mod service_support;

use std::time::Duration;

use eddy_cluster::ClusterState;
use eddy_model::types::TypeStatus;
use serde_json::json;
use service_support::{SimCluster, active_type, json_of, name, patch};

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn props_set_on_one_node_are_on_every_node_when_it_returns() {
    let cluster = SimCluster::new(41, 5).await;
    cluster.join_all().await;
    let mut watch = cluster.svc(0).metadata_watch();
    let report = cluster
        .svc(3)
        .set_bucket_props(
            "default",
            "b",
            patch(json!({"n_val": 5, "allow_mult": true})),
        )
        .await
        .unwrap();
    assert!(report.is_complete(), "{report:?}");
    assert_eq!(report.acked, [0, 1, 2, 4].map(name).to_vec());
    for i in 0..5 {
        let saved = ClusterState::load(&cluster.state_path(i)).unwrap().unwrap();
        let props = &saved.metadata().bucket_props["default"]["b"];
        assert_eq!(
            json_of(&props.props),
            json!({"n_val": 5, "allow_mult": true}),
            "node {i}"
        );
    }
    assert!(watch.has_changed().unwrap());
    let seen = watch.borrow_and_update().clone();
    assert_eq!(
        json_of(&seen.bucket_props["default"]["b"].props)["n_val"],
        5
    );

    let report = cluster
        .svc(1)
        .reset_bucket_props("default", "b")
        .await
        .unwrap();
    assert!(report.is_complete());
    let report = cluster
        .svc(4)
        .set_bucket_type("sets", active_type(json!({"datatype": "set"})));
    assert!(report.await.unwrap().is_complete());
    for i in 0..5 {
        let state = cluster.svc(i).state();
        assert!(state.metadata().bucket_props["default"]["b"].deleted);
        let sets = &state.metadata().bucket_types["sets"].props;
        assert_eq!(json_of(&sets.patch)["datatype"], "set");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_member_down_during_the_write_gets_it_when_back() {
    let mut cluster = SimCluster::new(42, 3).await;
    cluster.join_all().await;
    cluster.crash(2);
    let down = cluster
        .wait_until(Duration::from_secs(2), || !cluster.svc(0).is_up(&name(2)))
        .await;
    assert!(down);
    let report = cluster.svc(0).set_bucket_type("t", active_type(json!({})));
    let report = report.await.unwrap();
    assert_eq!(
        (report.acked, report.missing),
        (vec![name(1)], vec![name(2)])
    );
    cluster.restart(2).await;
    cluster.settle(Duration::from_secs(5)).await;
    assert_eq!(
        cluster.svc(2).state().metadata().bucket_types["t"]
            .props
            .status,
        TypeStatus::Active
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn every_member_applied_a_write_when_it_returns() {
    let cluster = SimCluster::new(43, 4).await;
    cluster.join_all().await;
    let applied: Vec<_> = (0..4)
        .map(|i| {
            let latest = std::sync::Arc::new(std::sync::Mutex::new(None));
            let seen = latest.clone();
            cluster.svc(i).on_metadata(std::sync::Arc::new(move |m| {
                *seen.lock().unwrap() = Some(m.clone());
            }));
            latest
        })
        .collect();
    let report = cluster
        .svc(2)
        .set_bucket_type("maps", active_type(json!({})))
        .await
        .unwrap();
    assert!(report.is_complete(), "{report:?}");
    for (i, latest) in applied.iter().enumerate() {
        let latest = latest.lock().unwrap().clone().unwrap();
        let props = &latest.bucket_types["maps"].props;
        assert_eq!(props.status, TypeStatus::Active, "node {i}");
    }
}
