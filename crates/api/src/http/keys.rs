//! Listing a bucket's keys: `keys=true` answers one JSON object
//! `{"keys":[...]}`; `keys=stream` answers chunked, one `{"keys":[...]}`
//! object per batch the coverage fold yields, ending with
//! `{"keys":[]}` (or `{"error":...}` if the fold failed). The legacy
//! `/riak/B` resource puts the bucket's props first unless `props=false`.
//!
//! The fold runs on a blocking thread and hands batches over a bounded
//! channel; a client that goes away closes the channel, which stops it.
//! Keys that are not UTF-8 are listed percent-encoded (JSON strings cannot
//! carry raw bytes), never with replacement characters.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use eddy_model::KvError;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::error::ApiError;
use super::headers::url_name;
use super::params::Query;
use super::props::props_json;
use super::routes::{Api, Target};
use super::server::App;

/// How long a listing may run when the request names no timeout (Riak's
/// list default: 5 minutes).
pub const LIST_TIMEOUT_MS: u64 = 5 * 60 * 1000;

/// A listing's timeout from `timeout`: 0, like no value, means the
/// default, as Riak (and Eddy's PB API) treat a zero timeout as not given.
pub fn list_timeout_ms(query: &Query) -> Result<u64, ApiError> {
    let given = query.timeout_ms()?.filter(|ms| *ms > 0);
    Ok(given.unwrap_or(LIST_TIMEOUT_MS))
}

type Batches = mpsc::Receiver<Vec<Vec<u8>>>;
type Fold = JoinHandle<Result<(), KvError>>;

/// Answers a key list request.
pub async fn get(app: Arc<App>, t: Target, query: &Query) -> Result<Response, ApiError> {
    let timeout_ms = list_timeout_ms(query)?;
    let props = props_json(&app, &t.bucket)?;
    let with_props = t.api == Api::Legacy && query.get("props") != Some("false");
    let mut head = serde_json::Map::new();
    if with_props {
        head.insert("props".into(), props);
    }
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    match query.get("keys") {
        Some("true") => {
            let keys = collect(&app, &t, deadline).await?;
            head.insert("keys".into(), keys_json(&keys));
            Ok(json_response(Body::from(Value::Object(head).to_string())))
        }
        Some("stream") => {
            let first = with_props.then(|| Value::Object(head).to_string());
            Ok(json_response(stream(&app, &t, deadline, first)))
        }
        _ => Ok(json_response(Body::from(Value::Object(head).to_string()))),
    }
}

fn start_fold(app: &App, t: &Target) -> (Batches, Fold) {
    let (tx, rx) = mpsc::channel(4);
    let node = app.node.clone();
    let bucket = t.bucket.clone();
    let fold = tokio::task::spawn_blocking(move || node.list_keys_blocking(&bucket, &tx));
    (rx, fold)
}

async fn collect(app: &App, t: &Target, deadline: Instant) -> Result<Vec<Vec<u8>>, ApiError> {
    let (mut rx, fold) = start_fold(app, t);
    let mut keys = Vec::new();
    loop {
        match timeout_at(deadline, rx.recv()).await {
            Ok(Some(batch)) => keys.extend(batch),
            Ok(None) => break,
            Err(_) => return Err(KvError::Timeout.into()),
        }
    }
    finish(fold).await?;
    keys.sort();
    Ok(keys)
}

/// The fold's own result, once it has ended.
async fn finish(fold: Fold) -> Result<(), ApiError> {
    match fold.await {
        Ok(result) => result.map_err(ApiError::from),
        Err(e) => Err(ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("key listing failed: {e}\n"),
        )),
    }
}

fn stream(app: &App, t: &Target, deadline: Instant, first: Option<String>) -> Body {
    let (mut rx, fold) = start_fold(app, t);
    let (out, out_rx) = mpsc::channel::<Bytes>(4);
    tokio::spawn(async move {
        if let Some(first) = first
            && out.send(Bytes::from(first)).await.is_err()
        {
            return;
        }
        loop {
            let chunk = match timeout_at(deadline, rx.recv()).await {
                Ok(Some(batch)) => json!({ "keys": keys_json(&batch) }),
                Ok(None) => break,
                Err(_) => {
                    let _ = out.send(Bytes::from(r#"{"error":"timeout"}"#)).await;
                    return;
                }
            };
            if out.send(Bytes::from(chunk.to_string())).await.is_err() {
                return;
            }
        }
        let last = match finish(fold).await {
            Ok(()) => json!({ "keys": [] }),
            Err(e) => json!({ "error": e.message.trim_end() }),
        };
        let _ = out.send(Bytes::from(last.to_string())).await;
    });
    Body::from_stream(ReceiverStream::new(out_rx).map(Ok::<Bytes, Infallible>))
}

/// Names as JSON strings: a UTF-8 name as itself, any other percent-encoded
/// as in a URL (JSON strings cannot carry raw bytes), so the listed text
/// addresses the object when put in a path.
pub fn keys_json(keys: &[Vec<u8>]) -> Value {
    Value::Array(keys.iter().map(|k| Value::String(name_text(k))).collect())
}

/// One name as JSON text: itself when UTF-8, else percent-encoded.
pub fn name_text(name: &[u8]) -> String {
    match std::str::from_utf8(name) {
        Ok(text) => text.to_owned(),
        Err(_) => url_name(name),
    }
}

/// A 200 with a JSON body.
pub fn json_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}
