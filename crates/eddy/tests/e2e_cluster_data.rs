//! Three real nodes as separate processes: joined and settled (ownership
//! handoff done), then writes with w = 2 spread over the nodes while one
//! node is killed with SIGKILL and later restarted; once its hinted
//! handoffs are done, every acknowledged write reads back with r = 2 from
//! every node, and listing finds every key.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::TestNode;
use support::cluster::{dev_names, form, settle};
use support::kv::{assert_all_readable, put_w2};

const SETTLE: Duration = Duration::from_secs(60);

/// Three nodes, dev2 and dev3 joined to dev1, ring settled.
fn cluster() -> Vec<TestNode> {
    form(3, SETTLE)
}

#[test]
fn acknowledged_writes_survive_a_killed_node() {
    let mut nodes = cluster();
    let mut acked = BTreeMap::new();
    for k in 0..300 {
        if k == 100 {
            nodes[2].kill9();
        }
        // Clients of the killed node go to the others.
        let at = match k % 3 {
            2 if k >= 100 => k % 2,
            i => i,
        };
        let (key, value) = (format!("k{k}"), format!("v{k}"));
        if put_w2(nodes[at].http_port, "b", &key, &value).is_ok() {
            acked.insert(key, value);
        }
    }
    assert_eq!(
        acked.len(),
        300,
        "with two of three nodes up, w = 2 writes never fail"
    );
    nodes[2].restart();
    settle(&nodes, &dev_names(1..=3), SETTLE);
    let ports: Vec<u16> = nodes.iter().map(|n| n.http_port).collect();
    let attempted: Vec<String> = acked.keys().cloned().collect();
    assert_all_readable(&ports, "b", &acked, &attempted);
}

#[test]
fn bucket_props_and_types_set_on_one_node_are_on_the_others_when_answered() {
    let nodes = cluster();
    let json = [("Content-Type", "application/json")];
    let props = br#"{"props":{"n_val":2,"allow_mult":true}}"#;
    let set = nodes[0].http("PUT", "/buckets/shared/props", &json, props);
    assert_eq!(set.status, 204, "{set:?}");
    assert_eq!(set.header("x-eddy-missing-members"), None, "{set:?}");
    let types = nodes[1].http(
        "POST",
        "/admin/bucket-types/maps",
        &json,
        br#"{"props":{"allow_mult":true}}"#,
    );
    assert_eq!(types.status, 201, "{types:?}");
    let activated = nodes[1].http("POST", "/admin/bucket-types/maps/activate", &[], b"");
    assert_eq!(activated.status, 204, "every member acked: {activated:?}");
    // No waiting: a member acknowledges a change once it serves it.
    for (i, node) in nodes.iter().enumerate() {
        let got = node.http("GET", "/buckets/shared/props", &[], b"");
        let body: serde_json::Value = serde_json::from_slice(&got.body).unwrap();
        assert_eq!(body["props"]["n_val"], 2, "node {i}: {body}");
        let typed = node.http("GET", "/types/maps/buckets/x/props", &[], b"");
        assert_eq!(typed.status, 200, "node {i}: {typed:?}");
    }
}
