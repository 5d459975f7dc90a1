//! Bucket properties (`riak_kv_wm_props`): GET answers
//! `{"props":{...}}` in Riak's names ([`BucketProps::to_json`](eddy_model::props::BucketProps::to_json))
//! plus the computed `name` and `active`; PUT takes `{"props":{...}}`,
//! read into a typed patch by [`PropsPatch::from_json`] alone (computed
//! keys ignored), and sets those fields over the type's (204); DELETE
//! resets the bucket to its type's props (204). A body that is not such
//! an object is 400 with Riak's message; props that do not parse or fail
//! validation are 400 with a JSON object naming each field.
//!
//! A change answers once every reachable member has it (design note
//! 026); members it did not reach by the push's deadline are named in
//! [`MISSING_MEMBERS`], and gossip brings the change to them.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use eddy_kv::metadata_push::Sharing;
use eddy_model::metadata::ChangeId;
use eddy_model::props::{PropsError, PropsPatch};
use eddy_model::types::RegistryError;
use eddy_model::{BucketRef, KvError};
use serde_json::{Map, Value};

use super::error::ApiError;
use super::keys::json_response;
use super::routes::Target;
use super::server::{App, read_body};

/// A bucket's effective props as Riak's JSON, with `name` and `active`.
pub fn props_json(app: &App, bucket: &BucketRef) -> Result<Value, ApiError> {
    let props = app.node.bucket_props(bucket)?;
    let mut json = props.to_json();
    let name = String::from_utf8_lossy(&bucket.bucket).into_owned();
    json.insert("name".into(), Value::String(name));
    json.insert("active".into(), Value::Bool(true));
    Ok(Value::Object(json))
}

/// Answers GET, HEAD, PUT and DELETE of a bucket's props.
pub async fn handle(app: &App, t: Target, req: Request) -> Result<Response, ApiError> {
    match *req.method() {
        Method::GET | Method::HEAD => {
            let body = serde_json::json!({ "props": props_json(app, &t.bucket)? });
            Ok(json_response(body.to_string().into()))
        }
        Method::PUT => {
            props_json(app, &t.bucket)?;
            let (parts, body) = req.into_parts();
            let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
            let patch = parse_props_body(&parts.headers, &body, "bucket")?;
            let b = t.bucket.clone();
            let id = on_blocking(app, move |node| node.set_bucket_props(&b, &patch)).await?;
            Ok(changed(app, id.map_err(kv_props_error)?).await)
        }
        Method::DELETE => {
            props_json(app, &t.bucket)?;
            let b = t.bucket.clone();
            let id = on_blocking(app, move |node| node.reset_bucket_props(&b)).await?;
            Ok(changed(app, id.map_err(kv_props_error)?).await)
        }
        _ => Err(ApiError::method_not_allowed("GET, HEAD, PUT, DELETE")),
    }
}

/// Parses `{"props":{...}}` into a patch ([`PropsPatch::from_json`]);
/// `what` names the resource in the message. Props that do not parse are
/// 400 with a JSON object naming each one, as refused props are.
pub fn parse_props_body(
    headers: &HeaderMap,
    body: &[u8],
    what: &str,
) -> Result<PropsPatch, ApiError> {
    if super::headers::is_json(headers) == Some(false) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("{what} props must be sent as application/json\n"),
        ));
    }
    let parsed: Option<Map<String, Value>> =
        serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| match v {
                Value::Object(mut m) => match m.remove("props") {
                    Some(Value::Object(p)) => Some(p),
                    _ => None,
                },
                _ => None,
            });
    let props = parsed.ok_or_else(|| {
        ApiError::bad_request(format!(
            "{what} PUT must be a JSON object of the form:\n{{\"props\":{{...{what} properties...}}}}"
        ))
    })?;
    PropsPatch::from_json(&props).map_err(|e| registry_error(RegistryError::Props(e)))
}

/// Maps a registry error; refused props become a JSON object of
/// `field: reason`, as Riak answers.
/// A props change's error: the registry's as JSON details, others as usual.
fn kv_props_error(e: KvError) -> ApiError {
    match e {
        KvError::Registry(r) => registry_error(r),
        other => other.into(),
    }
}

pub fn registry_error(e: RegistryError) -> ApiError {
    match e {
        RegistryError::Props(PropsError(fields)) => {
            let details: Map<String, Value> = fields
                .into_iter()
                .map(|(f, r)| (f, Value::String(r)))
                .collect();
            ApiError {
                status: StatusCode::BAD_REQUEST,
                message: Value::Object(details).to_string(),
                content_type: "application/json",
                logged: false,
            }
        }
        other => KvError::from(other).into(),
    }
}

/// The header naming, comma-separated, the members a change did not
/// reach before its answer (absent when every member has it; `*` when
/// the change could not be shared at all, which the node's log says why).
pub const MISSING_MEMBERS: &str = "x-eddy-missing-members";

/// A 204 answering change `id` once its push is done, naming in
/// [`MISSING_MEMBERS`] the members it did not reach.
/// Runs `change` (a bucket metadata change) on a blocking thread: the
/// change is saved before it returns, which must not hold up a runtime
/// worker.
pub async fn on_blocking<T, E>(
    app: &App,
    change: impl FnOnce(&eddy_kv::Node) -> Result<T, E> + Send + 'static,
) -> Result<Result<T, E>, ApiError>
where
    T: Send + 'static,
    E: Send + 'static,
{
    crate::metadata::on_blocking_thread(&app.node, change)
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("a bucket metadata change stopped: {e}\n"),
            )
        })
}

pub async fn changed(app: &App, id: ChangeId) -> Response {
    let mut resp = no_content();
    let missing = match app.node.metadata_pushes().shared(id).await {
        Sharing::Complete => return resp,
        Sharing::Missing(names) => names
            .iter()
            .map(|n| n.0.as_str())
            .collect::<Vec<_>>()
            .join(","),
        // Not stamped for the cluster: no other member has it yet.
        Sharing::Failed(_) => "*".to_string(),
    };
    if let Ok(value) = axum::http::HeaderValue::from_str(&missing) {
        resp.headers_mut().insert(MISSING_MEMBERS, value);
    }
    resp
}

/// A 204 No Content.
pub fn no_content() -> Response {
    let mut resp = Response::new(axum::body::Body::empty());
    *resp.status_mut() = StatusCode::NO_CONTENT;
    resp
}
