//! The cluster admin resource over HTTP on a node of one: its views, each
//! refusal with its status and Riak's words, bad bodies and methods, and
//! 503 on a node that runs no membership service. (Three nodes through
//! the CLI: the eddy crate's `e2e_cluster_admin`.)

mod http_support;

use eddy_api::http::HttpConfig;
use eddy_cluster::{ClusterState, Membership, MembershipConfig, NodeName};
use eddy_net::{NetConfig, Transport};
use http_support::{Server, node_config, start, start_with};
use serde_json::{Value, json};

const ME: &str = "dev1@127.0.0.1";

/// A node of one with its membership service on a loopback transport.
async fn start_member(dir: &std::path::Path) -> (Server, Membership) {
    let me = NodeName(ME.into());
    let listen = "127.0.0.1:0".parse().unwrap();
    let transport = Transport::tcp(me.clone(), listen, NetConfig::default())
        .await
        .unwrap();
    let address = transport.listen_addr().unwrap().to_string();
    let state = ClusterState::new("eddy", me, 1, address, 8).unwrap();
    let config = MembershipConfig::new(dir.join("cluster.json"));
    let membership = Membership::start(config, transport, state).await.unwrap();
    membership.install_handler().unwrap();
    let http = HttpConfig {
        membership: Some(membership.clone()),
        ..HttpConfig::default()
    };
    (start_with(node_config(), http).await, membership)
}

async fn post(s: &Server, path: &str, body: Value) -> (u16, String) {
    let r = s
        .client
        .post(s.url(path))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn get(s: &Server, path: &str) -> (u16, Value) {
    let r = s.get(path).await;
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_str(&r.text().await.unwrap()).unwrap(),
    )
}

#[tokio::test]
async fn a_node_of_one_shows_itself_and_refuses_what_riak_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _membership) = start_member(dir.path()).await;

    let (status, members) = get(&s, "/admin/member-status").await;
    assert_eq!(status, 200);
    assert_eq!(
        members,
        json!({"members":[{"node":ME,"status":"valid","ring_pct":100.0,"pending_pct":null}]})
    );
    let (_, plan) = get(&s, "/admin/cluster/plan").await;
    assert_eq!(plan["changes"], json!([]));
    let (_, ready) = get(&s, "/admin/ringready").await;
    assert_eq!(ready, json!({"ready":true,"nodes":[ME],"waiting":[]}));
    let (_, ring) = get(&s, "/admin/ring-status").await;
    assert_eq!(ring["claimant"], json!(ME));
    assert_eq!(ring["pending"], json!([]));
    let (_, status_view) = get(&s, "/admin/cluster/status").await;
    assert_eq!(status_view["members"][0]["claimant"], json!(true));
    assert_eq!(status_view["members"][0]["up"], json!(true));
    let (_, transfers) = get(&s, "/admin/transfers").await;
    assert_eq!(transfers, json!({"transfers":[]}));

    let refusals = [
        ("/admin/cluster/commit", json!({}), 409, "no staged changes"),
        ("/admin/cluster/leave", json!({}), 409, "is the only member"),
        (
            "/admin/cluster/join",
            json!({"node": ME}),
            400,
            "cannot join itself",
        ),
        (
            "/admin/cluster/force-remove",
            json!({"node":"dev9@127.0.0.1"}),
            404,
            "is not a member",
        ),
        (
            "/admin/cluster/replace",
            json!({"node": ME, "with":"dev9@127.0.0.1"}),
            409,
            "not a valid replacement",
        ),
        ("/admin/down", json!({"node": ME}), 409, "is up"),
        (
            "/admin/down",
            json!({"node":"nonsense"}),
            400,
            "not a valid node name",
        ),
        ("/admin/down", json!({"nod": ME}), 400, "bad JSON"),
        ("/admin/transfer-limit", json!({"limit":0}), 400, "positive"),
    ];
    for (path, body, status, words) in refusals {
        let (got, text) = post(&s, path, body).await;
        assert_eq!(got, status, "{path}: {text}");
        assert!(text.contains(words), "{path}: {text}");
    }

    let (status, set) = post(&s, "/admin/transfer-limit", json!({"limit": 5})).await;
    assert_eq!(status, 200, "{set}");
    let set: Value = serde_json::from_str(&set).unwrap();
    assert_eq!(set["acked"], json!([ME]));
    let (_, shown) = get(&s, "/admin/transfer-limit").await;
    assert_eq!(shown, json!({"node": ME, "limit": 5}));

    let r = s
        .client
        .post(s.url("/admin/member-status"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(s.get("/admin/cluster/commit").await.status(), 405);
    assert_eq!(s.get("/admin/cluster/nothing").await.status(), 404);
    assert_eq!(s.get("/admin/nothing").await.status(), 404);
}

#[tokio::test]
async fn a_node_without_membership_answers_503() {
    let s = start().await;
    let r = s.get("/admin/member-status").await;
    assert_eq!(r.status(), 503);
    assert!(r.text().await.unwrap().contains("no membership service"));
    let (status, _) = post(&s, "/admin/cluster/join", json!({"node":"a@b"})).await;
    assert_eq!(status, 503);
}
