//! Per-bucket TTL on the real binary (design note 027), on bitcask and
//! lsm: a bucket with `ttl` 2 s, objects with 2i entries, and a bucket
//! without a ttl beside it. Once the objects are 2 s old, neither a get, a
//! 2i query, a key listing nor a MapReduce job over the bucket or its
//! index finds them, while the other bucket keeps its objects; the node's
//! own sweep then deletes them (`/stats` `expired_total`).

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::TestNode;
use support::queries::mapred;

const KEYS: usize = 10;

fn put(node: &TestNode, bucket: &str, key: usize) {
    let headers = [("Content-Type", "text/plain"), ("x-riak-index-n_int", "7")];
    let path = format!("/buckets/{bucket}/keys/k{key}");
    let r = node.http("PUT", &path, &headers, b"v");
    assert_eq!(r.status, 204, "{}", r.text());
}

fn json(node: &TestNode, path: &str) -> Value {
    let r = node.http("GET", path, &[], b"");
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// How many keys of `bucket` a 2i query, a listing, and MapReduce jobs
/// over the bucket and over its index each find.
fn counts(node: &TestNode, bucket: &str) -> [usize; 4] {
    let index = json(node, &format!("/buckets/{bucket}/index/n_int/7"));
    let listed = json(node, &format!("/buckets/{bucket}/keys?keys=true"));
    let count = |inputs: String| {
        let job = format!(
            r#"{{"inputs":{inputs},"query":[{{"map":{{"language":"erlang","module":"riak_kv_mapreduce","function":"map_object_value"}}}},{{"reduce":{{"language":"erlang","module":"riak_kv_mapreduce","function":"reduce_count_inputs"}}}}]}}"#
        );
        mapred(node, &job)[0].as_u64().unwrap() as usize
    };
    [
        index["keys"].as_array().unwrap().len(),
        listed["keys"].as_array().unwrap().len(),
        count(format!("\"{bucket}\"")),
        count(format!(
            r#"{{"bucket":"{bucket}","index":"n_int","key":"7"}}"#
        )),
    ]
}

fn expires(backend: &str) {
    let node = TestNode::start(&[("EDDY_STORAGE_BACKEND", backend)]);
    let headers = [("Content-Type", "application/json")];
    let r = node.http(
        "PUT",
        "/buckets/t/props",
        &headers,
        br#"{"props":{"ttl":"2s"}}"#,
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let written = Instant::now();
    for k in 0..KEYS {
        put(&node, "t", k);
        put(&node, "p", k);
    }
    if written.elapsed() < Duration::from_millis(900) {
        assert_eq!(counts(&node, "t"), [KEYS; 4], "{backend}: before");
    }
    // Whole seconds: an object written at s.x expires at s + 2.
    std::thread::sleep(Duration::from_secs(3).saturating_sub(written.elapsed()));
    let r = node.http("GET", "/buckets/t/keys/k0", &[], b"");
    assert_eq!(r.status, 404, "{backend}");
    assert_eq!(counts(&node, "t"), [0; 4], "{backend}: expired");
    assert_eq!(counts(&node, "p"), [KEYS; 4], "{backend}: no ttl");
    // The sweep looks every second: every replica's copy goes.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let stats = json(&node, "/stats");
        if stats["expired_total"].as_u64() == Some(3 * KEYS as u64) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{backend}: {}",
            stats["expired_total"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn objects_of_a_bucket_with_a_ttl_expire_on_bitcask() {
    expires("bitcask");
}

#[test]
fn objects_of_a_bucket_with_a_ttl_expire_on_lsm() {
    expires("lsm");
}
