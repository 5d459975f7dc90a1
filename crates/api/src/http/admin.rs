//! Eddy's admin resource for bucket types, what `riak-admin bucket-type`
//! does over Erlang RPC in Riak (`eddy admin bucket-type …` calls it):
//!
//! | request | effect |
//! |---|---|
//! | `GET /admin/bucket-types` | `{"types":[{"name","status","props"}…]}` |
//! | `GET /admin/bucket-types/T` | `{"name","status","props"}`, 404 if unknown |
//! | `POST /admin/bucket-types/T` with `{"props":{…}}` | create (status `created`), 201; 409 if it exists |
//! | `PUT /admin/bucket-types/T` with `{"props":{…}}` | update, 204 |
//! | `POST /admin/bucket-types/T/activate` | activate, 204 |
//!
//! A change answers once every reachable member has it; if some member
//! did not acknowledge it by the push's deadline, the answer is 202 with
//! `{"missing":["node"…]}` (or `{"missing":[],"error":"…"}` when the
//! change could not be shared), and gossip brings it to them.
//!
//! `/admin/repair` (partition repair) is in [`super::repair`].

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use eddy_kv::metadata_push::Sharing;
use eddy_model::metadata::ChangeId;
use eddy_model::types::{RegistryError, TypeInfo, TypeStatus};
use serde_json::{Value, json};

use super::error::ApiError;
use super::keys::json_response;
use super::props::{no_content, on_blocking, parse_props_body, registry_error};
use super::server::{App, read_body};

/// What an admin path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminRoute {
    Types,
    Type(String),
    Activate(String),
    /// Partition repair: status and start (`super::repair`).
    Repair,
}

/// Answers one admin request.
pub async fn handle(app: &App, route: AdminRoute, req: Request) -> Result<Response, ApiError> {
    let registry = app.node.registry();
    match (route, req.method().clone()) {
        (AdminRoute::Repair, _) => super::repair::handle(app, req).await,
        (AdminRoute::Types, Method::GET) => {
            let types: Vec<Value> = registry.list_types().iter().map(describe).collect();
            Ok(json_response(json!({ "types": types }).to_string().into()))
        }
        (AdminRoute::Type(name), Method::GET) => {
            let info = registry.type_info(&name).map_err(admin_error)?;
            Ok(json_response(describe(&info).to_string().into()))
        }
        (AdminRoute::Type(name), m @ (Method::POST | Method::PUT)) => {
            let (parts, body) = req.into_parts();
            let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
            let patch = parse_props_body(&parts.headers, &body, "bucket type")?;
            app.node
                .check_patch(&patch)
                .map_err(|p| admin_error(RegistryError::Props(p)))?;
            let create = m == Method::POST;
            let id = on_blocking(app, move |node| match create {
                true => node.registry().create_type(&name, &patch),
                false => node.registry().update_type(&name, &patch),
            });
            let id = id.await?.map_err(admin_error)?;
            let done = match create {
                true => StatusCode::CREATED,
                false => StatusCode::NO_CONTENT,
            };
            Ok(shared(app, id, done).await)
        }
        (AdminRoute::Activate(name), Method::POST) => {
            let id = on_blocking(app, move |node| node.registry().activate_type(&name));
            Ok(shared(app, id.await?.map_err(admin_error)?, StatusCode::NO_CONTENT).await)
        }
        (AdminRoute::Types, _) => Err(ApiError::method_not_allowed("GET")),
        (AdminRoute::Type(_), _) => Err(ApiError::method_not_allowed("GET, POST, PUT")),
        (AdminRoute::Activate(_), _) => Err(ApiError::method_not_allowed("POST")),
    }
}

/// Answers change `id` once its push is done: `done` if every member has
/// it, else 202 naming those that do not.
async fn shared(app: &App, id: ChangeId, done: StatusCode) -> Response {
    let body = match app.node.metadata_pushes().shared(id).await {
        Sharing::Complete => {
            let mut resp = no_content();
            *resp.status_mut() = done;
            return resp;
        }
        Sharing::Missing(names) => {
            let names: Vec<&str> = names.iter().map(|n| n.0.as_str()).collect();
            json!({ "missing": names })
        }
        Sharing::Failed(error) => json!({ "missing": [], "error": error }),
    };
    let mut resp = json_response(body.to_string().into());
    *resp.status_mut() = StatusCode::ACCEPTED;
    resp
}

fn describe(info: &TypeInfo) -> Value {
    let status = match info.status {
        TypeStatus::Created => "created",
        TypeStatus::Active => "active",
    };
    json!({ "name": info.name, "status": status, "props": info.props.to_json() })
}

fn admin_error(e: RegistryError) -> ApiError {
    match e {
        RegistryError::NoSuchType(name) => ApiError::new(
            StatusCode::NOT_FOUND,
            format!("bucket type {name:?} does not exist\n"),
        ),
        RegistryError::AlreadyExists(name) => ApiError::new(
            StatusCode::CONFLICT,
            format!("bucket type {name:?} already exists\n"),
        ),
        RegistryError::BadName(name) => {
            ApiError::bad_request(format!("invalid bucket type name {name:?}\n"))
        }
        other => registry_error(other),
    }
}
