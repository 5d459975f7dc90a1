//! `/ping` (`riak_kv_wm_ping`): 200 with the body `OK` while the node
//! serves requests.

use axum::http::{HeaderValue, header};
use axum::response::Response;

/// Answers a ping.
pub fn get() -> Response {
    let mut resp = Response::new("OK".into());
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
    resp
}
