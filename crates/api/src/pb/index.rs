//! `RpbIndexReq` (25) → `RpbIndexResp` (26): a 2i query. Without `stream`
//! one response holds the page (keys, or `(term, key)` pairs with
//! `return_terms`) and its continuation; with `stream` the answer comes
//! in responses of at most [`STREAM_CHUNK`] results as the query's steps
//! are merged (without `max_results`, every entry: no limit), the last
//! with `done = true` and the continuation.
//!
//! An equality query needs `key`, a range `range_min` and `range_max`,
//! as Riak checks them; `$bucket` needs neither. The query runs on a
//! blocking thread.

use std::time::Duration;

use eddy_model::KvError;
use eddy_model::index::{IndexPage, IndexRequest};
use eddy_wire::codes;
use eddy_wire::proto::{RpbIndexReq, RpbIndexResp, RpbPair};
use prost::Message;

use super::error::PbError;
use super::request::bucket_ref;
use super::server::{Outbox, Session};

/// Results per streamed response.
const STREAM_CHUNK: usize = 1000;
const QTYPE_EQ: i32 = 0;

pub(crate) async fn handle(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbIndexReq::decode(body)?;
    let stream = req.stream.unwrap_or(false);
    let bucket = bucket_ref(req.r#type.clone(), req.bucket.clone())?;
    let query = index_request(req)?;
    let node = session.node.clone();
    if !stream {
        let page = tokio::task::spawn_blocking(move || node.index_query_blocking(&bucket, &query))
            .await
            .map_err(|_| PbError::WorkerFailed)??;
        out.push(
            codes::INDEX_RESP,
            &response(&page, 0..page.results.len(), true),
        );
        return Ok(());
    }
    // The query's steps come over a small channel as they are merged, so
    // a stream of any length holds a step or two in memory.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<IndexPage>(2);
    let worker = tokio::task::spawn_blocking(move || {
        node.index_stream_blocking(&bucket, &query, |page| tx.blocking_send(page).is_ok())
    });
    let mut continuation = None;
    while let Some(page) = rx.recv().await {
        let mut from = 0;
        while from < page.results.len() {
            let to = (from + STREAM_CHUNK).min(page.results.len());
            out.push(codes::INDEX_RESP, &response(&page, from..to, false));
            out.flush().await?;
            from = to;
        }
        continuation = page.continuation;
    }
    worker.await.map_err(|_| PbError::WorkerFailed)??;
    let done = RpbIndexResp {
        continuation,
        done: Some(true),
        ..RpbIndexResp::default()
    };
    out.push(codes::INDEX_RESP, &done);
    Ok(())
}

/// The kv request for a PB one, or Riak's text for why it is malformed.
fn index_request(req: RpbIndexReq) -> Result<IndexRequest, PbError> {
    let is_bucket = req.index.eq_ignore_ascii_case(b"$bucket");
    let (start, end) = match (req.qtype == QTYPE_EQ, is_bucket) {
        (_, true) => (req.key.unwrap_or_default(), None),
        (true, false) => match req.key {
            Some(k) => (k, None),
            None => return Err(bad("Invalid equality query undefined".into())),
        },
        (false, false) => match (req.range_min, req.range_max) {
            (Some(lo), Some(hi)) => (lo, Some(hi)),
            (lo, hi) => {
                let shown = |b: Option<Vec<u8>>| {
                    b.map_or("undefined".into(), |b| {
                        format!("<<{:?}>>", String::from_utf8_lossy(&b))
                    })
                };
                let msg = format!("Invalid range query: {} -> {}", shown(lo), shown(hi));
                return Err(bad(msg));
            }
        },
    };
    let term_regex = req
        .term_regex
        .map(|r| String::from_utf8(r).map_err(|_| PbError::NotUtf8("term_regex")))
        .transpose()?;
    Ok(IndexRequest {
        field: req.index,
        start,
        end,
        return_terms: req.return_terms.unwrap_or(false),
        max_results: req.max_results,
        continuation: req.continuation,
        term_regex,
        timeout: req.timeout.map(|ms| Duration::from_millis(u64::from(ms))),
    })
}

/// A response with the page's results in `range`, and its continuation
/// if `last` (a stream's `done` response carries it instead).
fn response(page: &IndexPage, range: std::ops::Range<usize>, last: bool) -> RpbIndexResp {
    let slice = &page.results[range];
    let mut resp = RpbIndexResp::default();
    match page.return_terms {
        true => {
            resp.results = slice
                .iter()
                .map(|(t, k)| RpbPair {
                    key: t.clone(),
                    value: Some(k.clone()),
                })
                .collect();
        }
        false => resp.keys = slice.iter().map(|(_, k)| k.clone()).collect(),
    }
    if last {
        resp.continuation = page.continuation.clone();
    }
    resp
}

fn bad(msg: String) -> PbError {
    PbError::Kv(KvError::BadQuery(msg))
}
