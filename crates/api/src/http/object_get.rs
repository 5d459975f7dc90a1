//! GET and HEAD of an object: read with the request's quorums, pick the
//! sibling (`vtag`), judge conditional headers (304/412), answer 200 with
//! the value and its headers, 300 for siblings, or 404 (with the
//! tombstone's context and `X-Riak-Deleted` after a delete).

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use eddy_model::{GetRequest, GetResponse};

use super::conditional::{self, Current, Verdict};
use super::error::ApiError;
use super::headers::{http_date, quoted};
use super::params::Query;
use super::render::{self, accept_of, set};
use super::routes::Target;
use super::server::App;

/// Answers a GET or HEAD of `key`.
pub async fn handle(
    app: &App,
    target: Target,
    key: Vec<u8>,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    query.validate_all()?;
    let options = query.get_options()?;
    let with_tombstone = options.deleted_vclock;
    let req = GetRequest {
        bucket: target.bucket.clone(),
        key,
        options,
    };
    let got = app.node.get(req).await?;
    let obj = match got {
        GetResponse::Found(obj) => obj,
        GetResponse::NotFound { tombstone_context } => {
            let tombstone = tombstone_context.filter(|_| with_tombstone);
            return Ok(render::not_found(tombstone.as_ref()));
        }
    };
    let sel = render::select(&obj, query.get("vtag"))?;
    let (etag, lm) = render::validators(&obj, sel);
    let current = Current {
        etag: &etag,
        last_modified_us: lm,
    };
    match conditional::evaluate(headers, Some(current), true) {
        Verdict::Proceed => {}
        Verdict::NotModified => return Ok(not_modified(&etag, lm)),
        Verdict::Failed => return Err(precondition_failed()),
    }
    render::object_response(&target, &obj, sel, accept_of(headers), StatusCode::OK)
}

fn not_modified(etag: &[u8], last_modified_us: u64) -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::NOT_MODIFIED;
    set(resp.headers_mut(), "etag", &quoted(etag));
    set(
        resp.headers_mut(),
        "last-modified",
        http_date(last_modified_us).as_bytes(),
    );
    resp
}

/// 412 for a condition the stored object fails.
pub fn precondition_failed() -> ApiError {
    ApiError::new(
        StatusCode::PRECONDITION_FAILED,
        "precondition failed: the object does not meet the request's conditions\n",
    )
}

/// Reads the stored object and judges the request's conditions on it
/// (for PUT and DELETE): 412 when they fail.
pub async fn check_conditions(
    app: &App,
    target: &Target,
    key: &[u8],
    query: &Query,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    let req = GetRequest {
        bucket: target.bucket.clone(),
        key: key.to_vec(),
        options: query.get_options()?,
    };
    let found = match app.node.get(req).await? {
        GetResponse::Found(obj) => Some(obj),
        GetResponse::NotFound { .. } => None,
    };
    let validators = found.as_ref().map(|obj| {
        let sel = render::select(obj, None).unwrap_or(render::Selection::Siblings);
        render::validators(obj, sel)
    });
    let current = validators.as_ref().map(|(etag, lm)| Current {
        etag,
        last_modified_us: *lm,
    });
    match conditional::evaluate(headers, current, false) {
        Verdict::Proceed => Ok(()),
        _ => Err(precondition_failed()),
    }
}
