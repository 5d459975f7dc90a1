//! Every query on every storage backend, on one node and on a 3-node dev
//! cluster (n_val 3, real processes): 2i (HTTP range and equality, with
//! `return_terms`, `term_regex`, and pages of `max_results` followed by
//! continuations; PB pages and `stream`), MapReduce (Erlang and JavaScript,
//! over a bucket, a key filter and a 2i input, over HTTP and PB), key
//! listing and a multi-get, each answer checked whole against the keys
//! written.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use eddy_client::pb::PbClient;
use eddy_wire::proto::{RpbIndexReq, RpbMapRedReq};
use serde_json::Value;
use support::TestNode;
use support::cluster::form_with;
use support::queries::{COUPONS, check_round, expected, index_keys, mapred, store};

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

/// 2i options over HTTP: terms (in Riak's order: by term, then key), a
/// term regex, and pages followed by their continuations.
fn check_index_options(node: &TestNode, backend: &str) {
    let path = "/buckets/coupons/index/count_int/10/12?return_terms=true";
    let r = node.http("GET", path, &[], b"");
    assert_eq!(r.status, 200, "{path} on {backend}: {}", r.text());
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    let pairs: Vec<(u64, String)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let (term, key) = o.as_object().unwrap().iter().next().unwrap();
            (term.parse().unwrap(), key.as_str().unwrap().to_string())
        })
        .collect();
    let mut want: Vec<(u64, String)> = (0..COUPONS)
        .filter(|i| (10..=12).contains(&(i % 100)))
        .map(|i| ((i % 100) as u64, format!("c{i}")))
        .collect();
    want.sort();
    assert_eq!(pairs, want, "terms on {backend}");

    let path = "/buckets/coupons/index/aff_bin/a0/a9?term_regex=%5Ea%5B35%5D%24";
    let want = expected(|i| i % 7 == 3 || i % 7 == 5);
    assert_eq!(index_keys(node, path), want, "term_regex on {backend}");

    let mut keys = Vec::new();
    let mut continuation: Option<String> = None;
    let first = "/buckets/coupons/index/count_int/0/49?max_results=200";
    for _ in 0..100 {
        let path = match &continuation {
            None => first.to_string(),
            Some(c) => format!("{first}&continuation={}", url_encoded(c)),
        };
        let r = node.http("GET", &path, &[], b"");
        assert_eq!(r.status, 200, "{path} on {backend}: {}", r.text());
        let page: Value = serde_json::from_slice(&r.body).unwrap();
        let got = page["keys"].as_array().unwrap();
        assert!(got.len() <= 200);
        keys.extend(got.iter().map(|k| k.as_str().unwrap().to_string()));
        continuation = page["continuation"].as_str().map(str::to_string);
        if continuation.is_none() {
            break;
        }
    }
    let set: BTreeSet<String> = keys.iter().cloned().collect();
    assert_eq!(set.len(), keys.len(), "a key paged twice on {backend}");
    assert_eq!(set, expected(|i| i % 100 < 50), "HTTP pages on {backend}");
}

/// `text` as a URL query value.
fn url_encoded(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b.is_ascii_alphanumeric() {
            true => out.push(b as char),
            false => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
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
    let streamed = RpbIndexReq {
        bucket: b"coupons".to_vec(),
        index: b"aff_bin".to_vec(),
        qtype: 0,
        key: Some(b"a3".to_vec()),
        stream: Some(true),
        ..Default::default()
    };
    let frames = c.index(&streamed).await.expect("streamed index query");
    let keys: BTreeSet<String> = frames
        .iter()
        .flat_map(|f| f.keys.iter())
        .map(|k| String::from_utf8(k.clone()).unwrap())
        .collect();
    assert_eq!(keys, expected(|i| i % 7 == 3), "PB stream on {backend}");
    let answer = pb_mapred(&mut c, JS_PER_AFFILIATE).await;
    assert_eq!(Value::Array(answer), per_affiliate(), "PB JS on {backend}");
}

#[test]
fn every_backend_answers_every_query_on_one_node_and_a_dev_cluster() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for backend in BACKENDS {
        for count in [1, 3] {
            let nodes = form_with(count, &[("EDDY_STORAGE_BACKEND", backend)], SETTLE);
            store(&nodes);
            check_round(&nodes);
            let on = format!("{backend}, {count} node(s)");
            for node in &nodes {
                check_index_options(node, &on);
                check_mapreduce(node, &on);
                check_multi_get(node, &on);
                rt.block_on(check_pb(node, &on));
            }
        }
    }
}
