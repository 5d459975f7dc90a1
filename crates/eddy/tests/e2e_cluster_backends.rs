//! Every query on every storage backend of a 3-node dev cluster (n_val 3,
//! real processes): 2i (HTTP range and equality; PB range paged with
//! `max_results` and continuations), MapReduce (Erlang and JavaScript, over
//! a bucket, a key filter and a 2i input, over HTTP and PB), key listing
//! and a multi-get, each answer checked whole against the keys written.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use eddy_client::pb::PbClient;
use eddy_wire::proto::{RpbIndexReq, RpbMapRedReq};
use serde_json::Value;
use support::TestNode;
use support::cluster::form_with;
use support::queries::{COUPONS, check_round, expected, mapred, store};

const SETTLE: Duration = Duration::from_secs(90);
const BACKENDS: [&str; 4] = ["bitcask", "lsm", "multi", "memory"];

/// Counts coupons per affiliate in JavaScript; the reduce re-runs over
/// its own partial results, as Riak's does.
const JS_PER_AFFILIATE: &str = r#"{"inputs":"coupons","query":[
  {"map":{"language":"javascript","source":"function(v){var d=Riak.mapValuesJson(v)[0];var o={};o[d.aff]=1;return [o];}"}},
  {"reduce":{"language":"javascript","source":"function(vs){var c={};for(var i=0;i<vs.length;i++){for(var k in vs[i]){c[k]=(c[k]||0)+vs[i][k];}}return [c];}"}}]}"#;

fn count_job(inputs: &str) -> String {
    format!(
        r#"{{"inputs":{inputs},"query":[{{"map":{{"language":"erlang","module":"riak_kv_mapreduce","function":"map_object_value"}}}},{{"reduce":{{"language":"erlang","module":"riak_kv_mapreduce","function":"reduce_count_inputs"}}}}]}}"#
    )
}

fn per_affiliate() -> Value {
    let mut counts = BTreeMap::new();
    for i in 0..COUPONS {
        *counts.entry(format!("a{}", i % 7)).or_insert(0u64) += 1;
    }
    serde_json::json!([counts])
}

/// MapReduce with JavaScript, key filters and 2i inputs, over HTTP.
fn check_mapreduce(node: &TestNode, backend: &str) {
    let on = format!("{backend} on {}", node.http_port);
    assert_eq!(mapred(node, JS_PER_AFFILIATE), per_affiliate(), "JS, {on}");
    let filtered = count_job(r#"{"bucket":"coupons","key_filters":[["ends_with","7"]]}"#);
    let ending_7 = expected(|i| i % 10 == 7).len() as u64;
    assert_eq!(
        mapred(node, &filtered),
        serde_json::json!([ending_7]),
        "key filter, {on}"
    );
    let indexed = count_job(r#"{"bucket":"coupons","index":"aff_bin","key":"a3"}"#);
    let aff3 = expected(|i| i % 7 == 3).len() as u64;
    assert_eq!(
        mapred(node, &indexed),
        serde_json::json!([aff3]),
        "2i input, {on}"
    );
}

/// A multi-get of 200 coupons over HTTP: each found, with its value.
fn check_multi_get(node: &TestNode, backend: &str) {
    let keys: Vec<String> = (0..200).map(|i| format!("c{}", i * 7)).collect();
    let body = serde_json::json!({ "keys": keys }).to_string();
    let headers = [("Content-Type", "application/json")];
    let r = node.http(
        "POST",
        "/buckets/coupons/multi/get",
        &headers,
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "multi-get on {backend}: {}", r.text());
    let answer: Value = serde_json::from_slice(&r.body).unwrap();
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), keys.len());
    for (key, result) in keys.iter().zip(results) {
        assert_eq!(result["key"], key.as_str(), "{backend}");
        assert_eq!(result["status"], "ok", "{key} on {backend}: {result}");
        let value: Value =
            serde_json::from_str(result["siblings"][0]["value"].as_str().unwrap()).unwrap();
        assert_eq!(
            value["aff"],
            format!("a{}", key[1..].parse::<usize>().unwrap() % 7)
        );
    }
}

/// The range query over PB, 100 keys a page, followed by continuations.
async fn pb_range_paged(c: &mut PbClient) -> Vec<String> {
    let mut keys = Vec::new();
    let mut continuation = None;
    loop {
        let req = RpbIndexReq {
            bucket: b"coupons".to_vec(),
            index: b"count_int".to_vec(),
            qtype: 1,
            range_min: Some(b"0".to_vec()),
            range_max: Some(b"49".to_vec()),
            max_results: Some(100),
            continuation: continuation.take(),
            ..Default::default()
        };
        let pages = c.index(&req).await.expect("index query");
        for page in pages {
            keys.extend(
                page.keys
                    .iter()
                    .map(|k| String::from_utf8(k.clone()).unwrap()),
            );
            continuation = page.continuation.or(continuation);
        }
        if continuation.is_none() {
            return keys;
        }
    }
}

/// Every value a MapReduce job's answer carries over PB, in order.
async fn pb_mapred(c: &mut PbClient, job: &str) -> Vec<Value> {
    let req = RpbMapRedReq {
        request: job.as_bytes().to_vec(),
        content_type: b"application/json".to_vec(),
    };
    let mut out = Vec::new();
    for resp in c.mapred(&req).await.expect("mapred") {
        if let Some(body) = resp.response {
            let values: Vec<Value> = serde_json::from_slice(&body).unwrap();
            out.extend(values);
        }
    }
    out
}

async fn check_pb(node: &TestNode, backend: &str) {
    let mut c = PbClient::connect(&node.pb_address(), Duration::from_secs(30))
        .await
        .expect("PB connect");
    let keys = pb_range_paged(&mut c).await;
    let set: BTreeSet<String> = keys.iter().cloned().collect();
    assert_eq!(set.len(), keys.len(), "a key paged twice on {backend}");
    assert_eq!(set, expected(|i| i % 100 < 50), "paged range on {backend}");
    let answer = pb_mapred(&mut c, JS_PER_AFFILIATE).await;
    assert_eq!(Value::Array(answer), per_affiliate(), "PB JS on {backend}");
}

#[test]
fn every_backend_answers_every_query_on_a_dev_cluster() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for backend in BACKENDS {
        let nodes = form_with(3, &[("EDDY_STORAGE_BACKEND", backend)], SETTLE);
        store(&nodes);
        check_round(&nodes);
        for node in &nodes {
            check_mapreduce(node, backend);
            check_multi_get(node, backend);
            rt.block_on(check_pb(node, backend));
        }
    }
}
