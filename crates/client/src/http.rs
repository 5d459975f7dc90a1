//! A blocking HTTP client for the CLI's admin calls and for tests: one
//! call, one answer read whole. It is reqwest's blocking client (the bench
//! tool's HTTP driver is reqwest's async one), so the tree holds one HTTP
//! client crate.
//!
//! Invariants: every request is bounded by [`TIMEOUT`]; connections are
//! not kept for reuse, so a call after a node restarted on the same port
//! never lands on a stale connection; redirects are answers, not
//! followed. The blocking client runs its own runtime thread and must
//! not block an async runtime's thread: a call made inside one (tests
//! do) is sent from a scoped thread of its own.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::Method;
use reqwest::blocking::Client;
use reqwest::redirect::Policy;

/// How long a call may take, connect to last byte.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// An HTTP response, its body read whole.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The process's client, made on first use.
fn client() -> std::io::Result<&'static Client> {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c);
    }
    let built = Client::builder()
        .timeout(TIMEOUT)
        .pool_max_idle_per_host(0)
        .redirect(Policy::none())
        .build()
        .map_err(std::io::Error::other)?;
    Ok(CLIENT.get_or_init(|| built))
}

/// Sends `method path` with `headers` and `body` to `addr` (`host:port`);
/// any status is an answer, `Err` means none came (refused, timed out,
/// malformed). Called from inside an async runtime (a test's), the call
/// runs on a thread of its own, since reqwest's blocking client must not
/// block a runtime's thread.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    if tokio::runtime::Handle::try_current().is_err() {
        return send(addr, method, path, headers, body);
    }
    std::thread::scope(|s| {
        s.spawn(|| send(addr, method, path, headers, body))
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the HTTP call panicked")))
    })
}

/// [`request`], on the calling thread.
fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    let method = Method::from_bytes(method.as_bytes()).map_err(std::io::Error::other)?;
    let mut req = client()?
        .request(method, format!("http://{addr}{path}"))
        .body(body.to_vec());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().map_err(io_error)?;
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (k.as_str().to_string(), value)
        })
        .collect();
    let body = resp.bytes().map_err(io_error)?.to_vec();
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

/// reqwest's error as an I/O error of the kind its cause was (a refused
/// connection stays `ConnectionRefused`, so callers can tell a stopped
/// node from any other failure), or `TimedOut` past [`TIMEOUT`].
fn io_error(e: reqwest::Error) -> std::io::Error {
    let kind = match e.is_timeout() {
        true => std::io::ErrorKind::TimedOut,
        false => cause_kind(&e).unwrap_or(std::io::ErrorKind::Other),
    };
    std::io::Error::new(kind, e)
}

/// The kind of the first I/O error among `e`'s causes.
fn cause_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks a port just bound and released, where nothing listens, and
    /// checks the answer is a refusal.
    fn assert_refused() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = request(&format!("127.0.0.1:{port}"), "GET", "/ping", &[], b"").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_call_from_inside_a_runtime_is_answered() {
        // No panic from reqwest's own runtime: the refusal comes back.
        assert_refused();
    }

    #[test]
    fn a_refused_connection_is_reported_as_refused() {
        assert_refused();
    }
}
