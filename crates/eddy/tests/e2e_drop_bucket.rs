//! Dropping a bucket on real nodes (design note 018): the drop is one
//! request; nothing brings the dropped objects back — a restart after
//! kill -9 replaying the commit log, a node that was down during the drop
//! and still holds its replicas (its reads, read repair and handoff), or
//! a second drop — while writes made after the drop stay.

mod support;

use std::time::{Duration, Instant};

use support::TestNode;
use support::cluster::{dev_names, form, settle};
use support::kv::{get_r2, list_keys, put_w2};

const SETTLE: Duration = Duration::from_secs(60);

fn drop_bucket(node: &TestNode, path: &str) -> serde_json::Value {
    let r = node.http("DELETE", path, &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// Reads every key of `keys` in `bucket` on the node at `port` with r = 2
/// and returns those found.
fn found(port: u16, bucket: &str, keys: &[String]) -> Vec<String> {
    keys.iter()
        .filter(|k| get_r2(port, bucket, k).expect("get").is_some())
        .cloned()
        .collect()
}

/// The keys of coupons whose `aff_bin` is `a1`, sorted.
fn index_keys(node: &TestNode) -> Vec<String> {
    let r = node.http("GET", "/buckets/coupons/index/aff_bin/a1", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let mut keys: Vec<String> = body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

fn generation(node: &TestNode, bucket: &str) -> u64 {
    let r = node.http("GET", &format!("/buckets/{bucket}/props"), &[], b"");
    let props: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    props["props"]["generation"].as_u64().unwrap_or(0)
}

/// Waits until `node` knows the coupons bucket's generation `g`.
fn await_generation(node: &TestNode, g: u64) {
    let deadline = Instant::now() + SETTLE;
    while generation(node, "coupons") < g {
        assert!(Instant::now() < deadline, "the drop never reached the node");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_dropped_bucket_stays_dropped_across_kill9_and_replay() {
    for backend in ["bitcask", "lsm", "multi"] {
        dropped_across_kill9(backend);
    }
}

/// The drop, kill -9 and replay on a node of `backend`.
fn dropped_across_kill9(backend: &str) {
    let mut node = TestNode::start(&[("EDDY_STORAGE_BACKEND", backend)]);
    let port = node.http_port;
    let keys: Vec<String> = (0..200).map(|i| format!("c{i}")).collect();
    for k in &keys {
        put_w2(port, "coupons", k, "old").unwrap();
        put_w2(port, "kept", k, "kept").unwrap();
    }
    let indexed = [
        ("Content-Type", "text/plain"),
        ("x-riak-index-aff_bin", "a1"),
    ];
    for k in ["i1", "i2"] {
        let r = node.http("PUT", &format!("/buckets/coupons/keys/{k}"), &indexed, b"v");
        assert_eq!(r.status, 204, "{}", r.text());
    }
    assert_eq!(index_keys(&node), ["i1", "i2"], "{backend}");
    let answer = drop_bucket(&node, "/admin/buckets/coupons");
    assert_eq!(answer["generation"], 1, "{backend}: {answer}");
    assert!(found(port, "coupons", &keys).is_empty(), "{backend}");
    assert!(index_keys(&node).is_empty(), "{backend}");
    put_w2(port, "coupons", "after", "new").unwrap();
    // The commit log still holds every write above: replay must not bring
    // the dropped ones back.
    node.kill9();
    node.restart();
    let port = node.http_port;
    assert!(found(port, "coupons", &keys).is_empty());
    assert_eq!(list_keys(port, "coupons"), ["after"], "{backend}");
    assert!(index_keys(&node).is_empty(), "{backend}");
    assert_eq!(get_r2(port, "coupons", "after").unwrap().unwrap(), "new");
    assert_eq!(found(port, "kept", &keys).len(), 200);
    // The CLI drops too, and a typed bucket's unknown type is refused.
    let out = node
        .command(&["admin", "drop-bucket", "coupons"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("generation 2"));
    assert!(list_keys(port, "coupons").is_empty());
    let r = node.http("DELETE", "/admin/types/nope/buckets/b", &[], b"");
    assert_eq!(r.status, 404, "{}", r.text());
}

#[test]
fn a_node_down_during_the_drop_brings_nothing_back() {
    let mut nodes = form(3, SETTLE);
    let ports: Vec<u16> = nodes.iter().map(|n| n.http_port).collect();
    let keys: Vec<String> = (0..150).map(|i| format!("c{i}")).collect();
    for (i, k) in keys.iter().enumerate() {
        put_w2(ports[i % 3], "coupons", k, "old").unwrap();
        put_w2(ports[i % 3], "kept", k, "kept").unwrap();
    }
    nodes[2].kill9();
    let answer = drop_bucket(&nodes[0], "/admin/buckets/coupons");
    assert_eq!(answer["shared"], true, "pushed to the members up: {answer}");
    await_generation(&nodes[1], 1);
    for &port in &ports[..2] {
        assert!(found(port, "coupons", &keys).is_empty());
    }
    put_w2(ports[1], "coupons", "after", "new").unwrap();

    // dev3 comes back holding its replicas of the dropped objects; reads
    // through it before it hears of the drop may still see them, but
    // their read repairs must not write them back elsewhere.
    nodes[2].restart();
    for k in &keys {
        let _ = get_r2(ports[2], "coupons", k);
    }
    await_generation(&nodes[2], 1);
    settle(&nodes, &dev_names(1..=3), SETTLE);
    for &port in &ports {
        assert!(found(port, "coupons", &keys).is_empty(), "port {port}");
        assert_eq!(list_keys(port, "coupons"), ["after"], "port {port}");
        assert_eq!(get_r2(port, "coupons", "after").unwrap().unwrap(), "new");
        assert_eq!(found(port, "kept", &keys).len(), keys.len());
    }
}
