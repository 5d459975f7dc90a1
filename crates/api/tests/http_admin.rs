//! `/admin/bucket-types`: create, list, show, update and activate bucket
//! types (what `eddy admin bucket-type` calls).

mod http_support;

use http_support::start;
use serde_json::Value;

#[tokio::test]
async fn bucket_type_lifecycle() {
    let s = start().await;
    let post = |path: &str, body: &'static str| {
        s.client
            .post(s.url(path))
            .header("content-type", "application/json")
            .body(body)
    };
    let r = post(
        "/admin/bucket-types/sets",
        r#"{"props":{"datatype":"set"}}"#,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
    let r = post("/admin/bucket-types/sets", r#"{"props":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409, "creating twice");
    let r = post("/admin/bucket-types/bad", r#"{"props":{"n_val":"x"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("n_val"));

    let shown: Value = serde_json::from_str(
        &s.get("/admin/bucket-types/sets")
            .await
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(shown["status"], "created");
    assert_eq!(shown["props"]["datatype"], "set");
    assert_eq!(
        s.put("/types/sets/buckets/b/keys/k", "v").await.status(),
        404,
        "not active yet"
    );

    let r = s
        .client
        .post(s.url("/admin/bucket-types/sets/activate"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let listed: Value =
        serde_json::from_str(&s.get("/admin/bucket-types").await.text().await.unwrap()).unwrap();
    let names: Vec<&str> = listed["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // The support node also creates "inactive" and "maps".
    assert_eq!(names, ["default", "inactive", "maps", "sets"]);
    assert_eq!(listed["types"][3]["status"], "active");

    let r = s
        .client
        .put(s.url("/admin/bucket-types/sets"))
        .header("content-type", "application/json")
        .body(r#"{"props":{"datatype":"map"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "datatype is immutable");
    assert_eq!(s.get("/admin/bucket-types/nope").await.status(), 404);
    let r = s
        .client
        .post(s.url("/admin/bucket-types/nope/activate"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn drop_bucket_empties_one_bucket_and_refuses_bad_requests() {
    let s = start().await;
    for k in ["a", "b", "c"] {
        assert_eq!(
            s.put(&format!("/buckets/gone/keys/{k}"), "v")
                .await
                .status(),
            204
        );
        assert_eq!(
            s.put(&format!("/buckets/kept/keys/{k}"), "v")
                .await
                .status(),
            204
        );
    }
    let r = s
        .client
        .delete(s.url("/admin/buckets/gone"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(answer["generation"], 1);
    assert_eq!(answer["bucket"], "gone");
    assert_eq!(answer["type"], "default");
    assert_eq!(answer["shared"], true);
    assert_eq!(s.get("/buckets/gone/keys/a").await.status(), 404);
    let listed: Value = serde_json::from_str(
        &s.get("/buckets/gone/keys?keys=true")
            .await
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(listed["keys"], serde_json::json!([]));
    assert_eq!(s.get("/buckets/kept/keys/a").await.status(), 200);
    let props: Value =
        serde_json::from_str(&s.get("/buckets/gone/props").await.text().await.unwrap()).unwrap();
    assert_eq!(props["props"]["generation"], 1);

    let r = s.get("/admin/buckets/gone").await;
    assert_eq!(r.status(), 405, "only DELETE");
    let r = s
        .client
        .delete(s.url("/admin/types/nope/buckets/b"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404, "unknown type");
    assert!(r.text().await.unwrap().contains("nope"));
    let r = s
        .client
        .delete(s.url("/admin/types/%FF/buckets/b"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "a type name that is not UTF-8");
}
