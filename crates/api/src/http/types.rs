//! Bucket type properties (`riak_kv_wm_bucket_type`, `/types/T/props`):
//! GET answers `{"props":{...}}` with the type's props, `active` and
//! `claimant`; PUT `{"props":{...}}` updates them (immutable properties
//! must keep their values), 204. An unknown type is 404.

use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use eddy_model::KvError;
use eddy_model::types::{DEFAULT_TYPE, TypeStatus};
use serde_json::{Value, json};

use super::error::ApiError;
use super::keys::json_response;
use super::props::{changed, on_blocking, parse_props_body, registry_error};
use super::server::{App, read_body};

/// Answers GET, HEAD and PUT of a type's props.
pub async fn handle(app: &App, name: &str, req: Request) -> Result<Response, ApiError> {
    let info = app.node.registry().type_info(name).map_err(KvError::from)?;
    match *req.method() {
        Method::GET | Method::HEAD => {
            let mut props = info.props.to_json();
            let active = info.status == TypeStatus::Active;
            props.insert("active".into(), Value::Bool(active));
            let claimant = app.node.config().node_name.0.clone();
            props.insert("claimant".into(), Value::String(claimant));
            let body = json!({ "props": props });
            Ok(json_response(body.to_string().into()))
        }
        Method::PUT if name == DEFAULT_TYPE => Err(ApiError::bad_request(
            "the default bucket type's props come from the node's configuration \
             (buckets.default.*); set a bucket's props instead\n",
        )),
        Method::PUT => {
            let (parts, body) = req.into_parts();
            let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
            let patch = parse_props_body(&parts.headers, &body, "bucket type")?;
            app.node
                .check_patch(&patch)
                .map_err(|p| registry_error(eddy_model::types::RegistryError::Props(p)))?;
            let name = name.to_string();
            let id = on_blocking(app, move |node| node.registry().update_type(&name, &patch));
            Ok(changed(app, id.await?.map_err(registry_error)?).await)
        }
        _ => Err(ApiError::method_not_allowed("GET, HEAD, PUT")),
    }
}
