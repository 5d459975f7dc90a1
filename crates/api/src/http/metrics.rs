//! `GET /metrics` (Eddy's own): every figure of the node in Prometheus'
//! text format (version 0.0.4), `eddy_`-prefixed, with `# HELP` and
//! `# TYPE` lines (design note 025; the table in docs/user/monitoring.md).
//!
//! The node's registry holds what is counted where the work is done (the
//! kv coordinators, the front ends); the figures other parts keep for
//! `/stats` (storage, recovery and repair, write refusals, connections)
//! are read from the same `/stats` entries and exported as [`FROM_STATS`]
//! names, so the two endpoints never disagree.

use axum::http::{HeaderValue, header};
use axum::response::Response;
use eddy_metrics::{Kind, Sample};
use serde_json::{Map, Value};

use super::server::App;

/// The media type of Prometheus' text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `/stats` entries exported as `eddy_` + their name: kind and help.
pub const FROM_STATS: &[(&str, Kind, &str)] = &[
    (
        "datatype_cache_entries",
        Kind::Gauge,
        "Big sets and maps kept decoded.",
    ),
    (
        "datatype_cache_memory_bytes",
        Kind::Gauge,
        "Estimated memory of the big sets and maps kept decoded.",
    ),
    (
        "datatype_cache_hits_total",
        Kind::Counter,
        "Data type updates that found their value kept decoded.",
    ),
    (
        "datatype_cache_misses_total",
        Kind::Counter,
        "Data type updates that had to decode their value.",
    ),
    (
        "writes_refused",
        Kind::Gauge,
        "1 while the node refuses writes (as /health), else 0.",
    ),
    (
        "write_failures_disk_full_total",
        Kind::Counter,
        "Writes the commit log refused for want of disk space.",
    ),
    (
        "write_failures_descriptors_total",
        Kind::Counter,
        "Writes the commit log refused for want of file descriptors.",
    ),
    (
        "write_failures_memory_total",
        Kind::Counter,
        "Writes the commit log refused for want of memory.",
    ),
    (
        "write_failures_other_total",
        Kind::Counter,
        "Writes the commit log refused for another cause.",
    ),
    (
        "http_connections",
        Kind::Gauge,
        "HTTP connections open now.",
    ),
    ("pb_connections", Kind::Gauge, "PB connections open now."),
    (
        "connections_evicted_total",
        Kind::Counter,
        "Idle connections closed to make room at the limit.",
    ),
    (
        "connections_refused_total",
        Kind::Counter,
        "Connections refused at the limit.",
    ),
    (
        "request_budget_in_use",
        Kind::Gauge,
        "Bytes of large request bodies being received now.",
    ),
    (
        "request_budget_maximum",
        Kind::Gauge,
        "The bound on request bytes being received (request_budget.maximum).",
    ),
    (
        "request_budget_refused_total",
        Kind::Counter,
        "Requests refused for want of room in the request budget.",
    ),
    (
        "recovery_damaged_partitions",
        Kind::Gauge,
        "Partitions whose opening at start found damage.",
    ),
    (
        "repair_pending_partitions",
        Kind::Gauge,
        "Partitions marked damaged, waiting for repair.",
    ),
    (
        "repairs_running",
        Kind::Gauge,
        "Partition repairs running now.",
    ),
    (
        "repairs_completed_total",
        Kind::Counter,
        "Partition repairs completed.",
    ),
    (
        "repairs_failed_total",
        Kind::Counter,
        "Partition repairs failed.",
    ),
    (
        "repair_keys_total",
        Kind::Counter,
        "Keys partition repairs looked at.",
    ),
    (
        "repair_keys_failed_total",
        Kind::Counter,
        "Keys partition repairs could not repair.",
    ),
];

/// Answers `/metrics`.
pub fn get(app: &App) -> Response {
    let stats = super::stats::stats_json(app);
    let text = app.node.metrics_registry().render(&from_stats(&stats));
    let mut resp = Response::new(text.into());
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    resp
}

/// The [`FROM_STATS`] entries of `stats` as samples.
fn from_stats(stats: &Map<String, Value>) -> Vec<Sample> {
    FROM_STATS
        .iter()
        .filter_map(|&(name, kind, help)| {
            let value = stats.get(name).and_then(Value::as_f64)?;
            Some(Sample {
                name: format!("eddy_{name}"),
                help,
                kind,
                value,
            })
        })
        .collect()
}
