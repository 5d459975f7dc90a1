//! Data types and Riak 1.4's counters over HTTP, end to end on one node:
//! `/types/T/buckets/B/datatypes[/K]` for counters, sets, HLLs and
//! grow-only sets, `/buckets/B/counters/K`, the redirect from the default
//! type, and the status and text of every refusal. (Maps wait for the map
//! type; their JSON has unit tests in `src/http/dt_json/tests.rs`.)

mod http_support;

use http_support::{Server, header, start};
use serde_json::{Value, json};

async fn setup() -> Server {
    let server = start().await;
    let registry = server.node.registry();
    for (name, dt) in [
        ("counters", "counter"),
        ("sets", "set"),
        ("hlls", "hll"),
        ("gsets", "gset"),
    ] {
        let props = eddy_model::props::PropsPatch {
            datatype: Some(Some(dt.into())),
            ..Default::default()
        };
        registry.create_type(name, &props).unwrap();
        registry.activate_type(name).unwrap();
    }
    server
}

async fn post(server: &Server, path: &str, body: &str) -> reqwest::Response {
    server
        .client
        .post(server.url(path))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

async fn json_of(r: reqwest::Response) -> Value {
    serde_json::from_str(&r.text().await.unwrap()).unwrap()
}

#[tokio::test]
async fn counters_fetch_update_and_return_body() {
    let s = setup().await;
    let path = "/types/counters/buckets/b/datatypes/k";
    let r = s.get(path).await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        json_of(r).await,
        json!({"type": "counter", "error": "notfound"})
    );
    assert_eq!(post(&s, path, r#"{"increment": 5}"#).await.status(), 204);
    let r = post(
        &s,
        &format!("{path}?returnbody=true"),
        r#"{"decrement": 3}"#,
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(json_of(r).await, json!({"type": "counter", "value": 2}));
    let r = post(&s, &format!("{path}?return_body=true"), "\"increment\"").await;
    assert_eq!(json_of(r).await["value"], json!(3));
    assert_eq!(json_of(s.get(path).await).await["value"], json!(3));
    let head = s.client.head(s.url(path)).send().await.unwrap();
    assert_eq!(head.status(), 200);
    let kv = "/types/counters/buckets/b/keys/k";
    assert_eq!(
        s.client.delete(s.url(kv)).send().await.unwrap().status(),
        204
    );
    let r = s.get(path).await;
    assert_eq!(r.status(), 404);
    assert_eq!(r.headers()["x-riak-deleted"], "true");
}

#[tokio::test]
async fn sets_use_contexts_and_server_keys() {
    let s = setup().await;
    let r = post(
        &s,
        "/types/sets/buckets/b/datatypes",
        r#"{"add_all":["a","b"]}"#,
    )
    .await;
    assert_eq!(r.status(), 201);
    let location = header(&r, "location").unwrap();
    assert!(
        location.starts_with("/types/sets/buckets/b/datatypes/"),
        "{location}"
    );
    let got = json_of(s.get(&location).await).await;
    assert_eq!(got["value"], json!(["a", "b"]));
    let context = got["context"].as_str().unwrap().to_string();
    let body = json!({"context": context, "remove": "a", "add": "c"}).to_string();
    let r = post(&s, &format!("{location}?returnbody=true"), &body).await;
    assert_eq!(r.status(), 200);
    let got = json_of(r).await;
    assert_eq!(got["value"], json!(["b", "c"]));
    assert!(got["context"].is_string());
    let got = json_of(s.get(&format!("{location}?include_context=false")).await).await;
    assert_eq!(got, json!({"type": "set", "value": ["b", "c"]}));

    let r = post(&s, &location, r#"{"remove":"zz"}"#).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("not_present"));
    let other = json!({"context": context, "remove": "a"}).to_string();
    let r = post(&s, "/types/sets/buckets/b/datatypes/other", &other).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("another key"));
    let garbage = json!({"context": "Z2FyYmFnZQ==", "remove": "a"}).to_string();
    let r = post(&s, &location, &garbage).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().starts_with("invalid context"));
    let r = post(&s, &location, r#"{"context":"%%%","remove":"a"}"#).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().starts_with("Couldn't decode JSON"));
}

#[tokio::test]
async fn hlls_and_gsets_take_adds() {
    let s = setup().await;
    let path = "/types/hlls/buckets/b/datatypes/h?returnbody=true";
    let r = post(&s, path, r#"{"add_all":["a","b","c","d","e","a"]}"#).await;
    assert_eq!(json_of(r).await, json!({"type": "hll", "value": 5}));
    let r = post(
        &s,
        "/types/gsets/buckets/b/datatypes/g?returnbody=true",
        r#"{"add":"x"}"#,
    )
    .await;
    assert_eq!(json_of(r).await, json!({"type": "gset", "value": ["x"]}));
    let r = post(
        &s,
        "/types/gsets/buckets/b/datatypes/g",
        r#"{"remove":"x"}"#,
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.text().await.unwrap(),
        r#"Invalid operation on datatype 'gset': {"remove":"x"}"#
    );
}

#[tokio::test]
async fn legacy_counters_and_the_default_type_redirect() {
    let s = setup().await;
    let path = "/buckets/legacy/counters/k";
    let r = s.client.post(s.url(path)).body("1").send().await.unwrap();
    assert_eq!(r.status(), 409);
    assert_eq!(
        r.text().await.unwrap(),
        "Counters require bucket property 'allow_mult=true'"
    );
    let r = s
        .client
        .put(s.url("/buckets/legacy/props"))
        .header("content-type", "application/json")
        .body(r#"{"props":{"allow_mult":true}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(s.get(path).await.status(), 404);
    let send = |body: &'static str, q: &'static str| {
        s.client
            .post(s.url(&format!("{path}{q}")))
            .body(body)
            .send()
    };
    assert_eq!(send("10", "").await.unwrap().status(), 204);
    let r = send("-4", "?returnvalue=true").await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "6");
    assert_eq!(send("x", "").await.unwrap().status(), 400);
    assert_eq!(s.get(path).await.text().await.unwrap(), "6");
    let r = s.client.delete(s.url(path)).send().await.unwrap();
    assert_eq!(r.status(), 405);

    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirect
        .get(s.url("/types/default/buckets/legacy/datatypes/k"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 301);
    assert_eq!(
        header(&r, "location").unwrap(),
        "/buckets/legacy/counters/k"
    );
}

#[tokio::test]
async fn bad_requests_get_clear_statuses() {
    let s = setup().await;
    let path = "/types/counters/buckets/b/datatypes/k";
    let check = |r: reqwest::Response, status: u16| {
        assert_eq!(r.status(), status, "{r:?}");
        r
    };
    let r = check(post(&s, path, r#"{"increment":"x"}"#).await, 400);
    assert_eq!(
        r.text().await.unwrap(),
        r#"Invalid operation on datatype 'counter': {"increment":"x"}"#
    );
    let r = check(post(&s, path, "123456789012345678901234567890").await, 400);
    assert!(r.text().await.unwrap().contains("signed 64-bit range"));
    let r = check(post(&s, path, "{").await, 400);
    assert!(
        r.text()
            .await
            .unwrap()
            .starts_with("Couldn't decode JSON: ")
    );
    let r = check(
        post(&s, "/types/sets/buckets/b/datatypes/k", r#"{"add":5}"#).await,
        400,
    );
    assert!(
        r.text()
            .await
            .unwrap()
            .starts_with("Invalid operation on datatype 'set'")
    );
    let r = check(
        post(&s, "/types/nope/buckets/b/datatypes/k", "1").await,
        404,
    );
    assert_eq!(r.text().await.unwrap(), "Unknown bucket type: nope");
    check(s.get("/types/nope/buckets/b/datatypes/k").await, 404);
    let r = check(
        post(&s, "/types/maps/buckets/b/datatypes/k", "1").await,
        403,
    );
    assert_eq!(
        r.text().await.unwrap(),
        "Bucket datatype 'undefined' is not a supported type."
    );
    let r = s
        .client
        .post(s.url(path))
        .header("content-type", "text/plain")
        .body("1")
        .send()
        .await
        .unwrap();
    check(r, 406);
    check(s.delete(path).await, 405);
    let r = check(s.get(&format!("{path}?r=lots")).await, 400);
    assert!(r.text().await.unwrap().starts_with("r query parameter"));
    check(
        post(&s, &format!("{path}?include_context=maybe"), "1").await,
        400,
    );
    post(
        &s,
        "/types/counters/buckets/b/datatypes/max",
        &i64::MAX.to_string(),
    )
    .await;
    let r = check(
        post(&s, "/types/counters/buckets/b/datatypes/max", "1").await,
        400,
    );
    assert!(r.text().await.unwrap().starts_with("counter overflow"));
    s.assert_serving().await;
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused() {
    let http = eddy_api::http::HttpConfig {
        body_bytes_max: 64,
        ..Default::default()
    };
    let s = http_support::start_with(http_support::node_config(), http).await;
    let props = eddy_model::props::PropsPatch {
        datatype: Some(Some("set".into())),
        ..Default::default()
    };
    s.node.registry().create_type("sets", &props).unwrap();
    s.node.registry().activate_type("sets").unwrap();
    let big = json!({"add": "x".repeat(100)}).to_string();
    let r = post(&s, "/types/sets/buckets/b/datatypes/k", &big).await;
    assert_eq!(r.status(), 413);
}

#[tokio::test]
async fn stats_count_big_sets_served_from_decoded_states() {
    let s = setup().await;
    let path = "/types/sets/buckets/b/datatypes/big";
    let members: Vec<String> = (0..2_000).map(|i| format!("member-{i:06}")).collect();
    let body = json!({ "add_all": members }).to_string();
    assert_eq!(post(&s, path, &body).await.status(), 204);
    for m in ["one", "two", "three"] {
        let body = json!({ "add": m }).to_string();
        assert_eq!(post(&s, path, &body).await.status(), 204);
    }
    let st: Value = serde_json::from_str(&s.get("/stats").await.text().await.unwrap()).unwrap();
    assert_eq!(st["datatype_cache_entries"], 1, "{st}");
    assert_eq!(st["datatype_cache_hits_total"], 3);
    assert_eq!(st["datatype_cache_misses_total"], 0);
    assert!(st["datatype_cache_memory_bytes"].as_u64().unwrap() > 16 * 1024);
    let value = json_of(s.get(path).await).await;
    assert_eq!(value["value"].as_array().unwrap().len(), 2_003);
}
