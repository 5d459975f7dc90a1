//! Finding 6's HTTP answers, as Riak gives them: list `timeout=0` means no
//! timeout (as over PB), `If-Unmodified-Since` in the past is 412, a body
//! in a transfer coding other than chunked is 501 (never stored coded),
//! and keys that are not UTF-8 are listed percent-encoded.

mod http_support;

use std::time::Duration;

use eddy_api::http::HttpConfig;
use eddy_api::pb::PbConfig;
use eddy_wire::{codes, proto};
use http_support::Server;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PAST: &str = "Sat, 01 Jan 2000 00:00:00 GMT";
/// What `date -R` prints: RFC 1123 with a numeric zone, which Riak reads.
const PAST_ZONED: &str = "Sat, 01 Jan 2000 00:00:00 +0000";
const FUTURE: &str = "Fri, 01 Jan 2100 00:00:00 GMT";

/// Sends raw request bytes and returns the whole answer as text.
async fn raw(server: &Server, req: &[u8]) -> String {
    let addr = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(req).await.unwrap();
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("answered in time")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// With the clock paused, time jumps ahead whenever the runtime waits, so
/// a listing under a deadline of "now" times out while its fold runs.
#[tokio::test(start_paused = true)]
async fn list_timeout_zero_means_no_timeout_as_over_pb() {
    let http = HttpConfig {
        request_timeout: None,
        ..HttpConfig::default()
    };
    let server = http_support::start_with(http_support::node_config(), http).await;
    assert_eq!(server.put("/buckets/t0/keys/k1", "v").await.status(), 204);
    let r = server.get("/buckets/t0/keys?keys=true&timeout=0").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), r#"{"keys":["k1"]}"#);
    let r = server.get("/buckets/t0/keys?keys=stream&timeout=0").await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(
        text.contains(r#""k1""#) && !text.contains("error"),
        "{text}"
    );
    let r = server.get("/buckets?buckets=true&timeout=0").await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains(r#""t0""#));
}

#[tokio::test]
async fn if_unmodified_since_in_the_past_is_412() {
    let server = http_support::start().await;
    let path = "/buckets/ius/keys/k";
    assert_eq!(server.put(path, "one").await.status(), 204);
    let get = |date: &'static str| {
        server
            .client
            .get(server.url(path))
            .header("if-unmodified-since", date)
            .send()
    };
    assert_eq!(get(PAST).await.unwrap().status(), 412);
    assert_eq!(get(PAST_ZONED).await.unwrap().status(), 412);
    assert_eq!(get(FUTURE).await.unwrap().status(), 200);
    let put = server
        .client
        .put(server.url(path))
        .header("content-type", "text/plain")
        .header("if-unmodified-since", PAST_ZONED)
        .body("two")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 412);
    let delete = server
        .client
        .delete(server.url(path))
        .header("if-unmodified-since", PAST)
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 412);
    let r = server.get(path).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "one");
}

#[tokio::test]
async fn a_coded_transfer_is_501_and_not_stored() {
    let server = http_support::start().await;
    let answer = raw(
        &server,
        b"PUT /buckets/te/keys/gz HTTP/1.1\r\nHost: eddy\r\nContent-Type: text/plain\r\n\
          Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n\
          5\r\nhello\r\n0\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 501"), "{answer}");
    assert_eq!(server.get("/buckets/te/keys/gz").await.status(), 404);
    let answer = raw(
        &server,
        b"PUT /buckets/te/keys/plain HTTP/1.1\r\nHost: eddy\r\nContent-Type: text/plain\r\n\
          Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
          5\r\nhello\r\n0\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    let r = server.get("/buckets/te/keys/plain").await;
    assert_eq!(r.text().await.unwrap(), "hello");
}

/// Stores `key` in bucket `raw` over PB, served on the same node.
async fn put_over_pb(server: &Server, key: &[u8]) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let node = server.node.clone();
    let pending = std::future::pending::<()>();
    tokio::spawn(eddy_api::pb::serve(
        listener,
        node,
        PbConfig::default(),
        pending,
    ));
    let req = proto::RpbPutReq {
        bucket: b"raw".to_vec(),
        key: Some(key.to_vec()),
        content: proto::RpbContent {
            value: b"v".to_vec(),
            ..Default::default()
        },
        ..Default::default()
    };
    let body = req.encode_to_vec();
    let mut frame = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    frame.push(codes::PUT_REQ);
    frame.extend_from_slice(&body);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&frame).await.unwrap();
    let mut header = [0u8; 5];
    stream.read_exact(&mut header).await.unwrap();
    assert_eq!(header[4], codes::PUT_RESP);
}

#[tokio::test]
async fn keys_that_are_not_utf8_are_listed_percent_encoded() {
    let server = http_support::start().await;
    put_over_pb(&server, b"\xff\xfea").await;
    put_over_pb(&server, b"plain").await;
    let r = server.get("/buckets/raw/keys?keys=true").await;
    let text = r.text().await.unwrap();
    assert_eq!(text, r#"{"keys":["plain","%FF%FEa"]}"#);
    let r = server.get("/buckets/raw/keys?keys=stream").await;
    let text = r.text().await.unwrap();
    assert!(text.contains(r#""%FF%FEa""#), "{text}");
    assert!(!text.contains('\u{FFFD}'), "{text}");
    let r = server.get("/buckets/raw/keys/%FF%FEa").await;
    assert_eq!(r.status(), 200, "the listed name reads the object");
}
