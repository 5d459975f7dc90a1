//! Routes, methods, request bodies, node names, join addresses and the
//! mapping of membership errors to statuses.

use super::*;

#[test]
fn node_names_need_a_name_and_a_host() {
    for good in ["dev1@127.0.0.1", "riak@host.example.com", "a@b"] {
        assert_eq!(node_name(good.into()).unwrap().0, good);
    }
    for bad in ["", "dev1", "@host", "dev1@", "a@b@c", "dev 1@h", "x@h\n"] {
        let e = node_name(bad.into()).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad:?}");
        assert!(e.message.contains("not a valid node name"), "{bad:?}");
    }
    assert!(node_name(format!("a@{}", "h".repeat(300))).is_err());
}

#[test]
fn refusals_are_4xx_with_riak_wording() {
    let n = || NodeName("dev2@127.0.0.1".into());
    let cases = [
        (StageError::JoinSelf(n()).into(), 400, "cannot join itself"),
        (StageError::NotMember(n()).into(), 404, "is not a member"),
        (
            StageError::OnlyMember(n()).into(),
            409,
            "is the only member",
        ),
        (
            StageError::InvalidReplacement(n()).into(),
            409,
            "not a valid replacement",
        ),
        (
            CommitError::EmptyPlan.into(),
            409,
            "no staged changes to commit",
        ),
        (MembershipError::NoClaimant, 503, "no claimant"),
    ];
    for (e, status, words) in cases {
        let e: MembershipError = e;
        let answer = membership_error(e);
        assert_eq!(answer.status.as_u16(), status, "{}", answer.message);
        assert!(answer.message.contains(words), "{}", answer.message);
        assert!(answer.message.ends_with('\n'));
    }
}

#[test]
fn every_path_names_its_route() {
    for op in [
        "join",
        "leave",
        "force-remove",
        "replace",
        "force-replace",
        "clear",
        "plan",
        "commit",
        "status",
    ] {
        assert!(ClusterRoute::cluster_op(op.as_bytes()).is_some(), "{op}");
    }
    for view in [
        "member-status",
        "ring-status",
        "ringready",
        "transfers",
        "transfer-limit",
        "down",
    ] {
        assert!(
            ClusterRoute::admin_view(view.as_bytes()).is_some(),
            "{view}"
        );
    }
    assert_eq!(ClusterRoute::cluster_op(b"member-status"), None);
    assert_eq!(ClusterRoute::admin_view(b"join"), None);
}

#[test]
fn methods_are_checked_per_route() {
    assert!(check_method(ClusterRoute::Plan, &Method::GET).is_ok());
    assert!(check_method(ClusterRoute::Plan, &Method::POST).is_err());
    assert!(check_method(ClusterRoute::Commit, &Method::GET).is_err());
    assert!(check_method(ClusterRoute::TransferLimit, &Method::GET).is_ok());
    assert!(check_method(ClusterRoute::TransferLimit, &Method::POST).is_ok());
    assert!(check_method(ClusterRoute::TransferLimit, &Method::PUT).is_err());
    assert!(check_method(ClusterRoute::Down, &Method::DELETE).is_err());
}

#[test]
fn bodies_are_strict_json() {
    assert!(parse::<NodeBody>(br#"{"node":"a@b"}"#).is_ok());
    assert!(parse::<NodeBody>(br#"{"node":"a@b","x":1}"#).is_err());
    assert!(parse::<NodeBody>(b"").is_err());
    assert!(
        parse_or_default::<MaybeNodeBody>(b" ")
            .unwrap()
            .node
            .is_none()
    );
    let e = parse::<LimitBody>(br#"{"limit":-1}"#).unwrap_err();
    assert_eq!(e.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_join_without_an_address_goes_to_port_8099_of_the_host() {
    let target = NodeName("dev1@127.0.0.1".into());
    let addr = join_address(&target, None).await.unwrap();
    assert_eq!(addr, "127.0.0.1:8099".parse().unwrap());
    let addr = join_address(&target, Some("127.0.0.1:10019"))
        .await
        .unwrap();
    assert_eq!(addr.port(), 10019);
    let e = join_address(&target, Some("no-port")).await.unwrap_err();
    assert_eq!(e.status, StatusCode::BAD_REQUEST);
}
