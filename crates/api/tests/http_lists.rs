//! Key and bucket lists over HTTP, whole and streamed.

mod http_support;

use http_support::{header, start};
use serde_json::Value;

/// Splits a streamed body into its JSON objects.
fn objects(body: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(body)
        .into_iter::<Value>()
        .map(|v| v.unwrap())
        .collect()
}

fn names(v: &Value, field: &str) -> Vec<String> {
    let mut out: Vec<String> = v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn keys_are_listed_whole_and_streamed() {
    let s = start().await;
    let expected: Vec<String> = (0..30).map(|i| format!("k{i:02}")).collect();
    for k in &expected {
        s.put(&format!("/buckets/lb/keys/{k}"), "v").await;
    }
    s.put("/buckets/other/keys/x", "v").await;
    let r = s.get("/buckets/lb/keys?keys=true").await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type").unwrap(), "application/json");
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(names(&v, "keys"), expected);

    let r = s.get("/buckets/lb/keys?keys=stream").await;
    assert_eq!(r.status(), 200);
    let chunks = objects(&r.text().await.unwrap());
    let mut streamed: Vec<String> = chunks.iter().flat_map(|c| names(c, "keys")).collect();
    streamed.sort();
    assert_eq!(streamed, expected);
    assert_eq!(chunks.last().unwrap()["keys"], serde_json::json!([]));

    let r = s.get("/riak/lb?keys=true").await;
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(names(&v, "keys"), expected);
    assert_eq!(v["props"]["name"], "lb", "legacy lists carry props");
    let r = s.get("/riak/lb?keys=stream&props=false").await;
    let chunks = objects(&r.text().await.unwrap());
    assert!(chunks.iter().all(|c| c.get("props").is_none()));

    let r = s.get("/types/maps/buckets/lb/keys?keys=true").await;
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert!(names(&v, "keys").is_empty());
}

#[tokio::test]
async fn buckets_are_listed_per_type() {
    let s = start().await;
    s.put("/buckets/b1/keys/k", "v").await;
    s.put("/buckets/b2/keys/k", "v").await;
    s.put("/types/maps/buckets/t1/keys/k", "v").await;
    let r = s.get("/buckets?buckets=true").await;
    assert_eq!(r.status(), 200);
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(names(&v, "buckets"), vec!["b1", "b2"]);
    let r = s.get("/riak?buckets=true").await;
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(names(&v, "buckets"), vec!["b1", "b2"]);
    let r = s.get("/types/maps/buckets?buckets=stream").await;
    let chunks = objects(&r.text().await.unwrap());
    let streamed: Vec<String> = chunks.iter().flat_map(|c| names(c, "buckets")).collect();
    assert_eq!(streamed, vec!["t1"]);
    assert_eq!(
        s.get("/types/nope/buckets?buckets=true").await.status(),
        404
    );
    assert_eq!(
        s.get("/types/nope/buckets/b/keys?keys=true").await.status(),
        404
    );
    assert_eq!(s.get("/buckets?buckets=maybe").await.status(), 400);
}
