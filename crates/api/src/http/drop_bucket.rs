//! Dropping a bucket (Eddy's own; design note 018; `eddy admin
//! drop-bucket` calls it):
//!
//! | request | effect |
//! |---|---|
//! | `DELETE /admin/buckets/B` | drops bucket B of the `default` type |
//! | `DELETE /admin/types/T/buckets/B` | drops bucket B of type T |
//!
//! The answer, once this node's copies are gone and the change was pushed
//! to every member the cluster could reach (or after 10 s without: then
//! `shared` is false): 200 `{"type","bucket","generation","shared"}`.
//! Other members sweep their copies as the change reaches them; a member
//! that was down learns of it when it is back. An unknown or inactive type is 404 / 400 as for any
//! bucket request.

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use eddy_model::BucketRef;
use serde_json::json;

use super::error::ApiError;
use super::keys::json_response;
use super::server::App;

/// Answers a request to `/admin/[types/T/]buckets/B`.
pub async fn handle(app: &App, bucket: BucketRef, req: Request) -> Result<Response, ApiError> {
    if req.method() != Method::DELETE {
        return Err(ApiError::method_not_allowed("DELETE"));
    }
    let node = app.node.clone();
    let dropping = bucket.clone();
    let outcome = tokio::task::spawn_blocking(move || node.drop_bucket_blocking(&dropping))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("dropping the bucket stopped: {e}\n"),
            )
        })??;
    let answer = json!({
        "type": bucket.bucket_type,
        "bucket": String::from_utf8_lossy(&bucket.bucket),
        "generation": outcome.generation,
        "shared": outcome.shared,
    });
    Ok(json_response(answer.to_string().into()))
}
