//! `RpbListBucketsReq` (15) → `RpbListBucketsResp` (16): one answer, or with
//! `stream` several, the last one with `done = true`.

use eddy_wire::codes;
use eddy_wire::proto::{RpbListBucketsReq, RpbListBucketsResp};
use std::time::Duration;

use eddy_model::KvError;
use prost::Message;

use super::error::PbError;
use super::request::{timeout_ms, type_name};
use super::server::{Outbox, Session};

/// Buckets per streamed answer.
const BUCKETS_PER_CHUNK: usize = 100;

pub(crate) async fn handle(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbListBucketsReq::decode(body)?;
    let bucket_type = type_name(req.r#type)?;
    let node = session.node.clone();
    let fold = tokio::task::spawn_blocking(move || node.list_buckets_blocking(&bucket_type));
    let buckets = match timeout_ms(req.timeout) {
        None => fold.await,
        Some(ms) => tokio::time::timeout(Duration::from_millis(ms), fold)
            .await
            .map_err(|_| KvError::Timeout)?,
    };
    let buckets = finished_value(buckets)?;
    match req.stream.unwrap_or(false) {
        true => stream(out, buckets),
        false => out.push(
            codes::LIST_BUCKETS_RESP,
            &RpbListBucketsResp {
                buckets,
                done: None,
            },
        ),
    }
    Ok(())
}

fn finished_value(
    joined: Result<Result<Vec<Vec<u8>>, KvError>, tokio::task::JoinError>,
) -> Result<Vec<Vec<u8>>, PbError> {
    match joined {
        Ok(result) => Ok(result?),
        Err(_) => Err(PbError::WorkerFailed),
    }
}

fn stream(out: &mut Outbox, buckets: Vec<Vec<u8>>) {
    for chunk in buckets.chunks(BUCKETS_PER_CHUNK) {
        let resp = RpbListBucketsResp {
            buckets: chunk.to_vec(),
            done: None,
        };
        out.push(codes::LIST_BUCKETS_RESP, &resp);
    }
    let done = RpbListBucketsResp {
        buckets: Vec::new(),
        done: Some(true),
    };
    out.push(codes::LIST_BUCKETS_RESP, &done);
}
