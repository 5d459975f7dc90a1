//! The HTTP listener: `eddy_net::accept`'s loop, admission, and one hyper
//! HTTP/1 connection per socket, with the axum router as the service.
//!
//! Invariants: at most `connections_max` connections are served; when
//! full, the longest idle one (no request in progress) is closed for a
//! newcomer, and a newcomer finding all busy gets 503 and is closed; the
//! head of each request (and the wait for it on a kept-alive connection)
//! must arrive within `request_timeout`, and its body within the same
//! time from the head, else the request fails and the connection closes; a
//! panic in a handler answers 500 and ends only that request; on shutdown
//! the listener stops accepting, idle connections close, and requests in
//! flight finish.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use eddy_net::accept::{Stop, accept_loop};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::timed_body::TimedBody;
use crate::net::{BudgetError, ConnectionTable, RequestBudget, Slot, catch_panic};

/// What every connection of a listener shares.
#[derive(Clone)]
pub(crate) struct Shared {
    pub router: Router,
    pub table: Arc<ConnectionTable>,
    pub request_timeout: Option<Duration>,
    pub budget: Option<Arc<RequestBudget>>,
}

/// Serves `shared.router` on `listener` until `shutdown` completes, then
/// waits for the connections to finish their requests in flight.
pub(crate) async fn run(
    listener: TcpListener,
    shared: Shared,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let serve = |stream, _, stop| admit(stream, shared.clone(), stop);
    accept_loop(listener, "http", shutdown, serve).await;
    Ok(())
}

async fn admit(stream: TcpStream, shared: Shared, stop: Stop) {
    match shared.table.admit() {
        Some(slot) => serve_connection(stream, shared, Arc::new(slot), stop).await,
        None => refuse(stream, shared.table.limit()).await,
    }
}

/// Answers 503 to a connection over the limit, without reading its request.
async fn refuse(mut stream: TcpStream, limit: usize) {
    let body = format!("Too many connections: the limit is {limit}\n");
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all((head + &body).as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn serve_connection(stream: TcpStream, shared: Shared, slot: Arc<Slot>, mut stop: Stop) {
    let service_slot = slot.clone();
    let router = TowerToHyperService::new(shared.router.clone());
    let timeout = shared.request_timeout;
    let budget = shared.budget.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let slot = service_slot.clone();
        let declared = declared_length(&req);
        let budget = budget.clone();
        let call = router.call(req.map(|b| TimedBody::new(b, timeout)));
        async move {
            slot.busy();
            let _reserved = match budget.as_ref().map(|b| b.reserve(declared)) {
                Some(reserving) => match reserving.await {
                    Ok(permit) => Some(permit),
                    Err(e) => {
                        slot.idle();
                        return Ok(refused(&e));
                    }
                },
                None => None,
            };
            let answered = catch_panic(std::pin::pin!(call)).await;
            slot.idle();
            Ok::<_, Infallible>(match answered {
                Ok(Ok(resp)) => resp,
                Ok(Err(never)) => match never {},
                Err(panic) => panicked(&panic),
            })
        }
    });
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new());
    builder.header_read_timeout(shared.request_timeout);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let stopping = *stop.borrow();
    if stopping {
        conn.as_mut().graceful_shutdown();
    }
    tokio::select! {
        r = conn.as_mut() => return finished(r),
        _ = stop.wait_for(|s| *s) => {}
        _ = slot.evicted() => tracing::debug!("http connection evicted for a newer one"),
    }
    conn.as_mut().graceful_shutdown();
    finished(conn.await);
}

fn finished(r: Result<(), hyper::Error>) {
    if let Err(e) = r {
        tracing::debug!("http connection closed: {e}");
    }
}

/// The body size a request declares in Content-Length (0 if none).
fn declared_length<B>(req: &Request<B>) -> usize {
    req.headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0)
}

/// The answer of a request refused for want of request budget; the
/// connection closes, since its body was not read.
fn refused(e: &BudgetError) -> Response {
    let mut resp = Response::new(Body::from(format!("{e}\n")));
    *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    resp
}

/// The answer of a request whose handler panicked.
fn panicked(panic: &str) -> Response {
    tracing::error!("http request panicked: {panic}");
    let mut resp = Response::new(Body::from(
        "Internal error: the request failed unexpectedly\n",
    ));
    *resp.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    resp
}
