//! The data types resource, `/types/T/buckets/B/datatypes[/K]`
//! (`riak_kv_wm_crdt`): GET and HEAD fetch a value as JSON (404 with
//! `{"type":..,"error":"notfound"}` when absent), POST applies the
//! operation its JSON body names (204; 200 and the value with
//! `returnbody`; 201 and `Location` when the node made the key).
//! `/types/default/buckets/B/datatypes/K` is answered with a 301 to the
//! legacy counter resource ([`super::counter`]).
//!
//! Invariants: a POST must be `application/json` (406 otherwise) and at
//! most [`super::HttpConfig::body_bytes_max`] bytes; its body is decoded
//! for the bucket's data type by [`super::dt_json`] before the node sees
//! it, so every malformed operation is a 400 naming what was wrong.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use eddy_kv::coordinator::datatype::{DtFetchRequest, DtUpdateRequest};
use eddy_model::BucketRef;
use serde_json::Value as Json;

use super::dt_json::{self, body_json, not_found_json};
use super::error::ApiError;
use super::headers::{is_json, url_name, url_text};
use super::keys;
use super::params::Query;
use super::render::set;
use super::server::{App, read_body};

/// Answers any method on a data type (`key: None`: POST with a new key).
pub async fn handle(
    app: &App,
    bucket: BucketRef,
    key: Option<Vec<u8>>,
    query: &Query,
    req: Request,
) -> Result<Response, ApiError> {
    match (req.method().clone(), key) {
        (Method::GET | Method::HEAD, Some(key)) => fetch(app, bucket, key, query).await,
        (Method::POST, key) => update(app, bucket, key, query, req).await,
        (_, Some(_)) => Err(ApiError::method_not_allowed("GET, HEAD, POST")),
        (_, None) => Err(ApiError::method_not_allowed("POST")),
    }
}

/// The 301 Riak sends for a data type path in the `default` type.
pub fn to_legacy_counter(bucket: &[u8], key: &[u8]) -> Response {
    let mut resp = Response::new(Body::from(
        "Counters in the default bucket-type should use the legacy URL",
    ));
    *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
    let location = format!("/buckets/{}/counters/{}", url_name(bucket), url_name(key));
    set(resp.headers_mut(), "location", location.as_bytes());
    set(resp.headers_mut(), "content-type", b"text/plain");
    resp
}

async fn fetch(
    app: &App,
    bucket: BucketRef,
    key: Vec<u8>,
    query: &Query,
) -> Result<Response, ApiError> {
    query.validate_all()?;
    let with_context = query.boolean("include_context")?.unwrap_or(true);
    let request = DtFetchRequest {
        bucket,
        key,
        options: query.get_options()?,
    };
    let fetched = app.node.dt_fetch(request).await?;
    Ok(match fetched.body {
        Some(body) => {
            let value = body.state.value();
            let json = body_json(fetched.datatype, &value, &body.context, with_context);
            json_response(StatusCode::OK, &json)
        }
        None => {
            let mut resp = json_response(StatusCode::NOT_FOUND, &not_found_json(fetched.datatype));
            if fetched.deleted {
                set(resp.headers_mut(), "x-riak-deleted", b"true");
            }
            resp
        }
    })
}

async fn update(
    app: &App,
    bucket: BucketRef,
    key: Option<Vec<u8>>,
    query: &Query,
    req: Request,
) -> Result<Response, ApiError> {
    query.validate_all()?;
    let with_context = query.boolean("include_context")?.unwrap_or(true);
    let mut options = query.put_options()?;
    options.return_body = query.is_true("returnbody") || query.is_true("return_body");
    let (parts, body) = req.into_parts();
    if is_json(&parts.headers) != Some(true) {
        return Err(ApiError::new(StatusCode::NOT_ACCEPTABLE, ""));
    }
    let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
    let datatype = app.node.datatype_of(&bucket)?.datatype;
    let parsed =
        dt_json::parse_update(datatype, &body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let request = DtUpdateRequest {
        bucket: bucket.clone(),
        key,
        op: parsed.op,
        context: parsed.context,
        options,
    };
    let updated = app.node.dt_update(request).await?;
    let status = match (updated.generated, &updated.body) {
        (true, _) => StatusCode::CREATED,
        (false, Some(_)) => StatusCode::OK,
        (false, None) => StatusCode::NO_CONTENT,
    };
    let mut resp = match &updated.body {
        Some(body) => {
            let value = body.state.value();
            json_response(
                status,
                &body_json(datatype, &value, &body.context, with_context),
            )
        }
        None => {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = status;
            r
        }
    };
    if updated.generated {
        let location = format!(
            "/types/{}/buckets/{}/datatypes/{}",
            url_text(&bucket.bucket_type),
            url_name(&bucket.bucket),
            url_name(&updated.key)
        );
        set(resp.headers_mut(), "location", location.as_bytes());
    }
    Ok(resp)
}

fn json_response(status: StatusCode, json: &Json) -> Response {
    let mut resp = keys::json_response(Body::from(json.to_string()));
    *resp.status_mut() = status;
    resp
}
