//! The coupons of the cluster query tests and the queries asked of them:
//! `COUPONS` objects `c0…` in bucket `coupons`, each with `count_int`
//! (i mod 100) and `aff_bin` (`a` and i mod 7) index entries, and helpers
//! that ask a node each query and return its answer whole.

use std::collections::BTreeSet;

use super::TestNode;

/// Coupons stored.
pub const COUPONS: usize = 1500;

/// Stores the coupons, spread over `nodes`, with w = 2.
pub fn store(nodes: &[TestNode]) {
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

/// The coupon keys whose number `filter` takes.
pub fn expected(filter: impl Fn(usize) -> bool) -> BTreeSet<String> {
    (0..COUPONS)
        .filter(|i| filter(*i))
        .map(|i| format!("c{i}"))
        .collect()
}

/// The keys an HTTP 2i query on `node` answers, as a set (a key listed
/// twice would be a bug too).
pub fn index_keys(node: &TestNode, path: &str) -> BTreeSet<String> {
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

/// The answer of MapReduce job `job` (JSON) posted to `node`.
pub fn mapred(node: &TestNode, job: &str) -> serde_json::Value {
    let headers = [("Content-Type", "application/json")];
    let r = node.http("POST", "/mapred", &headers, job.as_bytes());
    assert_eq!(r.status, 200, "{job}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// The count of coupons an Erlang MapReduce job over the bucket finds on
/// `node`.
pub fn mapreduce_count(node: &TestNode) -> u64 {
    let job = r#"{"inputs":"coupons","query":[{"map":{"language":"erlang","module":"riak_kv_mapreduce","function":"map_object_value"}},{"reduce":{"language":"erlang","module":"riak_kv_mapreduce","function":"reduce_count_inputs"}}]}"#;
    mapred(node, job)[0].as_u64().unwrap()
}

/// One round of the join test's queries on every node, each checked
/// whole: a 2i range and an equality query, a MapReduce count, a key
/// listing.
pub fn check_round(nodes: &[TestNode]) {
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
        let listed = super::kv::list_keys(node.http_port, "coupons");
        assert_eq!(listed.len(), COUPONS, "listing on {}", node.http_port);
    }
}
