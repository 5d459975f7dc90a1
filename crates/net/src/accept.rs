//! The one accept loop of every listener Eddy runs: the node-to-node
//! transport's, and the PB and HTTP APIs' (design note 024).
//!
//! The loop accepts, turns on `TCP_NODELAY` (every protocol here is
//! request/response with small frames), and runs each connection as its own
//! task. What to do with a connection — a handshake, a connection cap with
//! idle-first eviction, a protocol — is the caller's `serve`.
//!
//! Invariants: the loop never waits on a connection; a failed accept (out
//! of file descriptors, `EMFILE`/`ENFILE`, or any other error) pauses the
//! loop for [`ACCEPT_BACKOFF`] so it does not spin, and is logged at most
//! once per [`WARN_INTERVAL`] with the count of failures not logged; once
//! `shutdown` completes the loop stops accepting, tells every connection
//! through its [`Stop`], and returns when all of them have finished.
//! Dropping (aborting) the loop's task aborts its connections.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How often an accept failure may be logged.
pub const WARN_INTERVAL: Duration = Duration::from_secs(10);

/// How long the accept loop pauses after a failure, so it does not spin.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Tells a connection that its listener is shutting down: it should stop
/// reading new requests and finish the ones in flight.
pub type Stop = watch::Receiver<bool>;

/// Accepts connections on `listener` until `shutdown` completes, running
/// `serve(stream, peer address, stop)` for each as its own task; then
/// signals every connection's [`Stop`] and waits for them to finish.
/// `name` ("pb", "http", "cluster") labels the warnings.
pub async fn accept_loop<S, F>(
    listener: TcpListener,
    name: &'static str,
    shutdown: impl Future<Output = ()>,
    mut serve: S,
) where
    S: FnMut(TcpStream, SocketAddr, Stop) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut backoff = AcceptBackoff::new(name);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve(stream, addr, stop_rx.clone()));
                }
                Err(e) => backoff.failed(e).await,
            },
            // Reaps finished connections, so the set holds live ones only.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    while connections.join_next().await.is_some() {}
}

/// Decides which warnings are written: at most one line per interval,
/// carrying the count of the lines suppressed since the last one. The
/// clock is passed in, so the limiter is tested without sleeping.
#[derive(Debug)]
pub struct WarnLimiter {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl WarnLimiter {
    /// A limiter writing at most one line per `interval`.
    pub fn new(interval: Duration) -> Self {
        WarnLimiter {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// Notes one event at `now`. Returns `Some(suppressed)` when a line
    /// should be written (with the number of events not written since the
    /// previous line), `None` when this one is suppressed.
    pub fn note(&mut self, now: Instant) -> Option<u64> {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.interval);
        if !due {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// The accept loop's reaction to a failed accept: a rate-limited warning
/// and a short pause. When the process runs out of file descriptors every
/// accept fails at once; one line per failure would flood the log.
#[derive(Debug)]
struct AcceptBackoff {
    name: &'static str,
    limiter: WarnLimiter,
}

impl AcceptBackoff {
    fn new(name: &'static str) -> Self {
        AcceptBackoff {
            name,
            limiter: WarnLimiter::new(WARN_INTERVAL),
        }
    }

    /// Logs `e` unless rate-limited, then pauses briefly.
    async fn failed(&mut self, e: std::io::Error) {
        if let Some(suppressed) = self.limiter.note(Instant::now()) {
            tracing::warn!(
                "{} accept failed: {e} ({suppressed} similar failures not logged)",
                self.name
            );
        }
        tokio::time::sleep(ACCEPT_BACKOFF).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn first_failure_is_logged() {
        let mut l = WarnLimiter::new(Duration::from_secs(10));
        assert_eq!(l.note(Instant::now()), Some(0));
    }

    #[test]
    fn failures_within_the_interval_are_counted_not_logged() {
        let mut l = WarnLimiter::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(l.note(t0), Some(0));
        for i in 1..=500u64 {
            assert_eq!(l.note(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(l.note(t0 + Duration::from_secs(10)), Some(500));
        assert_eq!(l.note(t0 + Duration::from_secs(11)), None);
        assert_eq!(l.note(t0 + Duration::from_secs(25)), Some(1));
    }

    /// A connection is served on its own task; on shutdown the loop stops
    /// accepting, signals the connection and returns only once it ended.
    #[tokio::test]
    async fn serves_connections_and_drains_them_on_shutdown() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let finished = Arc::new(AtomicUsize::new(0));
        let served = finished.clone();
        let serving = tokio::spawn(accept_loop(
            listener,
            "test",
            async move {
                let _ = shutdown_rx.await;
            },
            move |mut stream, _, mut stop| {
                let served = served.clone();
                async move {
                    stream.write_all(b"hi").await.unwrap();
                    let _ = stop.wait_for(|s| *s).await;
                    served.fetch_add(1, Ordering::SeqCst);
                }
            },
        ));
        let mut client = TcpStream::connect(addr).await.unwrap();
        let mut greeting = [0u8; 2];
        client.read_exact(&mut greeting).await.unwrap();
        assert_eq!(&greeting, b"hi");
        shutdown_tx.send(()).unwrap();
        serving.await.unwrap();
        assert_eq!(finished.load(Ordering::SeqCst), 1);
    }
}
