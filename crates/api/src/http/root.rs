//! `/` (`riak_api_wm_urlmap`): the resources this node serves, by Riak's
//! resource module names and the first segment of their paths, sorted
//! and with repeats as Riak lists them. HTML by default, JSON for
//! `Accept: application/json`, and a `Link` header either way.
//!
//! Only resources Eddy serves are listed, so clients that probe for a
//! resource (2i, MapReduce, data types) do not find one that is missing;
//! rows are added as those resources land.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use super::accept;
use super::error::ApiError;
use super::render::accept_of;

/// `(resource, path)`, sorted as Riak sorts them.
pub const RESOURCES: &[(&str, &str)] = &[
    ("riak_kv_wm_bucket_type", "/types"),
    ("riak_kv_wm_buckets", "/buckets"),
    ("riak_kv_wm_buckets", "/riak"),
    ("riak_kv_wm_buckets", "/types"),
    ("riak_kv_wm_counter", "/buckets"),
    ("riak_kv_wm_crdt", "/types"),
    ("riak_kv_wm_index", "/buckets"),
    ("riak_kv_wm_index", "/types"),
    ("riak_kv_wm_keylist", "/buckets"),
    ("riak_kv_wm_keylist", "/riak"),
    ("riak_kv_wm_keylist", "/types"),
    ("riak_kv_wm_mapred", "/mapred"),
    ("riak_kv_wm_object", "/buckets"),
    ("riak_kv_wm_object", "/riak"),
    ("riak_kv_wm_object", "/types"),
    ("riak_kv_wm_ping", "/ping"),
    ("riak_kv_wm_preflist", "/buckets"),
    ("riak_kv_wm_preflist", "/types"),
    ("riak_kv_wm_props", "/buckets"),
    ("riak_kv_wm_props", "/riak"),
    ("riak_kv_wm_props", "/types"),
    ("riak_kv_wm_stats", "/stats"),
];

/// Answers `/`.
pub fn get(headers: &HeaderMap) -> Response {
    let provided = ["text/html", "application/json"];
    let (body, content_type) = match accept::choose(&provided, accept_of(headers)) {
        Some("application/json") => (json(), "application/json"),
        Some(_) => (html(), "text/html"),
        None => {
            return ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                "the resource list is served as text/html or application/json\n",
            )
            .into_response();
        }
    };
    let mut resp = Response::new(body.into());
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&link()) {
        h.insert(header::LINK, v);
    }
    resp
}

/// A JSON object with one member per row; names repeat, as in Riak.
fn json() -> String {
    let members: Vec<String> = RESOURCES
        .iter()
        .map(|(r, p)| format!("\"{r}\":\"{p}\""))
        .collect();
    format!("{{{}}}", members.join(","))
}

fn html() -> String {
    let items: String = RESOURCES
        .iter()
        .map(|(r, p)| format!("<li><a href=\"{p}\">{r}</a></li>"))
        .collect();
    format!("<html><body><ul>{items}</ul></body></html>")
}

fn link() -> String {
    let parts: Vec<String> = RESOURCES
        .iter()
        .map(|(r, p)| format!("<{p}>; rel=\"{r}\""))
        .collect();
    parts.join(",")
}
