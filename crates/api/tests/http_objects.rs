//! Objects over HTTP: the three URL styles, metadata round trips,
//! returnbody, server-generated keys, HEAD, deletes and tombstones.

mod http_support;

use http_support::{header, start};

#[tokio::test]
async fn all_three_url_styles_reach_the_same_object() {
    let s = start().await;
    let r = s.put("/buckets/b/keys/k", "one").await;
    assert_eq!(r.status(), 204);
    for path in [
        "/buckets/b/keys/k",
        "/riak/b/k",
        "/types/default/buckets/b/keys/k",
    ] {
        let r = s.get(path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.text().await.unwrap(), "one");
    }
    let r = s.put("/types/maps/buckets/b/keys/k", "typed").await;
    assert_eq!(r.status(), 204);
    let r = s.get("/types/maps/buckets/b/keys/k").await;
    assert_eq!(r.text().await.unwrap(), "typed");
    let r = s.get("/buckets/b/keys/k").await;
    assert_eq!(r.text().await.unwrap(), "one", "types do not share keys");
}

#[tokio::test]
async fn names_are_percent_decoded_like_riak() {
    let s = start().await;
    assert_eq!(
        s.put("/buckets/my%20bucket/keys/a%2Fb", "v").await.status(),
        204
    );
    let r = s.get("/riak/my+bucket/a%2fb").await;
    assert_eq!(r.status(), 200);
    assert_eq!(s.put("/buckets/b/keys/%FF%00", "bytes").await.status(), 204);
    assert_eq!(
        s.get("/buckets/b/keys/%FF%00").await.text().await.unwrap(),
        "bytes"
    );
}

#[tokio::test]
async fn metadata_round_trips() {
    let s = start().await;
    let r = s
        .client
        .put(s.url("/buckets/b/keys/meta"))
        .header("content-type", "application/json; charset=utf-8")
        .header("content-encoding", "identity")
        .header("x-riak-meta-color", "blue")
        .header("x-riak-meta-Size", "xl")
        .header("x-riak-index-email_bin", "a@x.org, b@x.org")
        .header("x-riak-index-age_int", "42")
        .header(
            "link",
            "</riak/people/ann>; riaktag=\"friend\", </buckets/people/keys/bob>; riaktag=\"boss\"",
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let r = s.get("/buckets/b/keys/meta").await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "content-type").unwrap(),
        "application/json; charset=utf-8"
    );
    assert_eq!(header(&r, "content-encoding").unwrap(), "identity");
    assert_eq!(header(&r, "x-riak-meta-color").unwrap(), "blue");
    assert_eq!(header(&r, "x-riak-meta-size").unwrap(), "xl");
    assert_eq!(
        header(&r, "x-riak-index-email_bin").unwrap(),
        "a@x.org, b@x.org"
    );
    assert_eq!(header(&r, "x-riak-index-age_int").unwrap(), "42");
    let link = header(&r, "link").unwrap();
    assert!(link.contains("</buckets/b>; rel=\"up\""), "{link}");
    assert!(
        link.contains("</buckets/people/keys/ann>; riaktag=\"friend\""),
        "{link}"
    );
    assert!(
        link.contains("</buckets/people/keys/bob>; riaktag=\"boss\""),
        "{link}"
    );
    let etag = header(&r, "etag").unwrap();
    assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2);
    let lm = header(&r, "last-modified").unwrap();
    assert!(lm.ends_with(" GMT"), "{lm}");
    assert!(header(&r, "x-riak-vclock").is_some());
    let legacy = s.get("/riak/b/meta").await;
    let link = header(&legacy, "link").unwrap();
    assert!(
        link.contains("</riak/people/ann>; riaktag=\"friend\""),
        "{link}"
    );
    assert!(link.contains("</riak/b>; rel=\"up\""), "{link}");
}

#[tokio::test]
async fn put_with_returnbody_and_post_with_generated_keys() {
    let s = start().await;
    let r = s.put("/buckets/b/keys/k?returnbody=true", "body").await;
    assert_eq!(r.status(), 200);
    assert!(header(&r, "x-riak-vclock").is_some());
    assert!(header(&r, "etag").is_some());
    assert_eq!(r.text().await.unwrap(), "body");

    for (path, prefix) in [
        ("/buckets/b/keys", "/buckets/b/keys/"),
        ("/riak/b", "/riak/b/"),
        ("/types/maps/buckets/b/keys", "/types/maps/buckets/b/keys/"),
    ] {
        let r = s
            .client
            .post(s.url(path))
            .header("content-type", "text/plain")
            .body("made")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{path}");
        let location = header(&r, "location").unwrap();
        assert!(location.starts_with(prefix), "{location}");
        assert!(location.len() > prefix.len());
        let r = s.get(&location).await;
        assert_eq!(r.text().await.unwrap(), "made");
    }
    let r = s
        .client
        .post(s.url("/buckets/b/keys?returnbody=true"))
        .header("content-type", "text/plain")
        .body("rb")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert!(header(&r, "location").is_some());
    assert_eq!(r.text().await.unwrap(), "rb");
    // POST to a key is a PUT.
    let r = s
        .client
        .post(s.url("/buckets/b/keys/posted"))
        .header("content-type", "text/plain")
        .body("p")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
}

#[tokio::test]
async fn head_answers_headers_without_a_body() {
    let s = start().await;
    s.put("/buckets/b/keys/h", "hello").await;
    let r = s
        .client
        .head(s.url("/buckets/b/keys/h"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(header(&r, "etag").is_some());
    assert_eq!(r.text().await.unwrap(), "");
    let r = s
        .client
        .head(s.url("/buckets/b/keys/none"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn deletes_leave_tombstones_that_read_as_not_found() {
    let s = start().await;
    let r = s.get("/buckets/b/keys/never").await;
    assert_eq!(r.status(), 404);
    assert_eq!(r.text().await.unwrap(), "not found\n");
    s.put("/buckets/b/keys/gone", "x").await;
    s.put("/buckets/b/keys/kept", "y").await;
    let r = s.delete("/buckets/b/keys/gone").await;
    assert_eq!(r.status(), 204);
    let r = s.get("/buckets/b/keys/gone").await;
    assert_eq!(r.status(), 404);
    assert_eq!(header(&r, "x-riak-deleted").as_deref(), Some("true"));
    assert!(header(&r, "x-riak-vclock").is_some());
    let r = s.get("/buckets/b/keys/gone?deletedvclock=false").await;
    assert_eq!(r.status(), 404);
    assert!(header(&r, "x-riak-deleted").is_none());
    let r = s.delete("/buckets/b/keys/never").await;
    assert_eq!(r.status(), 404);
    let r = s.get("/buckets/b/keys?keys=true").await;
    let body = r.text().await.unwrap();
    assert!(body.contains("kept") && !body.contains("gone"), "{body}");
    // A delete with the context it read.
    let r = s.get("/riak/b/kept").await;
    let vclock = header(&r, "x-riak-vclock").unwrap();
    let r = s
        .client
        .delete(s.url("/riak/b/kept"))
        .header("x-riak-vclock", vclock)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(s.get("/riak/b/kept").await.status(), 404);
}
