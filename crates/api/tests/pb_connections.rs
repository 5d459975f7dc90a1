//! Connection handling of the PB listener: the request timeout cuts off
//! truncated frames and trickling clients, a full connection table evicts
//! its longest-idle connection for a newcomer, and a panicking handler
//! answers an error while its connection stays usable.

mod pb_support;

use std::sync::Arc;
use std::time::Duration;

use eddy_api::net::ConnectionTable;
use eddy_api::pb::PbConfig;
use eddy_wire::codes;
use pb_support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn short_request_timeout() -> PbConfig {
    PbConfig {
        request_timeout: Some(Duration::from_millis(300)),
        ..PbConfig::default()
    }
}

/// The error text of an `RpbErrorResp`, panicking on any other answer.
fn error_text(frame: Option<Frame>) -> String {
    expect::<eddy_wire::proto::RpbErrorResp>(frame, 255).unwrap_err()
}

/// Reads until the server closes the connection; false if it does not.
async fn closed(c: &mut Client) -> bool {
    let mut buf = [0u8; 64];
    loop {
        let read = tokio::time::timeout(Duration::from_secs(10), c.stream.read(&mut buf)).await;
        match read {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn a_truncated_frame_is_cut_off_by_the_request_timeout() {
    let server = start_with(short_request_timeout()).await;
    let mut c = Client::connect(&server).await;
    c.stream
        .write_all(&[0, 0, 0, 100, codes::PING_REQ, 1, 2, 3])
        .await
        .unwrap();
    let err = error_text(c.recv().await);
    assert!(err.contains("request not received within 300 ms"), "{err}");
    assert!(closed(&mut c).await);
    let mut fresh = Client::connect(&server).await;
    assert!(fresh.ping().await);
}

#[tokio::test]
async fn a_slowloris_client_is_cut_off() {
    let server = start_with(short_request_timeout()).await;
    let mut c = Client::connect(&server).await;
    let mut frame = 11u32.to_be_bytes().to_vec();
    frame.push(codes::PING_REQ);
    frame.extend_from_slice(&[0; 10]);
    // One byte every 100 ms: each read makes progress, the frame does not
    // finish within its 300 ms.
    for byte in frame {
        if c.stream.write_all(&[byte]).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let err = error_text(c.recv().await);
    assert!(err.contains("request not received"), "{err}");
}

#[tokio::test]
async fn a_full_table_evicts_an_idle_connection_for_a_newcomer() {
    let table = ConnectionTable::new(2);
    let config = PbConfig {
        table: Some(table.clone()),
        ..PbConfig::default()
    };
    let server = start_with(config).await;
    let mut a = Client::connect(&server).await;
    let mut b = Client::connect(&server).await;
    assert!(a.ping().await && b.ping().await);
    let mut newcomer = Client::connect(&server).await;
    assert!(newcomer.ping().await, "an idle connection made room");
    assert_eq!(table.evicted(), 1);
    assert_eq!(table.refused(), 0);
    assert!(table.open() <= 2);
    assert!(
        closed(&mut a).await,
        "the longest idle connection is closed"
    );
    assert!(b.ping().await, "the other one is still served");
}

#[tokio::test]
async fn a_newcomer_is_refused_only_when_every_connection_is_busy() {
    let table = ConnectionTable::new(1);
    let config = PbConfig {
        table: Some(Arc::clone(&table)),
        ..PbConfig::default()
    };
    let server = start_with(config).await;
    let mut busy = Client::connect(&server).await;
    assert!(busy.ping().await);
    // A started frame makes the connection busy.
    busy.stream.write_all(&[0, 0, 0, 5]).await.unwrap();
    let mut refused = None;
    for _ in 0..100 {
        let mut c = Client::connect(&server).await;
        c.send_raw(codes::PING_REQ, &[]).await;
        match c.recv().await {
            Some((codes::PING_RESP, _)) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => {
                refused = Some(error_text(other));
                break;
            }
        }
    }
    let err = refused.expect("a newcomer is refused");
    assert_eq!(err, "Too many connections: the limit is 1");
    assert!(table.refused() >= 1);
}

#[cfg(feature = "test-hooks")]
#[tokio::test]
async fn a_panicking_handler_answers_an_error_and_the_connection_stays_usable() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    c.send_raw(codes::TEST_PANIC_REQ, &[]).await;
    let err = error_text(c.recv().await);
    assert!(err.starts_with("Internal error"), "{err}");
    assert!(
        c.ping().await,
        "the same connection serves the next request"
    );
}

#[tokio::test]
async fn a_frame_past_the_request_budget_is_refused_until_room_is_freed() {
    let budget = eddy_api::net::RequestBudget::new(16 * 1024, Duration::from_millis(200));
    let config = PbConfig {
        budget: Some(budget.clone()),
        ..PbConfig::default()
    };
    let server = start_with(config).await;
    let body = vec![0u8; 12 * 1024];
    let mut frame = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    frame.push(codes::PING_REQ);
    frame.extend_from_slice(&body);
    // `holder` has its 12 KiB reserved while the frame is still arriving.
    let mut holder = Client::connect(&server).await;
    holder.stream.write_all(&frame[..100]).await.unwrap();
    let mut refused = Client::connect(&server).await;
    for _ in 0..100 {
        if budget.in_use() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    refused.stream.write_all(&frame).await.unwrap();
    let err = error_text(refused.recv().await);
    assert!(err.contains("Request budget exhausted"), "{err}");
    assert_eq!(budget.refused(), 1);
    holder.stream.write_all(&frame[100..]).await.unwrap();
    assert_eq!(holder.recv().await, Some((codes::PING_RESP, vec![])));
    let mut later = Client::connect(&server).await;
    later.stream.write_all(&frame).await.unwrap();
    assert_eq!(later.recv().await, Some((codes::PING_RESP, vec![])));
    assert_eq!(budget.in_use(), 0);
}
