//! Client-controlled sizes over PB and HTTP: metadata past the per-object
//! limits is refused with a client error, and an object stored before the
//! limits (too many headers to render) answers HTTP 500, never a panic.

mod http_support;
mod pb_support;

use eddy_kv::NodeConfig;
use eddy_model::limits::{Limit, MetaLimits};
use eddy_model::{BucketRef, PutOptions, PutRequest};
use eddy_object::Content;
use eddy_wire::codes;
use eddy_wire::proto::{RpbBucketProps, RpbLink, RpbPair, RpbSetBucketReq};

fn rpb_pairs(n: usize) -> Vec<RpbPair> {
    (0..n)
        .map(|i| RpbPair {
            key: format!("m{i}").into_bytes(),
            value: Some(b"v".to_vec()),
        })
        .collect()
}

#[tokio::test]
async fn pb_put_with_too_many_usermeta_is_refused() {
    let server = pb_support::start().await;
    let mut c = pb_support::Client::connect(&server).await;
    let mut req = pb_support::put_req(None, "hl", "m", "v");
    req.content.usermeta = rpb_pairs(24_570);
    let err = c.put(&req).await.unwrap_err();
    assert!(err.contains("too many usermeta"), "{err}");
    req.content.usermeta = rpb_pairs(1000);
    c.put(&req).await.unwrap();
}

#[tokio::test]
async fn pb_put_with_too_many_link_bytes_is_refused() {
    let server = pb_support::start().await;
    let mut c = pb_support::Client::connect(&server).await;
    let mut req = pb_support::put_req(None, "hl", "l", "v");
    let link = RpbLink {
        bucket: Some(b"b".to_vec()),
        key: Some(vec![b'k'; 70 * 1024]),
        tag: Some(b"t".to_vec()),
    };
    req.content.links = vec![link];
    let err = c.put(&req).await.unwrap_err();
    assert!(err.contains("links of 71682 bytes exceeds"), "{err}");
    assert!(c.ping().await);
}

#[tokio::test]
async fn http_put_with_too_many_index_entries_is_a_400_counting_entries() {
    let server = http_support::start().await;
    let terms: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
    let r = server
        .client
        .put(server.url("/buckets/b/keys/k"))
        .header("content-type", "text/plain")
        .header("x-riak-index-n_int", terms.join(", "))
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("too many index entries: 1001 exceeds the limit of 1000"),
        "{text}"
    );
    assert_eq!(server.get("/buckets/b/keys/k").await.status(), 404);
}

#[tokio::test]
async fn http_put_with_a_huge_index_term_is_a_400() {
    let server = http_support::start().await;
    let r = server
        .client
        .put(server.url("/buckets/b/keys/k"))
        .header("content-type", "text/plain")
        .header("x-riak-index-t_bin", "x".repeat(9000))
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(text.contains("index term"), "{text}");
}

/// An object stored while the limits were higher (or merged from many
/// siblings) has more metadata than an HTTP answer can carry.
#[tokio::test]
async fn http_get_of_an_object_with_24570_usermeta_answers_500() {
    let many = Limit {
        entries: 100_000,
        bytes: 10 << 20,
    };
    let config = NodeConfig {
        meta_limits: MetaLimits {
            usermeta: many,
            ..MetaLimits::default()
        },
        ..http_support::node_config()
    };
    let server = http_support::start_with(config, Default::default()).await;
    let mut content = Content::new("v");
    content.meta.user_meta = (0..24_570)
        .map(|i| (format!("m{i}").into_bytes(), b"v".to_vec()))
        .collect();
    server
        .node
        .put(PutRequest {
            bucket: BucketRef::default_type("hl"),
            key: Some(b"m".to_vec()),
            context: None,
            content,
            options: PutOptions::default(),
        })
        .await
        .unwrap();
    let r = server.get("/buckets/hl/keys/m").await;
    assert_eq!(r.status(), 500);
    let text = r.text().await.unwrap();
    assert!(text.contains("header fields"), "{text}");
    server.assert_serving().await;
}

fn set_bucket(bucket: Vec<u8>, n_val: u32) -> RpbSetBucketReq {
    RpbSetBucketReq {
        bucket,
        props: RpbBucketProps {
            n_val: Some(n_val),
            ..Default::default()
        },
        r#type: None,
    }
}

async fn set_bucket_props(c: &mut pb_support::Client, req: &RpbSetBucketReq) -> Result<(), String> {
    c.call::<()>(codes::SET_BUCKET_REQ, req, codes::SET_BUCKET_RESP)
        .await
}

#[tokio::test]
async fn pb_set_bucket_with_a_5_mib_name_is_refused() {
    let server = pb_support::start().await;
    let mut c = pb_support::Client::connect(&server).await;
    let err = set_bucket_props(&mut c, &set_bucket(vec![b'b'; 5 << 20], 2))
        .await
        .unwrap_err();
    assert!(err.contains("exceeds the limit of 4096"), "{err}");
    assert!(c.ping().await);
}

#[tokio::test]
async fn pb_set_bucket_n_val_beyond_the_ring_is_refused() {
    let server = pb_support::start().await;
    let mut c = pb_support::Client::connect(&server).await;
    let err = set_bucket_props(&mut c, &set_bucket(b"b".to_vec(), u32::MAX))
        .await
        .unwrap_err();
    assert!(err.contains("n_val"), "{err}");
    set_bucket_props(&mut c, &set_bucket(b"b".to_vec(), 8))
        .await
        .unwrap();
}

#[tokio::test]
async fn http_props_n_val_beyond_the_ring_and_many_unknown_props_are_400() {
    let server = http_support::start().await;
    let put = |body: String| {
        server
            .client
            .put(server.url("/buckets/b/props"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = put(r#"{"props":{"n_val":4294967295}}"#.to_string())
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let unknown: Vec<String> = (0..65).map(|i| format!("\"x{i}\":1")).collect();
    let r = put(format!("{{\"props\":{{{}}}}}", unknown.join(",")))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(text.contains("unknown props"), "{text}");
    let big = format!("{{\"props\":{{\"x\":\"{}\"}}}}", "v".repeat(70 * 1024));
    let r = put(big).await.unwrap();
    assert_eq!(r.status(), 400);
    let props = server.get("/buckets/b/props").await.text().await.unwrap();
    assert!(!props.contains("x0") && !props.contains("vvvv"), "{props}");
}

#[tokio::test]
async fn http_props_of_a_bucket_name_over_the_limit_is_400() {
    let server = http_support::start().await;
    let name = "b".repeat(5000);
    let r = server.get(&format!("/buckets/{name}/props")).await;
    assert_eq!(r.status(), 400);
}
