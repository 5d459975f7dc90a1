//! Siblings over HTTP (300 as text/plain and multipart/mixed, `vtag`,
//! resolution with X-Riak-Vclock) and conditional requests.

mod http_support;

use http_support::{Server, header, start};

const KEY: &str = "/types/maps/buckets/b/keys/k";

async fn two_siblings(s: &Server) {
    assert_eq!(s.put(KEY, "one").await.status(), 204);
    assert_eq!(s.put(KEY, "two").await.status(), 204);
}

fn vtags(body: &str) -> Vec<String> {
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some("Siblings:"));
    lines.map(str::to_string).collect()
}

#[tokio::test]
async fn siblings_are_listed_as_text_and_fetched_by_vtag() {
    let s = start().await;
    two_siblings(&s).await;
    let r = s.get(KEY).await;
    assert_eq!(r.status(), 300);
    assert_eq!(header(&r, "content-type").unwrap(), "text/plain");
    assert!(header(&r, "x-riak-vclock").is_some());
    let tags = vtags(&r.text().await.unwrap());
    assert_eq!(tags.len(), 2);
    let mut values = Vec::new();
    for tag in &tags {
        let r = s.get(&format!("{KEY}?vtag={tag}")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "etag").unwrap(), format!("\"{tag}\""));
        values.push(r.text().await.unwrap());
    }
    values.sort();
    assert_eq!(values, vec!["one", "two"]);
    assert_eq!(s.get(&format!("{KEY}?vtag=nope")).await.status(), 404);
}

#[tokio::test]
async fn siblings_come_as_multipart_when_asked() {
    let s = start().await;
    two_siblings(&s).await;
    let r = s
        .client
        .get(s.url(KEY))
        .header("accept", "multipart/mixed, */*;q=0.5")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 300);
    let ct = header(&r, "content-type").unwrap();
    let boundary = ct
        .strip_prefix("multipart/mixed; boundary=")
        .unwrap()
        .to_string();
    let body = r.text().await.unwrap();
    let parts: Vec<&str> = body.split(&format!("\r\n--{boundary}")).collect();
    assert_eq!(parts.len(), 4, "{body}");
    let mut values: Vec<&str> = parts[1..3]
        .iter()
        .map(|p| {
            assert!(p.contains("Content-Type: text/plain"), "{p}");
            assert!(p.contains("Etag: "), "{p}");
            assert!(p.contains("Last-Modified: "), "{p}");
            p.split("\r\n\r\n").nth(1).unwrap()
        })
        .collect();
    values.sort();
    assert_eq!(values, vec!["one", "two"]);
    assert_eq!(parts[3], "--\r\n");
    // returnbody with siblings is a 300 too.
    let r = s.put(&format!("{KEY}?returnbody=true"), "three").await;
    assert_eq!(r.status(), 300);
    assert_eq!(vtags(&r.text().await.unwrap()).len(), 3);
}

#[tokio::test]
async fn a_write_with_the_context_resolves_siblings() {
    let s = start().await;
    two_siblings(&s).await;
    let r = s.get(KEY).await;
    let vclock = header(&r, "x-riak-vclock").unwrap();
    let r = s
        .client
        .put(s.url(KEY))
        .header("content-type", "text/plain")
        .header("x-riak-vclock", vclock)
        .body("merged")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = s.get(KEY).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "merged");
    let r = s
        .client
        .put(s.url(KEY))
        .header("content-type", "text/plain")
        .header("x-riak-vclock", "not base64!")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn conditional_gets_answer_304_and_412() {
    let s = start().await;
    s.put("/buckets/b/keys/c", "v").await;
    let r = s.get("/buckets/b/keys/c").await;
    let etag = header(&r, "etag").unwrap();
    let lm = header(&r, "last-modified").unwrap();
    let get_with = |name: &'static str, value: String| {
        s.client
            .get(s.url("/buckets/b/keys/c"))
            .header(name, value)
            .send()
    };
    assert_eq!(
        get_with("if-none-match", etag.clone())
            .await
            .unwrap()
            .status(),
        304
    );
    assert_eq!(
        get_with("if-none-match", "\"other\"".into())
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        get_with("if-modified-since", lm.clone())
            .await
            .unwrap()
            .status(),
        304
    );
    let old = "Mon, 01 Jan 2001 00:00:00 GMT".to_string();
    assert_eq!(
        get_with("if-modified-since", old.clone())
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        get_with("if-match", "\"other\"".into())
            .await
            .unwrap()
            .status(),
        412
    );
    assert_eq!(
        get_with("if-match", etag.clone()).await.unwrap().status(),
        200
    );
    assert_eq!(
        get_with("if-unmodified-since", old).await.unwrap().status(),
        412
    );
}

#[tokio::test]
async fn conditional_puts_are_refused_with_412() {
    let s = start().await;
    let put_with = |key: &str, name: &'static str, value: String| {
        s.client
            .put(s.url(&format!("/buckets/b/keys/{key}")))
            .header("content-type", "text/plain")
            .header(name, value)
            .body("new")
            .send()
    };
    // If-None-Match: * creates only.
    assert_eq!(
        put_with("x", "if-none-match", "*".into())
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(
        put_with("x", "if-none-match", "*".into())
            .await
            .unwrap()
            .status(),
        412
    );
    assert_eq!(s.get("/buckets/b/keys/x").await.status(), 200);
    // If-Match needs the current ETag.
    let etag = header(&s.get("/buckets/b/keys/x").await, "etag").unwrap();
    assert_eq!(
        put_with("x", "if-match", "\"stale\"".into())
            .await
            .unwrap()
            .status(),
        412
    );
    assert_eq!(
        put_with("x", "if-match", etag.clone())
            .await
            .unwrap()
            .status(),
        204
    );
    assert_eq!(
        put_with("x", "if-match", etag).await.unwrap().status(),
        412,
        "etag changed"
    );
    assert_eq!(
        put_with("missing", "if-match", "*".into())
            .await
            .unwrap()
            .status(),
        412
    );
    // X-Riak-If-Not-Modified: the stored context must be the one given.
    let vclock = header(&s.get("/buckets/b/keys/x").await, "x-riak-vclock").unwrap();
    let r = put_with("x", "x-riak-if-not-modified", vclock.clone())
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = put_with("x", "x-riak-if-not-modified", vclock)
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    // A conditional delete.
    let r = s
        .client
        .delete(s.url("/buckets/b/keys/x"))
        .header("if-match", "\"stale\"")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 412);
    s.assert_serving().await;
}
