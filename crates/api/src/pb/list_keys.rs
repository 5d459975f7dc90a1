//! `RpbListKeysReq` (17) → a stream of `RpbListKeysResp` (18), the last one
//! with `done = true`.
//!
//! The fold runs on a blocking thread and hands chunks over a small
//! bounded channel, so a slow client slows the fold instead of filling
//! memory; a client that goes away closes the channel, which stops it.

use eddy_wire::codes;
use eddy_wire::proto::{RpbListKeysReq, RpbListKeysResp};
use std::time::Duration;

use eddy_model::KvError;
use prost::Message;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::error::PbError;
use super::request::{bucket_ref, timeout_ms};
use super::server::{Outbox, Session};

/// Chunks in flight between the fold and the connection.
const CHUNKS_IN_FLIGHT: usize = 4;

pub(crate) async fn handle(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbListKeysReq::decode(body)?;
    let bucket = bucket_ref(req.r#type, req.bucket)?;
    let deadline = timeout_ms(req.timeout).map(|ms| Instant::now() + Duration::from_millis(ms));
    let (tx, mut rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let node = session.node.clone();
    let fold = tokio::task::spawn_blocking(move || node.list_keys_blocking(&bucket, &tx));
    while let Some(keys) = next_chunk(&mut rx, deadline).await? {
        if keys.is_empty() {
            continue;
        }
        let resp = RpbListKeysResp { keys, done: None };
        out.push(codes::LIST_KEYS_RESP, &resp);
        out.flush().await?;
    }
    finished(fold).await?;
    let done = RpbListKeysResp {
        keys: Vec::new(),
        done: Some(true),
    };
    out.push(codes::LIST_KEYS_RESP, &done);
    Ok(())
}

/// The next chunk, `None` at the end; dropping the receiver on timeout
/// stops the fold.
async fn next_chunk(
    rx: &mut mpsc::Receiver<Vec<Vec<u8>>>,
    deadline: Option<Instant>,
) -> Result<Option<Vec<Vec<u8>>>, PbError> {
    match deadline {
        None => Ok(rx.recv().await),
        Some(d) => tokio::time::timeout_at(d, rx.recv())
            .await
            .map_err(|_| KvError::Timeout.into()),
    }
}

/// The fold's own result, once the channel has closed.
async fn finished(fold: tokio::task::JoinHandle<Result<(), KvError>>) -> Result<(), PbError> {
    match fold.await {
        Ok(result) => Ok(result?),
        Err(_) => Err(PbError::WorkerFailed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fold that has not delivered by the deadline ends the listing with
    /// Riak's `timeout`; one that has, or that has finished, does not.
    #[tokio::test]
    async fn the_deadline_ends_a_listing_that_is_not_done() {
        let (tx, mut rx) = mpsc::channel::<Vec<Vec<u8>>>(1);
        let soon = Some(Instant::now() + Duration::from_millis(5));
        let err = next_chunk(&mut rx, soon).await.unwrap_err();
        assert!(matches!(err, PbError::Kv(KvError::Timeout)), "{err:?}");
        tx.send(vec![b"k".to_vec()]).await.unwrap();
        let later = Some(Instant::now() + Duration::from_secs(60));
        assert_eq!(
            next_chunk(&mut rx, later).await.unwrap(),
            Some(vec![b"k".to_vec()])
        );
        drop(tx);
        assert_eq!(next_chunk(&mut rx, later).await.unwrap(), None);
    }
}
