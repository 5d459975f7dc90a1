//! Listing the buckets of a type that hold at least one key:
//! `buckets=true` answers `{"buckets":[...]}`; `buckets=stream` answers
//! chunked `{"buckets":[...]}` objects ending with `{"buckets":[]}`.
//! An unknown type is 404.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;

use super::error::ApiError;
use super::keys::{json_response, keys_json, list_timeout_ms};
use super::params::Query;
use super::server::App;

/// Buckets per streamed chunk.
const CHUNK_LEN: usize = 1000;

/// Answers a bucket list request.
pub async fn get(app: &App, bucket_type: &str, query: &Query) -> Result<Response, ApiError> {
    let mode = query.get("buckets");
    if !matches!(mode, Some("true" | "stream")) {
        return Err(ApiError::bad_request(
            "buckets query parameter must be true or stream\n",
        ));
    }
    app.node
        .registry()
        .type_info(bucket_type)
        .map_err(eddy_model::KvError::from)?;
    let timeout_ms = list_timeout_ms(query)?;
    let node = app.node.clone();
    let t = bucket_type.to_string();
    let fold = tokio::task::spawn_blocking(move || node.list_buckets_blocking(&t));
    let listed = tokio::time::timeout(Duration::from_millis(timeout_ms), fold)
        .await
        .map_err(|_| ApiError::from(eddy_model::KvError::Timeout))?;
    let buckets = listed.map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("{e}\n"),
        )
    })??;
    let body = match mode {
        Some("stream") => {
            let mut chunks: Vec<Result<Bytes, Infallible>> = buckets
                .chunks(CHUNK_LEN)
                .map(|c| Ok(Bytes::from(json!({ "buckets": keys_json(c) }).to_string())))
                .collect();
            chunks.push(Ok(Bytes::from(json!({ "buckets": [] }).to_string())));
            Body::from_stream(tokio_stream::iter(chunks))
        }
        _ => Body::from(json!({ "buckets": keys_json(&buckets) }).to_string()),
    };
    Ok(json_response(body))
}
