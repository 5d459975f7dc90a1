//! `GET /health` (Eddy's own; Riak has none): whether the node accepts
//! writes, and if not, why. `/ping` says the node answers; this says it
//! can store. 200 with `{"status":"ok"}` while writes are accepted; 503
//! with `{"status":"refusing_writes","reason":...}` while the commit log
//! is poisoned (a failed fdatasync) or out of descriptors or disk space,
//! or since a backend refused a write for that reason (until a write is
//! acknowledged again; design note 008). Also the write-refusal keys of `/stats`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::server::App;

/// Why the node refuses writes now, if it does: the commit log's state,
/// else the last write a backend refused for lack of a resource (until a
/// write is acknowledged again).
pub fn refusing(app: &App) -> Option<String> {
    app.node
        .commit_log()
        .and_then(|log| log.refusing())
        .or_else(|| app.node.write_refusal())
}

/// Answers `/health`.
pub fn get(app: &App) -> Response {
    let (status, body) = match refusing(app) {
        None => (
            StatusCode::OK,
            json!({"status": "ok", "writes": "accepted"}),
        ),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "refusing_writes", "writes": "refused", "reason": reason}),
        ),
    };
    let mut resp = Response::new(body.to_string().into());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The `/stats` keys of write refusals: whether writes are refused now,
/// why, and how many were refused for each exhausted resource.
pub fn stats(app: &App) -> Vec<(&'static str, Value)> {
    let reason = refusing(app);
    let counts = app
        .node
        .commit_log()
        .map(|log| log.refusals())
        .unwrap_or_default();
    vec![
        ("writes_refused", json!(u8::from(reason.is_some()))),
        ("writes_refused_reason", json!(reason.unwrap_or_default())),
        ("write_failures_disk_full_total", json!(counts.disk)),
        (
            "write_failures_descriptors_total",
            json!(counts.descriptors),
        ),
        ("write_failures_memory_total", json!(counts.memory)),
        ("write_failures_other_total", json!(counts.other)),
    ]
}
