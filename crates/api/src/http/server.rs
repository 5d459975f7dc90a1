//! The HTTP server: its settings, the shared state every handler sees, the
//! axum router and the listener loop with graceful shutdown.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use eddy_kv::Node;
use tokio_stream::StreamExt;

use super::error::ApiError;
use super::routes;
use super::stats::HttpStats;

/// Settings of the HTTP front end.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// Largest request body accepted; larger ones get 413.
    pub body_bytes_max: usize,
    /// The backend name `/stats` reports as `storage_backend`.
    pub storage_backend: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            body_bytes_max: 64 * 1024 * 1024,
            storage_backend: "memory".to_string(),
        }
    }
}

/// What every handler shares.
pub struct App {
    pub node: Arc<Node>,
    pub config: HttpConfig,
    pub stats: Arc<HttpStats>,
}

/// The router serving Riak's HTTP API over `node`.
pub fn router(node: Arc<Node>, config: HttpConfig) -> Router {
    let stats = Arc::new(HttpStats::new());
    HttpStats::start_sampler(&stats, node.clone());
    let app = Arc::new(App {
        node,
        config,
        stats,
    });
    Router::new().fallback(dispatch).with_state(app)
}

/// Serves Riak's HTTP API on `listener` until `shutdown` completes, then
/// stops accepting and lets open requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Arc<Node>,
    config: HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(node, config);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn dispatch(State(app): State<Arc<App>>, req: Request) -> Response {
    match routes::handle(app, req).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// Reads a request body, refusing one over `max` bytes with 413 (early,
/// from Content-Length, when the client declared it).
pub async fn read_body(headers: &HeaderMap, body: Body, max: usize) -> Result<Bytes, ApiError> {
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
