//! Three real nodes as separate processes: joined and settled (ownership
//! handoff done), then writes with w = 2 spread over the nodes while one
//! node is killed with SIGKILL and later restarted; once its hinted
//! handoffs are done, every acknowledged write reads back with r = 2 from
//! every node, and listing finds every key.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::TestNode;
use support::cluster::dev_name;

const SETTLE: Duration = Duration::from_secs(60);

/// Three nodes, dev2 and dev3 joined to dev1, ring settled.
fn cluster() -> Vec<TestNode> {
    let nodes: Vec<TestNode> = (1..=3).map(|i| TestNode::start_dev(i, &[])).collect();
    for n in &nodes[1..] {
        let join = n.admin(&[
            "cluster",
            "join",
            &dev_name(1),
            "--address",
            &nodes[0].cluster_address(),
        ]);
        assert!(join.ok, "{join:#?}");
    }
    let commit = nodes[0].admin(&["cluster", "commit"]);
    assert!(commit.ok, "{commit:#?}");
    settle(&nodes[0]);
    nodes
}

/// Waits until no transfer is waiting and every member owns its share.
fn settle(node: &TestNode) {
    node.admin_until(&["transfers"], SETTLE, |r| {
        r.ok && r.stdout.contains("No transfers active")
    });
    node.admin_until(&["member-status"], SETTLE, |r| {
        let rows: Vec<&str> = r
            .stdout
            .lines()
            .filter(|l| l.starts_with("valid"))
            .collect();
        r.ok && rows.len() == 3
            && rows
                .iter()
                .all(|l| l.contains("--") && !l.contains(" 0.0%"))
    });
}

fn put(node: &TestNode, key: &str, value: &str) -> bool {
    let path = format!("/buckets/b/keys/{key}?w=2");
    let headers = [("Content-Type", "text/plain")];
    let resp = support::http(node.http_port, "PUT", &path, &headers, value.as_bytes());
    resp.is_ok_and(|r| r.status == 204)
}

fn get(node: &TestNode, key: &str) -> Option<String> {
    let resp = node.http("GET", &format!("/buckets/b/keys/{key}?r=2"), &[], b"");
    (resp.status == 200).then(|| String::from_utf8_lossy(&resp.body).into_owned())
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
        if put(&nodes[at], &key, &value) {
            acked.insert(key, value);
        }
    }
    assert_eq!(
        acked.len(),
        300,
        "with two of three nodes up, w = 2 writes never fail"
    );
    nodes[2].restart();
    settle(&nodes[0]);
    for node in &nodes {
        for (key, value) in &acked {
            assert_eq!(get(node, key).as_deref(), Some(value.as_str()), "{key}");
        }
    }
    let listed = nodes[1].http("GET", "/buckets/b/keys?keys=true", &[], b"");
    let body: serde_json::Value = serde_json::from_slice(&listed.body).unwrap();
    let mut keys: Vec<String> = body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    assert_eq!(keys, acked.keys().cloned().collect::<Vec<_>>());
}
