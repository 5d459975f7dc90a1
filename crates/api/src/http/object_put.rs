//! PUT and POST of an object, and POST to a bucket (a server-generated key:
//! 201 with `Location`). The request's headers become the content's
//! metadata; `X-Riak-Vclock` is the causal context. `If-None-Match: *`
//! makes the write an atomic create (412 if a live object exists); other
//! conditional headers are judged against a read first; a context in
//! `X-Riak-If-Not-Modified` must equal the stored one (409 otherwise).
//! Without `returnbody` the answer is 204 (201 for a new key).

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use eddy_model::{PutRequest, PutResponse};

use super::conditional;
use super::error::ApiError;
use super::headers::{self, IF_NOT_MODIFIED, VCLOCK, object_path};
use super::object_get::check_conditions;
use super::params::Query;
use super::render::{self, accept_of, set};
use super::routes::Target;
use super::server::{App, read_body};

/// Stores the request body at `key` (or a new key when `None`).
pub async fn handle(
    app: &App,
    target: Target,
    key: Option<Vec<u8>>,
    query: &Query,
    req: Request,
) -> Result<Response, ApiError> {
    query.validate_all()?;
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let mut options = query.put_options()?;
    headers::content_type(headers)?;
    let value = read_body(headers, body, app.config.body_bytes_max).await?;
    let content = headers::content_from_request(headers, value, target.api)?;
    let mut context = headers::context_header(headers, VCLOCK)?;
    if let Some(expected) = headers::context_header(headers, IF_NOT_MODIFIED)? {
        options.if_not_modified = true;
        context = Some(expected);
    }
    options.if_none_match = conditional::is_create_only(headers);
    if let Some(k) = &key
        && conditional::needs_current(headers)
    {
        check_conditions(app, &target, k, query, headers).await?;
    }
    let created = key.is_none();
    let put = PutRequest {
        bucket: target.bucket.clone(),
        key,
        context,
        content,
        options,
    };
    let stored = app.node.put(put).await?;
    answer(&target, stored, created, headers)
}

fn answer(
    target: &Target,
    stored: PutResponse,
    created: bool,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut resp = match &stored.object {
        Some(obj) => {
            let sel = render::select(obj, None)?;
            render::object_response(target, obj, sel, accept_of(headers), status)?
        }
        None => {
            let mut r = Response::new(axum::body::Body::empty());
            *r.status_mut() = match created {
                true => StatusCode::CREATED,
                false => StatusCode::NO_CONTENT,
            };
            r
        }
    };
    if created {
        let location = object_path(target.api, &target.bucket, &stored.key);
        set(resp.headers_mut(), "location", location.as_bytes());
    }
    Ok(resp)
}
