//! Bucket and bucket-type props over HTTP.

mod http_support;

use http_support::{Server, header, start};
use serde_json::{Value, json};

async fn props(s: &Server, path: &str) -> Value {
    let r = s.get(path).await;
    assert_eq!(r.status(), 200, "{path}");
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    v["props"].clone()
}

async fn put_json(s: &Server, path: &str, body: &str) -> reqwest::Response {
    s.client
        .put(s.url(path))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn bucket_props_are_read_set_and_reset() {
    let s = start().await;
    let p = props(&s, "/buckets/pb/props").await;
    assert_eq!(p["n_val"], 3);
    assert_eq!(p["allow_mult"], false);
    assert_eq!(p["r"], "quorum");
    assert_eq!(p["name"], "pb");
    assert_eq!(p["active"], true);
    assert_eq!(
        p["chash_keyfun"],
        json!({"mod": "riak_core_util", "fun": "chash_std_keyfun"})
    );
    let r = put_json(
        &s,
        "/buckets/pb/props",
        r#"{"props":{"n_val":2,"allow_mult":true}}"#,
    )
    .await;
    assert_eq!(r.status(), 204);
    let p = props(&s, "/buckets/pb/props").await;
    assert_eq!(
        (p["n_val"].clone(), p["allow_mult"].clone()),
        (json!(2), json!(true))
    );
    let p = props(&s, "/riak/pb").await;
    assert_eq!(p["n_val"], 2, "the legacy resource serves props");
    let r = put_json(&s, "/riak/pb", r#"{"props":{"n_val":1}}"#).await;
    assert_eq!(r.status(), 204);
    assert_eq!(props(&s, "/buckets/pb/props").await["n_val"], 1);
    let r = s.delete("/buckets/pb/props").await;
    assert_eq!(r.status(), 204);
    assert_eq!(props(&s, "/buckets/pb/props").await["n_val"], 3);
    let p = props(&s, "/types/maps/buckets/pb/props").await;
    assert_eq!(p["allow_mult"], true);
}

#[tokio::test]
async fn bad_props_are_refused_and_change_nothing() {
    let s = start().await;
    let r = put_json(&s, "/buckets/pb/props", "{not json").await;
    assert_eq!(r.status(), 400);
    assert!(
        r.text()
            .await
            .unwrap()
            .starts_with("bucket PUT must be a JSON object")
    );
    let r = put_json(&s, "/buckets/pb/props", r#"{"n_val":2}"#).await;
    assert_eq!(r.status(), 400);
    let r = put_json(&s, "/buckets/pb/props", r#"{"props":{"n_val":"three"}}"#).await;
    assert_eq!(r.status(), 400);
    let body: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert!(body.get("n_val").is_some(), "{body}");
    let r = put_json(&s, "/buckets/pb/props", r#"{"props":{"n_val":0}}"#).await;
    assert_eq!(r.status(), 400);
    let r = put_json(&s, "/buckets/pb/props", r#"{"props":{"r":"most"}}"#).await;
    assert_eq!(r.status(), 400);
    let r = put_json(
        &s,
        "/types/maps/buckets/pb/props",
        r#"{"props":{"write_once":true}}"#,
    )
    .await;
    assert_eq!(r.status(), 400, "immutable");
    let r = s
        .client
        .put(s.url("/buckets/pb/props"))
        .header("content-type", "text/plain")
        .body(r#"{"props":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    assert_eq!(props(&s, "/buckets/pb/props").await["n_val"], 3);
    assert_eq!(s.get("/types/nope/buckets/pb/props").await.status(), 404);
    let r = s.get("/types/inactive/buckets/pb/props").await;
    assert_eq!(r.status(), 404);
    s.assert_serving().await;
}

#[tokio::test]
async fn type_props_are_read_and_updated() {
    let s = start().await;
    let p = props(&s, "/types/maps/props").await;
    assert_eq!(p["allow_mult"], true);
    assert_eq!(p["dvv_enabled"], true);
    assert_eq!(p["active"], true);
    let p = props(&s, "/types/inactive/props").await;
    assert_eq!(p["active"], false);
    let r = put_json(&s, "/types/maps/props", r#"{"props":{"n_val":5}}"#).await;
    assert_eq!(r.status(), 204);
    assert_eq!(props(&s, "/types/maps/props").await["n_val"], 5);
    assert_eq!(props(&s, "/types/maps/buckets/x/props").await["n_val"], 5);
    let r = put_json(&s, "/types/maps/props", r#"{"props":{"datatype":"set"}}"#).await;
    assert_eq!(r.status(), 400);
    let r = put_json(&s, "/types/maps/props", "[]").await;
    assert_eq!(r.status(), 400);
    let r = s.get("/types/nope/props").await;
    assert_eq!(r.status(), 404);
    assert_eq!(header(&r, "content-type").unwrap(), "text/plain");
    assert_eq!(r.text().await.unwrap(), "Unknown bucket type: nope");
    let r = put_json(&s, "/types/default/props", r#"{"props":{"n_val":2}}"#).await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn unimplemented_props_are_refused_by_name() {
    let s = start().await;
    for (field, body) in [
        (
            "postcommit",
            r#"{"props":{"postcommit":[{"mod":"m","fun":"f"}]}}"#,
        ),
        ("consistent", r#"{"props":{"consistent":true}}"#),
        ("old_vclock", r#"{"props":{"old_vclock":1}}"#),
    ] {
        let r = put_json(&s, "/buckets/pb/props", body).await;
        assert_eq!(r.status(), 400, "{field}");
        let text = r.text().await.unwrap();
        assert!(
            text.contains(&format!("bucket property '{field}' is not supported")),
            "{text}"
        );
    }
    // Riak's defaults, as a client writes back what it read, are fine.
    let p = props(&s, "/buckets/pb/props").await;
    let body = json!({ "props": p }).to_string();
    assert_eq!(put_json(&s, "/buckets/pb/props", &body).await.status(), 204);
}

#[tokio::test]
async fn a_ttl_is_set_as_seconds_or_a_duration_and_read_back_as_seconds() {
    let s = start().await;
    let r = put_json(&s, "/buckets/t/props", r#"{"props":{"ttl":"30d"}}"#).await;
    assert_eq!(r.status(), 204);
    assert_eq!(props(&s, "/buckets/t/props").await["ttl"], 30 * 86_400);
    let r = put_json(&s, "/buckets/t/props", r#"{"props":{"ttl":90}}"#).await;
    assert_eq!(r.status(), 204);
    assert_eq!(props(&s, "/buckets/t/props").await["ttl"], 90);
    let r = put_json(&s, "/buckets/t/props", r#"{"props":{"ttl":null}}"#).await;
    assert_eq!(r.status(), 204);
    assert!(props(&s, "/buckets/t/props").await.get("ttl").is_none());
    for bad in [r#""soon""#, "-5", "1.5", r#""1.5s""#, "true"] {
        let body = format!(r#"{{"props":{{"ttl":{bad}}}}}"#);
        let r = put_json(&s, "/buckets/t/props", &body).await;
        assert_eq!(r.status(), 400, "{bad}");
        assert!(r.text().await.unwrap().contains("ttl"), "{bad}");
    }
}

#[tokio::test]
async fn a_put_that_cannot_meet_node_confirms_is_503_as_in_riak() {
    let s = start().await;
    let r = put_json(&s, "/buckets/nhs/props", r#"{"props":{"node_confirms":2}}"#).await;
    assert_eq!(r.status(), 204);
    let r = s
        .client
        .put(s.url("/buckets/nhs/keys/k"))
        .header("content-type", "text/plain")
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(
        r.text().await.unwrap(),
        "node_confirms-value unsatisfied: 1/2\n"
    );
    let r = put_json(
        &s,
        "/buckets/nhs/props",
        r#"{"props":{"sync_on_write":"never"}}"#,
    )
    .await;
    assert_eq!(r.status(), 400);
}
