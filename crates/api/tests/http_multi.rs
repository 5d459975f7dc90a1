//! Eddy's multi-key HTTP requests (`POST …/multi/{get,put,delete}`, design
//! note 016) against an in-process node: JSON results in request order,
//! text and base64 bytes, per-key errors beside successes, siblings and
//! contexts, and what fails the whole request (bad JSON, unknown fields,
//! too many keys, oversized bodies, wrong method or media type).

mod http_support;

use eddy_api::http::HttpConfig;
use http_support::{Server, node_config, start, start_with};
use serde_json::{Value, json};

async fn post(s: &Server, path: &str, body: &Value) -> (u16, Value) {
    let r = s
        .client
        .post(s.url(path))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, json)
}

async fn results(s: &Server, path: &str, body: &Value) -> Vec<Value> {
    let (status, answer) = post(s, path, body).await;
    assert_eq!(status, 200, "{answer}");
    answer["results"].as_array().unwrap().clone()
}

fn statuses(results: &[Value]) -> Vec<&str> {
    results
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn put_get_delete_round_trip_with_per_key_errors() {
    let s = start().await;
    let objects = json!({"objects": [
        {"key": "a", "value": "one", "content_type": "text/plain",
         "usermeta": {"color": "blue"}, "indexes": {"shop_bin": "north", "n_int": [5, "7"]}},
        {"key_base64": "/wA=", "value_base64": "//4="},
        {"key": "both", "key_base64": "Ym90aA==", "value": "x"},
        {"key_base64": "!!", "value": "x"},
        {"key": "idx", "value": "x", "indexes": {"n_int": "ten"}},
        {"key": "", "value": "x"},
        {"key": "vc", "value": "x", "vclock": "garbage"},
    ]});
    let written = results(&s, "/buckets/b/multi/put", &objects).await;
    assert_eq!(
        statuses(&written),
        ["ok", "ok", "error", "error", "error", "error", "error"]
    );
    assert_eq!(written[1]["key_base64"], "/wA=");
    assert_eq!(written[3]["key_base64"], "!!", "echoed as sent");
    assert_eq!(
        written[4]["error"],
        "Could not parse field 'n_int', value 'ten'."
    );
    assert_eq!(written[4]["http_status"], 400);
    assert_eq!(written[5]["error"], "key must not be empty");
    assert!(
        written[6]["error"]
            .as_str()
            .unwrap()
            .starts_with("Bad vclock")
    );
    assert!(
        written[2]["error"]
            .as_str()
            .unwrap()
            .contains("exactly one")
    );

    let keys = json!({"keys": ["a", "missing", {"key_base64": "/wA="}, {"key": "idx"}]});
    let got = results(&s, "/buckets/b/multi/get", &keys).await;
    assert_eq!(statuses(&got), ["ok", "not_found", "ok", "not_found"]);
    let a = &got[0]["siblings"][0];
    assert_eq!(a["value"], "one");
    assert_eq!(a["content_type"], "text/plain");
    assert_eq!(a["usermeta"], json!({"color": "blue"}));
    assert_eq!(
        a["indexes"],
        json!({"n_int": ["5", "7"], "shop_bin": ["north"]})
    );
    assert_eq!(got[2]["siblings"][0]["value_base64"], "//4=");
    assert_eq!(
        got[2]["siblings"][0]["content_type"],
        "application/octet-stream"
    );
    // The single API reads what the multi API wrote.
    let single = s.get("/buckets/b/keys/a").await;
    assert_eq!(single.text().await.unwrap(), "one");
    let index = s.get("/buckets/b/index/shop_bin/north").await;
    let index: Value = serde_json::from_str(&index.text().await.unwrap()).unwrap();
    assert_eq!(index, json!({"keys": ["a"]}));

    let vclock = got[0]["vclock"].clone();
    let dels = json!({"keys": [{"key": "a", "vclock": vclock}, "missing", {"key_base64": "/wA="}]});
    let deleted = results(&s, "/buckets/b/multi/delete", &dels).await;
    assert_eq!(statuses(&deleted), ["ok", "not_found", "ok"]);
    let got = results(&s, "/buckets/b/multi/get", &json!({"keys": ["a"]})).await;
    assert_eq!(statuses(&got), ["not_found"]);
    assert!(got[0]["vclock"].is_string(), "the tombstone's context");
    let got = results(
        &s,
        "/buckets/b/multi/get?timeout=0",
        &json!({"keys": ["a"]}),
    )
    .await;
    assert_eq!(statuses(&got), ["not_found"], "timeout=0 is no timeout");
    let path = "/buckets/b/multi/get?deletedvclock=false";
    let got = results(&s, path, &json!({"keys": ["a"]})).await;
    assert!(got[0].get("vclock").is_none());
}

#[tokio::test]
async fn typed_buckets_keep_siblings_until_a_context_resolves_them() {
    let s = start().await;
    for v in ["one", "two"] {
        let body = json!({"objects": [{"key": "k", "value": v}]});
        results(&s, "/types/maps/buckets/b/multi/put", &body).await;
    }
    let got = results(
        &s,
        "/types/maps/buckets/b/multi/get",
        &json!({"keys": ["k"]}),
    )
    .await;
    let mut values: Vec<&str> = got[0]["siblings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_str().unwrap())
        .collect();
    values.sort();
    assert_eq!(values, ["one", "two"]);
    let body = json!({"objects": [
        {"key": "k", "value": "merged", "vclock": got[0]["vclock"]},
    ]});
    let path = "/types/maps/buckets/b/multi/put?returnbody=true&w=all";
    let written = results(&s, path, &body).await;
    assert_eq!(written[0]["siblings"].as_array().unwrap().len(), 1);
    assert_eq!(written[0]["siblings"][0]["value"], "merged");
    // If-None-Match: * makes every put a create.
    let body = json!({"objects": [{"key": "k", "value": "x"}, {"key": "fresh", "value": "y"}]});
    let r = s
        .client
        .post(s.url("/types/maps/buckets/b/multi/put"))
        .header("content-type", "application/json")
        .header("if-none-match", "*")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let results = answer["results"].as_array().unwrap();
    assert_eq!(statuses(results), ["error", "ok"]);
    assert_eq!(results[0]["http_status"], 412);
}

#[tokio::test]
async fn malformed_requests_fail_as_a_whole() {
    let s = start().await;
    let send = |path: &str, ct: &str, body: String| {
        s.client
            .post(s.url(path))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    let json_ct = "application/json";
    let cases: Vec<(&str, &str, String, u16, &str)> = vec![
        (
            "/buckets/b/multi/get",
            json_ct,
            "{\"keys\":[".into(),
            400,
            "must be JSON",
        ),
        (
            "/buckets/b/multi/get",
            json_ct,
            "{\"kyes\":[]}".into(),
            400,
            "unknown field",
        ),
        (
            "/buckets/b/multi/get",
            json_ct,
            "{\"keys\":[1]}".into(),
            400,
            "keys[0]",
        ),
        (
            "/buckets/b/multi/get",
            json_ct,
            "{\"keys\":[{\"key\":\"a\",\"vclock\":\"x\"}]}".into(),
            400,
            "multi/delete only",
        ),
        (
            "/buckets/b/multi/put",
            json_ct,
            "{\"objects\":[{\"key\":\"a\",\"valeu\":\"x\"}]}".into(),
            400,
            "objects[0]",
        ),
        (
            "/buckets/b/multi/get",
            "text/plain",
            "{\"keys\":[]}".into(),
            415,
            "application/json",
        ),
        (
            "/buckets/b/multi/get?r=most",
            json_ct,
            "{\"keys\":[]}".into(),
            400,
            "r query",
        ),
        (
            "/buckets/b/multi/get?r=4",
            json_ct,
            "{\"keys\":[\"a\"]}".into(),
            400,
            "n value",
        ),
        (
            "/types/nope/buckets/b/multi/get",
            json_ct,
            "{\"keys\":[]}".into(),
            404,
            "nope",
        ),
        (
            "/buckets/b/multi/scan",
            json_ct,
            "{\"keys\":[]}".into(),
            404,
            "no such resource",
        ),
    ];
    for (path, ct, body, status, says) in cases {
        let r = send(path, ct, body.clone()).await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{path} {body}");
        let text = r.text().await.unwrap();
        assert!(text.contains(says), "{path} {body}: {text}");
    }
    let keys: Vec<String> = (0..1001).map(|k| format!("k{k}")).collect();
    let (status, answer) = post(&s, "/buckets/b/multi/get", &json!({"keys": keys})).await;
    assert_eq!(status, 400);
    assert_eq!(answer, "too many keys: 1001 exceeds the limit of 1000\n");
    let r = s.get("/buckets/b/multi/get").await;
    assert_eq!(r.status(), 405);
    let r = s
        .client
        .post(s.url("/buckets/b/multi/delete"))
        .header("if-match", "\"x\"")
        .body("{\"keys\":[]}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "conditional headers name one version");
    let got = results(&s, "/buckets/b/multi/get", &json!({"keys": []})).await;
    assert!(got.is_empty());
    s.assert_serving().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let http = HttpConfig {
        body_bytes_max: 4096,
        ..HttpConfig::default()
    };
    let s = start_with(node_config(), http).await;
    let objects: Vec<Value> = (0..10)
        .map(|k| json!({"key": format!("k{k}"), "value": "v".repeat(1000)}))
        .collect();
    let (status, answer) = post(&s, "/buckets/b/multi/put", &json!({"objects": objects})).await;
    assert_eq!(status, 413, "{answer}");
    let got = results(&s, "/buckets/b/multi/get", &json!({"keys": ["k0"]})).await;
    assert_eq!(statuses(&got), ["not_found"], "nothing was written");
}

#[tokio::test]
async fn stats_count_multi_key_requests_and_their_keys() {
    let s = start().await;
    let objects = json!({"objects": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]});
    results(&s, "/buckets/b/multi/put", &objects).await;
    results(
        &s,
        "/buckets/b/multi/get",
        &json!({"keys": ["a", "b", "c"]}),
    )
    .await;
    results(&s, "/buckets/b/multi/delete", &json!({"keys": ["a"]})).await;
    let r = s.client.get(s.url("/stats")).send().await.unwrap();
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    for (name, count) in [
        ("node_multi_puts", 1),
        ("node_multi_put_keys", 2),
        ("node_multi_gets", 1),
        ("node_multi_get_keys", 3),
        ("node_multi_deletes", 1),
        ("node_multi_delete_keys", 1),
        ("vnode_batches", 0),
    ] {
        assert_eq!(v[format!("{name}_total")], count, "{name}_total");
        assert_eq!(v[name], count, "{name} (the last minute)");
    }
    // Each key counts as its single operation too.
    assert_eq!(v["node_gets_total"], 3 + 1);
    assert_eq!(v["node_puts_total"], 2 + 1);
}
