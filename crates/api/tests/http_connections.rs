//! Connection handling of the HTTP listener: the request timeout cuts off
//! short bodies and trickled headers, a full connection table evicts its
//! longest-idle connection for a newcomer and answers 503 only when every
//! connection is busy, and a panicking handler answers 500 while its
//! connection stays usable.

mod http_support;

use std::time::Duration;

use eddy_api::http::HttpConfig;
use eddy_api::net::ConnectionTable;
use http_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn connect(server: &Server) -> TcpStream {
    let addr = server.base.trim_start_matches("http://");
    TcpStream::connect(addr).await.expect("connect")
}

/// Reads one response (head and a Content-Length body) as text; `None`
/// when the server closed first.
async fn response(s: &mut TcpStream) -> Option<String> {
    let read = async {
        let mut got = Vec::new();
        let mut byte = [0u8; 1];
        while !got.ends_with(b"\r\n\r\n") {
            if s.read(&mut byte).await.ok()? == 0 {
                return None;
            }
            got.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&got).to_lowercase();
        let len = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).await.ok()?;
        got.extend_from_slice(&body);
        Some(String::from_utf8_lossy(&got).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("answered in time")
}

async fn ping(s: &mut TcpStream) -> bool {
    let sent = s
        .write_all(b"GET /ping HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .is_ok();
    sent && response(s)
        .await
        .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
}

/// Reads until the server closes the connection; false if it does not.
async fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

async fn start_with_http(http: HttpConfig) -> Server {
    start_with(node_config(), http).await
}

fn short_timeout() -> HttpConfig {
    HttpConfig {
        request_timeout: Some(Duration::from_millis(300)),
        ..HttpConfig::default()
    }
}

const PARTIAL_PUT: &[u8] = b"PUT /buckets/b/keys/k HTTP/1.1\r\nhost: x\r\n\
    content-type: text/plain\r\ncontent-length: 100\r\n\r\n0123456789";

#[tokio::test]
async fn a_body_shorter_than_its_content_length_is_cut_off() {
    let server = start_with_http(short_timeout()).await;
    let mut s = connect(&server).await;
    s.write_all(PARTIAL_PUT).await.unwrap();
    let answer = response(&mut s).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
    assert!(answer.contains("request body not received"), "{answer}");
    assert!(closed(&mut s).await);
    let mut fresh = connect(&server).await;
    assert!(ping(&mut fresh).await);
}

#[tokio::test]
async fn trickled_headers_are_cut_off() {
    let server = start_with_http(short_timeout()).await;
    let mut s = connect(&server).await;
    for byte in b"GET /ping HTTP/1.1\r\nhost: x\r\nx-slow: aaaaaaaaaa\r\n\r\n" {
        if s.write_all(&[*byte]).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(closed(&mut s).await);
}

#[tokio::test]
async fn a_full_table_evicts_an_idle_connection_for_a_newcomer() {
    let table = ConnectionTable::new(2);
    let http = HttpConfig {
        table: Some(table.clone()),
        ..HttpConfig::default()
    };
    let server = start_with_http(http).await;
    let mut a = connect(&server).await;
    let mut b = connect(&server).await;
    assert!(ping(&mut a).await && ping(&mut b).await);
    let mut newcomer = connect(&server).await;
    assert!(ping(&mut newcomer).await, "an idle connection made room");
    assert_eq!(table.evicted(), 1);
    assert!(
        closed(&mut a).await,
        "the longest idle connection is closed"
    );
    assert!(ping(&mut b).await);
}

#[tokio::test]
async fn a_newcomer_gets_503_when_every_connection_is_busy() {
    let table = ConnectionTable::new(1);
    let http = HttpConfig {
        table: Some(table.clone()),
        ..HttpConfig::default()
    };
    let server = start_with_http(http).await;
    let mut busy = connect(&server).await;
    // A request waiting for the rest of its body keeps its connection busy.
    busy.write_all(PARTIAL_PUT).await.unwrap();
    let mut refused = None;
    for _ in 0..100 {
        let mut c = connect(&server).await;
        if ping(&mut c).await {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let mut c = connect(&server).await;
        refused = response(&mut c).await;
        break;
    }
    let answer = refused.expect("a newcomer is refused");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.contains("Too many connections: the limit is 1"),
        "{answer}"
    );
    assert!(table.refused() >= 1);
}

#[cfg(feature = "test-hooks")]
#[tokio::test]
async fn a_panicking_handler_answers_500_and_the_connection_stays_usable() {
    let server = start_with_http(HttpConfig::default()).await;
    let mut s = connect(&server).await;
    let req = format!(
        "GET {} HTTP/1.1\r\nhost: x\r\n\r\n",
        eddy_api::http::server::TEST_PANIC_PATH
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let answer = response(&mut s).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
    assert!(
        ping(&mut s).await,
        "the same connection serves the next request"
    );
}

#[tokio::test]
async fn stats_report_connections_and_evictions() {
    let table = ConnectionTable::new(1);
    let http = HttpConfig {
        table: Some(table.clone()),
        ..HttpConfig::default()
    };
    let server = start_with_http(http).await;
    let mut idle = connect(&server).await;
    assert!(ping(&mut idle).await);
    let mut s = connect(&server).await;
    s.write_all(b"GET /stats HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = response(&mut s).await.expect("an answer");
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let stats: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(stats["http_connections"], 1);
    assert_eq!(stats["pb_connections"], 0);
    assert_eq!(stats["connections_evicted_total"], 1);
    assert_eq!(stats["connections_refused_total"], 0);
}

#[tokio::test]
async fn a_body_past_the_request_budget_gets_503_until_room_is_freed() {
    let budget = eddy_api::net::RequestBudget::new(16 * 1024, Duration::from_millis(200));
    let http = HttpConfig {
        budget: Some(budget.clone()),
        ..HttpConfig::default()
    };
    let server = start_with_http(http).await;
    let value = vec![b'v'; 12 * 1024];
    let head = format!(
        "PUT /buckets/b/keys/k HTTP/1.1\r\nhost: x\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\n\r\n",
        value.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(&value);
    let mut holder = connect(&server).await;
    holder.write_all(&request[..200]).await.unwrap();
    for _ in 0..100 {
        if budget.in_use() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut refused = connect(&server).await;
    refused.write_all(&request).await.unwrap();
    let answer = response(&mut refused).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("Request budget exhausted"), "{answer}");
    holder.write_all(&request[200..]).await.unwrap();
    let answer = response(&mut holder).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    let mut later = connect(&server).await;
    later.write_all(&request).await.unwrap();
    let answer = response(&mut later).await.expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    assert_eq!(budget.in_use(), 0);
}
