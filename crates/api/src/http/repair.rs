//! Eddy's partition repair resource (`eddy admin repair` calls it), Riak's
//! `riak_kv_vnode:repair/1` from `riak attach` as an HTTP request:
//!
//! | request | effect |
//! |---|---|
//! | `GET /admin/repair` | `{"damaged":[P…],"running":n,"completed_total":n,…}` |
//! | `POST /admin/repair?partition=P\|all` | starts repairing the marked partition P (or all marked ones): 202 `{"started":[P…]}` |
//! | the same with `&wait=true` | repairs, then 200 `{"partitions":[P…],"keys":n,"copied":n,"removed":n}` |
//!
//! A partition that is not marked needs no repair and is left alone; one
//! not on the ring is 404, one already being repaired 409.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use eddy_kv::Node;
use eddy_kv::repair::{Partition, RepairError, RepairSummary};

use serde_json::{Value, json};

use super::error::ApiError;
use super::keys::json_response;
use super::params::Query;
use super::server::App;

/// Answers `GET` or `POST /admin/repair`.
pub async fn handle(app: &App, req: Request) -> Result<Response, ApiError> {
    let query = Query::parse(req.uri().query())?;
    match *req.method() {
        Method::GET | Method::HEAD => Ok(json_response(status(&app.node).to_string().into())),
        Method::POST => post(&app.node, &query).await,
        _ => Err(ApiError::method_not_allowed("GET, POST")),
    }
}

async fn post(node: &Arc<Node>, query: &Query) -> Result<Response, ApiError> {
    let targets = targets(node, query.get("partition").unwrap_or("all"))?;
    if !query.is_true("wait") {
        let started = match targets.is_empty() {
            true => node.damaged_partitions(),
            false => targets
                .iter()
                .copied()
                .filter(|p| node.damaged_partitions().contains(p))
                .collect(),
        };
        if !started.is_empty() {
            node.spawn_repair(started.clone());
        }
        let ids: Vec<u32> = started.iter().map(|p| p.0).collect();
        let mut resp = json_response(json!({ "started": ids }).to_string().into());
        *resp.status_mut() = StatusCode::ACCEPTED;
        return Ok(resp);
    }
    let repairing = node.clone();
    let done = tokio::task::spawn_blocking(move || repairing.repair_partitions(&targets))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")))?;
    let summary = done.map_err(repair_error)?;
    Ok(json_response(describe(&summary).to_string().into()))
}

/// The partitions `partition=` names: empty for `all`.
fn targets(node: &Node, text: &str) -> Result<Vec<Partition>, ApiError> {
    if text == "all" {
        return Ok(Vec::new());
    }
    let p: u32 = text.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "partition must be a partition number or \"all\", not {text:?}\n"
        ))
    })?;
    if p >= node.ring().size() {
        return Err(repair_error(RepairError::NoSuchPartition(p)));
    }
    Ok(vec![Partition(p)])
}

fn status(node: &Node) -> Value {
    let c = node.repair_counters();
    let damaged: Vec<u32> = node.damaged_partitions().iter().map(|p| p.0).collect();
    json!({
        "damaged": damaged,
        "running": c.running.load(Ordering::Relaxed),
        "completed_total": c.completed_total.load(Ordering::Relaxed),
        "failed_total": c.failed_total.load(Ordering::Relaxed),
        "keys_total": c.keys_total.load(Ordering::Relaxed),
    })
}

/// The `/stats` entries of recovery and repair: what the partitions'
/// recoveries found at start, what is marked now, and repair's progress.
pub fn stats(node: &Node) -> Vec<(&'static str, Value)> {
    let t = node.recovery_totals();
    let r = &t.report;
    let c = node.repair_counters();
    let load = |a: &std::sync::atomic::AtomicU64| json!(a.load(Ordering::Relaxed));
    vec![
        ("recovery_damaged_partitions", json!(t.damaged_partitions)),
        ("recovery_ranges_skipped", json!(r.ranges_skipped)),
        ("recovery_bytes_skipped", json!(r.bytes_skipped)),
        ("recovery_tails_truncated", json!(r.tails_truncated)),
        ("recovery_bytes_truncated", json!(r.bytes_truncated)),
        ("recovery_files_rejected", json!(r.files_rejected)),
        ("recovery_hints_rejected", json!(r.hints_rejected)),
        (
            "repair_pending_partitions",
            json!(node.damaged_partitions().len()),
        ),
        ("repairs_running", load(&c.running)),
        ("repairs_completed_total", load(&c.completed_total)),
        ("repairs_failed_total", load(&c.failed_total)),
        ("repair_keys_total", load(&c.keys_total)),
        ("repair_keys_copied_total", load(&c.keys_copied_total)),
        ("repair_keys_removed_total", load(&c.keys_removed_total)),
        ("repair_keys_failed_total", load(&c.keys_failed_total)),
    ]
}

fn describe(s: &RepairSummary) -> Value {
    json!({
        "partitions": s.partitions,
        "keys": s.keys,
        "copied": s.copied,
        "removed": s.removed,
        "failed": s.failed,
    })
}

fn repair_error(e: RepairError) -> ApiError {
    let status = match e {
        RepairError::NoSuchPartition(_) => StatusCode::NOT_FOUND,
        RepairError::AlreadyRunning(_) => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, format!("{e}\n"))
}
