//! The HTTP server: its settings, the shared state every handler sees, the
//! axum router and the listener loop with graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use eddy_kv::Node;
use eddy_query::Jobs;
use eddy_query::js::JsLimits;
use tokio_stream::StreamExt;

use super::error::ApiError;
use super::stats::HttpStats;
use super::{listener, routes};
use crate::figures::{ApiFigures, Side};
use crate::net::{ConnectionTable, RequestBudget};

/// Settings of the HTTP front end.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Largest request body accepted; larger ones get 413.
    pub body_bytes_max: usize,
    /// The backend name `/stats` reports as `storage_backend`.
    pub storage_backend: String,
    /// Connections served at once; when full, the longest idle one is
    /// closed for a newcomer, and a newcomer finding all busy gets 503.
    pub connections_max: usize,
    /// How long a request's head (including the wait for it on a kept-alive
    /// connection) and, separately, its body may take to arrive; `None`
    /// waits forever.
    pub request_timeout: Option<Duration>,
    /// The connection table to use (so `/stats` can see it); `None` builds
    /// one of `connections_max` places.
    pub table: Option<Arc<ConnectionTable>>,
    /// The PB listener's connection table, for `/stats`.
    pub pb_table: Option<Arc<ConnectionTable>>,
    /// The node-wide budget of request bytes being received (shared with
    /// PB); `None` bounds each body only by `body_bytes_max`.
    pub budget: Option<Arc<RequestBudget>>,
    /// The node's membership service, for the cluster admin resource
    /// ([`super::cluster`]); `None` answers those requests with 503.
    pub membership: Option<eddy_cluster::Membership>,
    /// The node's handoff manager, for the transfers running now
    /// (`transfers`' `active` and `inbound`).
    pub handoffs: Option<Arc<eddy_remote::handoff::Handoffs>>,
    /// The node's MapReduce (its JavaScript pool and limits), shared with
    /// the PB front end and the node's vnodes.
    pub jobs: Arc<Jobs>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            body_bytes_max: 64 * 1024 * 1024,
            storage_backend: "memory".to_string(),
            connections_max: 4096,
            request_timeout: Some(Duration::from_secs(60)),
            table: None,
            pb_table: None,
            budget: None,
            membership: None,
            handoffs: None,
            jobs: Jobs::new(Some(JsLimits::default())),
        }
    }
}

/// What every handler shares.
pub struct App {
    pub node: Arc<Node>,
    pub config: HttpConfig,
    pub stats: Arc<HttpStats>,
    /// Requests and errors counted for `/metrics`.
    pub figures: ApiFigures,
}

/// The router serving Riak's HTTP API over `node`.
pub fn router(node: Arc<Node>, config: HttpConfig) -> Router {
    let stats = Arc::new(HttpStats::new(&node, config.pb_table.as_ref()));
    HttpStats::start_sampler(&stats);
    let figures = ApiFigures::register(node.metrics_registry(), "http", &routes::OPS);
    let app = Arc::new(App {
        node,
        config,
        stats,
        figures,
    });
    Router::new().fallback(dispatch).with_state(app)
}

/// Serves Riak's HTTP API on `listener` until `shutdown` completes, then
/// stops accepting and lets open requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Arc<Node>,
    mut config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let table =
        (config.table.clone()).unwrap_or_else(|| ConnectionTable::new(config.connections_max));
    config.table = Some(table.clone());
    let shared = listener::Shared {
        request_timeout: config.request_timeout,
        budget: config.budget.clone(),
        router: router(node, config),
        table,
    };
    listener::run(listener, shared, shutdown).await
}

async fn dispatch(State(app): State<Arc<App>>, req: Request) -> Response {
    #[cfg(feature = "test-hooks")]
    if req.uri().path() == TEST_PANIC_PATH {
        panic!("test hook: a handler panicked");
    }
    let (method, uri) = (req.method().clone(), req.uri().clone());
    match routes::handle(app.clone(), req).await {
        Ok(resp) => resp,
        Err(e) => {
            failed(&app, &method, &uri, &e);
            e.into_response()
        }
    }
}

/// Counts a failed request, and logs it once if the server is at fault
/// (a 5xx answer) and it was not logged where it happened: the path
/// names the bucket and key where the request has them.
fn failed(app: &App, method: &axum::http::Method, uri: &axum::http::Uri, e: &ApiError) {
    if !e.status.is_server_error() {
        app.figures.error(Side::Client);
        return;
    }
    app.figures.error(Side::Server);
    if e.logged {
        return;
    }
    let (status, path, cause) = (e.status.as_u16(), uri.path(), e.message.trim());
    if e.status == axum::http::StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(%method, path, status, cause, "http request failed");
    } else {
        tracing::warn!(%method, path, status, cause, "http request failed");
    }
}

/// Not Riak's: a path whose handler panics, to test the panic net.
#[cfg(feature = "test-hooks")]
pub const TEST_PANIC_PATH: &str = "/eddy-test/panic";

/// Reads a request body, refusing one over `max` bytes with 413 (early,
/// from Content-Length, when the client declared it) and one in a transfer
/// coding other than chunked with 501.
pub async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> Result<Bytes, ApiError> {
    super::codings::check_transfer_coding(headers)?;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(ApiError::too_large(max));
    }
    let mut stream = body.into_data_stream();
    let mut out = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ApiError::bad_request(format!("reading body: {e}")))?;
        if out.len() + chunk.len() > max {
            return Err(ApiError::too_large(max));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}
