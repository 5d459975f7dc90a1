//! `POST /mapred` (`riak_kv_wm_mapred`): a MapReduce job as JSON.
//!
//! The answer is JSON: the kept phase's outputs as one list, or a list of
//! lists when several phases keep theirs. With `?chunked=true` it is
//! multipart/mixed, one `{"phase": N, "data": [...]}` part per
//! [`PART_RESULTS_MAX`] outputs. A malformed job is a 400 saying what is
//! wrong; a failed one a 500 with Riak's JSON report (`{"phase", "error",
//! "input", "type", "stack"}`), a timeout a 500 `{"error":"timeout"}`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use eddy_model::KvError;
use eddy_query::MapRedError;
use eddy_query::exec::MapRedOutput;
use serde_json::{Value, json};

use super::error::ApiError;
use super::keys::json_response;
use super::multipart::json_parts_response;
use super::params::Query;
use super::server::{App, read_body};

/// The most outputs one part of a chunked answer holds.
pub const PART_RESULTS_MAX: usize = 1000;

pub async fn handle(app: Arc<App>, query: &Query, req: Request) -> Result<Response, ApiError> {
    if req.method() != Method::POST {
        return Err(ApiError::method_not_allowed("POST"));
    }
    let chunked = match query.get("chunked") {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "chunked must be true or false, not {other:?}\n"
            )));
        }
    };
    let (parts, body) = req.into_parts();
    let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
    let output = app
        .config
        .jobs
        .clone()
        .run(app.node.clone(), body.to_vec())
        .await
        .map_err(job_error)?;
    Ok(match chunked {
        true => multipart(&output),
        false => json_response(Body::from(whole(output).to_string())),
    })
}

/// One kept phase: its list; several: a list of their lists.
fn whole(output: MapRedOutput) -> Value {
    let mut phases: Vec<Value> = output
        .phases
        .into_iter()
        .map(|(_, v)| Value::Array(v))
        .collect();
    match phases.len() {
        1 => phases.pop().unwrap_or_default(),
        _ => Value::Array(phases),
    }
}

fn multipart(output: &MapRedOutput) -> Response {
    let parts: Vec<Value> = output
        .phases
        .iter()
        .flat_map(|(phase, values)| {
            values
                .chunks(PART_RESULTS_MAX)
                .map(move |chunk| json!({ "phase": phase, "data": chunk }))
        })
        .collect();
    json_parts_response(&parts)
}

fn job_error(e: MapRedError) -> ApiError {
    match e {
        MapRedError::BadJob(m) | MapRedError::Kv(KvError::BadQuery(m)) => {
            ApiError::bad_request(format!("{m}\n"))
        }
        MapRedError::Kv(kv) => kv.into(),
        // The query layer logged these (`Jobs::run`).
        MapRedError::Timeout => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "timeout"}).to_string(),
        )
        .logged(),
        worker @ MapRedError::Worker(_) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{worker}\n")).logged()
        }
        phase @ MapRedError::Phase { .. } => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, phase.to_string()).logged()
        }
    }
}
