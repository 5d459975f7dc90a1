//! HTTP MapReduce (`POST /mapred`): one kept phase answers a list,
//! several a list of lists, `chunked=true` multipart parts of
//! `{"phase", "data"}`; malformed jobs are 400s, failed ones 500s with
//! Riak's JSON report.

mod http_support;

use http_support::*;
use serde_json::{Value, json};

async fn post(s: &Server, path: &str, body: String) -> reqwest::Response {
    s.client
        .post(s.url(path))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn body_json(r: reqwest::Response) -> Value {
    serde_json::from_str(&r.text().await.unwrap()).unwrap()
}

async fn loaded() -> Server {
    let s = start().await;
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        assert!(
            s.put(&format!("/buckets/n/keys/{k}"), v)
                .await
                .status()
                .is_success()
        );
    }
    s
}

fn map_values_json(keep: bool) -> Value {
    json!({"map": {"language": "javascript", "name": "Riak.mapValuesJson", "keep": keep}})
}

fn reduce_sum(keep: bool) -> Value {
    json!({"reduce": {"language": "javascript", "name": "Riak.reduceSum", "keep": keep}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_kept_phase_is_a_list_and_several_a_list_of_lists() {
    let s = loaded().await;
    let j = json!({"inputs": "n", "query": [map_values_json(false), reduce_sum(false)]});
    let r = post(&s, "/mapred", j.to_string()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(body_json(r).await, json!([6]));
    let j = json!({"inputs": [["n", "a"], ["n", "b"]], "query": [map_values_json(true), reduce_sum(true)]});
    let got: Value = body_json(post(&s, "/mapred", j.to_string()).await).await;
    let mut mapped = got[0].as_array().unwrap().clone();
    mapped.sort_by_key(|v| v.as_i64());
    assert_eq!(mapped, vec![json!(1), json!(2)]);
    assert_eq!(got[1], json!([3]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_answers_are_multipart_parts_per_phase() {
    let s = loaded().await;
    let j = json!({"inputs": "n", "query": [map_values_json(true), reduce_sum(true)]});
    let r = post(&s, "/mapred?chunked=true", j.to_string()).await;
    assert_eq!(r.status(), 200);
    let ct = header(&r, "content-type").unwrap();
    let boundary = ct
        .strip_prefix("multipart/mixed; boundary=")
        .unwrap()
        .to_owned();
    let body = r.text().await.unwrap();
    let parts: Vec<Value> = body
        .split(&format!("--{boundary}"))
        .filter_map(|p| p.split("\r\n\r\n").nth(1))
        .map(|json| serde_json::from_str(json.trim()).unwrap())
        .collect();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["phase"], json!(0));
    assert_eq!(parts[0]["data"].as_array().unwrap().len(), 3);
    assert_eq!(parts[1], json!({"phase": 1, "data": [6]}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_and_failing_jobs_say_why() {
    let s = loaded().await;
    let r = post(&s, "/mapred", "{\"inputs\":".into()).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("Invalid job JSON"));
    let j = json!({"inputs": "n", "query": [{"map": {"language": "javascript", "source": "function (v) { return v.nope.deeper; }"}}]});
    let r = post(&s, "/mapred", j.to_string()).await;
    assert_eq!(r.status(), 500);
    let report: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(report["phase"], json!(0));
    assert!(
        report["error"].as_str().unwrap().contains("undefined"),
        "{report}"
    );
    let r = post(&s, "/mapred?chunked=maybe", "{}".into()).await;
    assert_eq!(r.status(), 400);
    let r = s.get("/mapred").await;
    assert_eq!(r.status(), 405);
    let j = json!({"inputs": "n", "query": [{"map": {"language": "javascript", "source": "function () { var a = []; while (true) { a.push('xxxxxxxxxxxxxxxx' + a.length); } }"}}]});
    let r = post(&s, "/mapred", j.to_string()).await;
    assert_eq!(r.status(), 500);
    assert!(r.text().await.unwrap().contains("out of memory"));
    s.assert_serving().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_inputs_feed_map_phases() {
    let s = start().await;
    for (k, n) in [("x", 5), ("y", 50), ("z", 500)] {
        let r = s
            .client
            .put(s.url(&format!("/buckets/c/keys/{k}")))
            .header("content-type", "application/json")
            .header("x-riak-index-count_int", n.to_string())
            .body(n.to_string())
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }
    let j = json!({"inputs": {"bucket": "c", "index": "count_int", "start": 1, "end": 100},
        "query": [map_values_json(false), reduce_sum(false)]});
    let got: Value = body_json(post(&s, "/mapred", j.to_string()).await).await;
    assert_eq!(got, json!([55]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_filter_inputs_pass_only_matching_keys() {
    let s = start().await;
    for k in ["basho-20101215", "google-20110103", "yahoo-20090613"] {
        assert!(
            s.put(&format!("/buckets/kf/keys/{k}"), "1")
                .await
                .status()
                .is_success()
        );
    }
    let key_map =
        json!({"map": {"language": "javascript", "source": "function (v) { return [v.key]; }"}});
    let j = json!({"inputs": {"bucket": "kf", "key_filters": [["tokenize", "-", 2], ["ends_with", "0613"]]},
        "query": [key_map]});
    let got = body_json(post(&s, "/mapred", j.to_string()).await).await;
    assert_eq!(got, json!(["yahoo-20090613"]));
    let j = json!({"inputs": {"bucket": "kf", "key_filters": [["no_such_filter"]]}, "query": [key_map]});
    let r = post(&s, "/mapred", j.to_string()).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("no_such_filter"));
}

fn index_fn(function: &str, arg: Value) -> Value {
    json!({"reduce": {"language": "erlang", "module": "riak_kv_mapreduce",
        "function": function, "arg": arg}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_terms_feed_the_index_reduces() {
    let s = start().await;
    for (k, term) in [
        ("p1", "1982|SMITH"),
        ("p2", "1975|JONES"),
        ("p3", "1990|SMITH"),
    ] {
        let r = s
            .client
            .put(s.url(&format!("/buckets/people/keys/{k}")))
            .header("content-type", "text/plain")
            .header("x-riak-index-person_bin", term)
            .body(k)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }
    let input = json!({"bucket": "people", "index": "person_bin", "start": "0", "end": "9",
        "return_terms": true});
    let bare = json!({"inputs": input, "query": []});
    let got = body_json(post(&s, "/mapred", bare.to_string()).await).await;
    assert_eq!(
        got,
        json!([["people", "p2", {"term": "1975|JONES"}], ["people", "p1", {"term": "1982|SMITH"}],
            ["people", "p3", {"term": "1990|SMITH"}]])
    );
    let extract = index_fn(
        "reduce_index_extractregex",
        json!([
            "term",
            ["year", "name"],
            "this",
            "^(?<year>[0-9]+)\\|(?<name>.*)$"
        ]),
    );
    let count = index_fn(
        "reduce_index_countby",
        json!({"attribute": "name", "type": "binary"}),
    );
    let j = json!({"inputs": input, "query": [extract, count]});
    let got = body_json(post(&s, "/mapred", j.to_string()).await).await;
    assert_eq!(got, json!([["JONES", 1], ["SMITH", 2]]));
    let newest = index_fn("reduce_index_max", json!(["year", 1]));
    let j = json!({"inputs": input, "query": [extract, newest]});
    let got = body_json(post(&s, "/mapred", j.to_string()).await).await;
    assert_eq!(
        got,
        json!([["people", "p3", {"name": "SMITH", "year": "1990"}]])
    );
    let bad = index_fn("reduce_index_countby", json!(["name", "text"]));
    let j = json!({"inputs": input, "query": [extract, bad]});
    let r = post(&s, "/mapred", j.to_string()).await;
    assert_eq!(r.status(), 500);
    let report = body_json(r).await;
    assert_eq!(report["phase"], 1);
    let error = report["error"].as_str().unwrap();
    assert!(
        error.starts_with("reduce_index_countby: bad arg \"type\""),
        "{error}"
    );
}
