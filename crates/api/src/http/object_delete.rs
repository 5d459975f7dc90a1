//! DELETE of an object: a tombstone is written over what the client's
//! `X-Riak-Vclock` saw (or, without one, over what a read finds), then
//! reaped per `delete_mode`. 204 when deleted, 404 when nothing live was
//! there; conditional headers are judged against a read first (412).

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use eddy_kv::DeleteOutcome;
use eddy_model::DeleteRequest;

use super::conditional;
use super::error::ApiError;
use super::headers::{self, VCLOCK};
use super::object_get::check_conditions;
use super::params::Query;
use super::routes::Target;
use super::server::App;

/// Deletes `key`.
pub async fn handle(
    app: &App,
    target: Target,
    key: Vec<u8>,
    query: &Query,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    query.validate_all()?;
    let context = headers::context_header(headers, VCLOCK)?;
    if conditional::needs_current(headers) || conditional::is_create_only(headers) {
        check_conditions(app, &target, &key, query, headers).await?;
    }
    let req = DeleteRequest {
        bucket: target.bucket,
        key,
        context,
        options: query.delete_options()?,
    };
    match app.node.delete(req).await? {
        DeleteOutcome::Deleted => {
            let mut resp = Response::new(axum::body::Body::empty());
            *resp.status_mut() = StatusCode::NO_CONTENT;
            Ok(resp)
        }
        DeleteOutcome::NotFound => Err(ApiError::not_found()),
    }
}
