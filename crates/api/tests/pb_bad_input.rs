//! Bad input over PB: each gets a clear error (or a quiet close), and the
//! server keeps answering other connections.

mod pb_support;

use std::time::Duration;

use eddy_api::pb::PbConfig;
use eddy_wire::codes;
use eddy_wire::proto::*;
use pb_support::*;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A fresh connection is still served.
async fn still_serving(server: &Server) {
    let mut c = Client::connect(server).await;
    assert!(c.ping().await, "a fresh connection gets its ping answered");
}

fn error_text(frame: Option<Frame>) -> String {
    expect::<RpbErrorResp>(frame, 255).unwrap_err()
}

/// Reads until the server closes the connection (fails if it does not).
async fn closed(c: &mut Client) -> bool {
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(10), c.stream.read(&mut buf)).await;
    matches!(read, Ok(Ok(0)) | Ok(Err(_)))
}

#[tokio::test]
async fn truncated_frames_close_quietly() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    c.stream
        .write_all(&[0, 0, 0, 10, codes::GET_REQ, 1, 2])
        .await
        .unwrap();
    c.stream.shutdown().await.unwrap();
    assert!(closed(&mut c).await);
    let mut half = Client::connect(&server).await;
    half.stream.write_all(&[0, 0]).await.unwrap();
    drop(half);
    still_serving(&server).await;
}

#[tokio::test]
async fn half_closed_connections_get_their_answer() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    c.send_raw(codes::PING_REQ, &[]).await;
    c.stream.shutdown().await.unwrap();
    assert_eq!(c.recv().await, Some((codes::PING_RESP, vec![])));
    assert!(closed(&mut c).await);
}

#[tokio::test]
async fn frames_over_the_limit_are_refused_and_closed() {
    let config = PbConfig {
        frame_bytes_max: 1024,
        ..PbConfig::default()
    };
    let server = start_with(config).await;
    let mut c = Client::connect(&server).await;
    let big = put_req(None, "b", "k", &"x".repeat(2000));
    c.send(codes::PUT_REQ, &big).await;
    let err = error_text(c.recv().await);
    assert!(err.contains("exceeds the limit of 1024"), "{err}");
    assert!(closed(&mut c).await);
    // A header alone announcing 4 GiB is refused before any body arrives.
    let mut c = Client::connect(&server).await;
    c.stream.write_all(&[0xff, 0xff, 0xff, 0xff]).await.unwrap();
    assert!(error_text(c.recv().await).contains("exceeds the limit"));
    still_serving(&server).await;
}

#[tokio::test]
async fn empty_frames_are_refused() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    c.stream.write_all(&[0, 0, 0, 0]).await.unwrap();
    assert!(error_text(c.recv().await).contains("empty frame"));
    assert!(closed(&mut c).await);
    still_serving(&server).await;
}

#[tokio::test]
async fn garbage_protobufs_get_a_decoding_error() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    for code in [
        codes::GET_REQ,
        codes::PUT_REQ,
        codes::SET_BUCKET_REQ,
        codes::LIST_KEYS_REQ,
    ] {
        c.send_raw(code, &[0xff, 0xff, 0xff, 0x07, 0x01]).await;
        let err = error_text(c.recv().await);
        assert!(err.starts_with("Message decoding error"), "{err}");
    }
    assert!(c.ping().await, "the connection stays usable");
    still_serving(&server).await;
}

#[tokio::test]
async fn unknown_codes_starttls_and_auth_are_refused() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    c.send_raw(99, &[]).await;
    assert_eq!(error_text(c.recv().await), "Unknown message code: 99");
    c.send_raw(codes::START_TLS, &[]).await;
    assert_eq!(
        error_text(c.recv().await),
        "Security not enabled; STARTTLS not allowed."
    );
    let auth = RpbAuthReq {
        user: b"u".to_vec(),
        password: b"p".to_vec(),
    };
    c.send(codes::AUTH_REQ, &auth).await;
    assert!(error_text(c.recv().await).contains("Security not enabled"));
    // Search (Yokozuna) is not served.
    c.send_raw(codes::SEARCH_QUERY_REQ, &[]).await;
    assert_eq!(
        error_text(c.recv().await),
        format!("Unknown message code: {}", codes::SEARCH_QUERY_REQ)
    );
    assert!(c.ping().await);
    still_serving(&server).await;
}

#[tokio::test]
async fn idle_and_slow_clients_do_not_block_others() {
    let server = start().await;
    let _idle = Client::connect(&server).await;
    let mut slow = Client::connect(&server).await;
    // Half a frame, then nothing.
    let mut body = Vec::new();
    put_req(None, "b", "k", "v").encode(&mut body).unwrap();
    let len = (body.len() + 1) as u32;
    slow.stream.write_all(&len.to_be_bytes()).await.unwrap();
    slow.stream.write_all(&[codes::PUT_REQ]).await.unwrap();
    let mut c = Client::connect(&server).await;
    c.put(&put_req(None, "b", "k2", "v")).await.unwrap();
    assert!(c.ping().await);
    // The slow client finishes its frame later and is answered.
    slow.stream.write_all(&body).await.unwrap();
    assert!(
        slow.recv()
            .await
            .is_some_and(|(code, _)| code == codes::PUT_RESP)
    );
}

#[tokio::test]
async fn read_timeout_closes_silent_connections() {
    let config = PbConfig {
        read_timeout: Some(Duration::from_millis(100)),
        ..PbConfig::default()
    };
    let server = start_with(config).await;
    let mut c = Client::connect(&server).await;
    assert!(closed(&mut c).await);
    still_serving(&server).await;
}

#[tokio::test]
async fn connections_over_the_limit_are_refused() {
    let config = PbConfig {
        connections_max: 2,
        ..PbConfig::default()
    };
    let server = start_with(config).await;
    let mut a = Client::connect(&server).await;
    let mut b = Client::connect(&server).await;
    assert!(a.ping().await && b.ping().await);
    // Started frames make both busy, so neither can be evicted.
    a.stream.write_all(&[0, 0]).await.unwrap();
    b.stream.write_all(&[0, 0]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = Client::connect(&server).await;
    let err = error_text(third.recv().await);
    assert!(err.contains("Too many connections"), "{err}");
    drop(a);
    // The freed slot is served again (the close is noticed asynchronously).
    for _ in 0..100 {
        let mut c = Client::connect(&server).await;
        c.send_raw(codes::PING_REQ, &[]).await;
        if c.recv().await == Some((codes::PING_RESP, vec![])) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("a freed connection slot was never reused");
}

#[tokio::test]
async fn shutdown_stops_the_listener_and_closes_idle_connections() {
    let node = node();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let served = tokio::spawn(eddy_api::pb::serve(
        listener,
        node,
        PbConfig::default(),
        shutdown,
    ));
    let mut idle = Client {
        stream: tokio::net::TcpStream::connect(addr).await.unwrap(),
    };
    assert!(idle.ping().await);
    stop.send(()).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), served).await;
    assert!(
        matches!(result, Ok(Ok(Ok(())))),
        "serve returns after shutdown"
    );
    assert!(closed(&mut idle).await);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "listener closed"
    );
}
