//! 2i and MapReduce while the ring changes, with real processes: three
//! nodes hold coupons with `count_int` and `aff_bin` index entries; a
//! fourth joins, and while its transfers run (and after they settle) every
//! node answers each query (2i range and equality, a MapReduce count, a
//! key listing) with exactly the set of keys written — Riak's 2i answered
//! different key sets from query to query in that window, and so did
//! Eddy's: a fold sent (by a plan from a ring older or newer than the
//! node's) to a vnode its node did not own was answered with the part it
//! held, and a hinted handoff started before the join dropped a vnode
//! that had meanwhile received its node's ownership transfer.

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use support::TestNode;
use support::cluster::{dev_names, form, settle};
use support::kv::list_keys;

const SETTLE: Duration = Duration::from_secs(90);
const COUPONS: usize = 1500;

fn store(nodes: &[TestNode]) {
    for i in 0..COUPONS {
        let node = &nodes[i % nodes.len()];
        let count = (i % 100).to_string();
        let aff = format!("a{}", i % 7);
        let headers = [
            ("Content-Type", "application/json"),
            ("x-riak-index-count_int", count.as_str()),
            ("x-riak-index-aff_bin", aff.as_str()),
        ];
        let body = format!(r#"{{"aff":"{aff}","count":{count}}}"#);
        let path = format!("/buckets/coupons/keys/c{i}?w=2");
        let r = node.http("PUT", &path, &headers, body.as_bytes());
        assert_eq!(r.status, 204, "{}", r.text());
    }
}

/// The keys a 2i query on `node` answers, as a set (a key listed twice
/// would be a bug too).
fn index_keys(node: &TestNode, path: &str) -> BTreeSet<String> {
    let r = node.http("GET", path, &[], b"");
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let keys: Vec<String> = body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let set: BTreeSet<String> = keys.iter().cloned().collect();
    assert_eq!(set.len(), keys.len(), "{path}: a key answered twice");
    set
}

/// The count of coupons a MapReduce job over the bucket finds on `node`.
fn mapreduce_count(node: &TestNode) -> u64 {
    let job = br#"{"inputs":"coupons","query":[{"map":{"language":"erlang","module":"riak_kv_mapreduce","function":"map_object_value"}},{"reduce":{"language":"erlang","module":"riak_kv_mapreduce","function":"reduce_count_inputs"}}]}"#;
    let r = node.http(
        "POST",
        "/mapred",
        &[("Content-Type", "application/json")],
        job,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    body[0].as_u64().unwrap()
}

fn expected(filter: impl Fn(usize) -> bool) -> BTreeSet<String> {
    (0..COUPONS)
        .filter(|i| filter(*i))
        .map(|i| format!("c{i}"))
        .collect()
}

/// One round of every query on every node, each checked whole.
fn check_round(nodes: &[TestNode]) {
    let below_50 = expected(|i| i % 100 < 50);
    let aff3 = expected(|i| i % 7 == 3);
    for node in nodes {
        let range = index_keys(node, "/buckets/coupons/index/count_int/0/49");
        assert_eq!(range.len(), below_50.len(), "range on {}", node.http_port);
        assert_eq!(range, below_50);
        let eq = index_keys(node, "/buckets/coupons/index/aff_bin/a3");
        assert_eq!(eq, aff3, "equality on {}", node.http_port);
        assert_eq!(
            mapreduce_count(node),
            COUPONS as u64,
            "MapReduce on {}",
            node.http_port
        );
        let listed = list_keys(node.http_port, "coupons");
        assert_eq!(listed.len(), COUPONS, "listing on {}", node.http_port);
    }
}

fn transfers_active(node: &TestNode) -> bool {
    let r = node.admin(&["transfers"]);
    r.ok && !r.stdout.contains("No transfers active")
}

#[test]
fn queries_answer_every_key_while_a_node_joins() {
    let mut nodes = form(3, SETTLE);
    store(&nodes);
    check_round(&nodes);

    let dev4 = TestNode::start_dev(4, &[]);
    dev4.join(&nodes[0]);
    nodes[0].commit(SETTLE);
    nodes.push(dev4);
    // Query while the ring changes, until every node says no transfer is
    // left; the rounds that ran during transfers are counted.
    let deadline = Instant::now() + SETTLE;
    let mut during = 0;
    loop {
        let active = nodes.iter().any(transfers_active);
        check_round(&nodes);
        if !active {
            break;
        }
        during += 1;
        assert!(Instant::now() < deadline, "the join did not settle");
    }
    settle(nodes.iter(), &dev_names(1..=4), SETTLE);
    check_round(&nodes);
    println!("query rounds during transfers: {during}");
}
