//! An outgoing link to one peer on one lane: its bounded queue, its calls
//! waiting for replies, and the task that opens, serves and re-opens its
//! connection.
//!
//! A link is created on first use. Its task waits for a queued frame,
//! connects (handshake included), then writes queued frames and reads
//! replies until the connection ends. A failed connect puts the link down
//! for a backoff (doubling up to a maximum) during which sends and calls
//! fail at once with the connect's error; a lost connection fails the calls
//! waiting on it with `Disconnected` and the next use connects again.
//!
//! Invariants: each waiting call is completed once (reply, error frame,
//! `Disconnected`, or removed by its own timeout); a frame that cannot be
//! written fails its call instead of waiting for a later connection.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::conn::{ConnError, FrameReader, Outbound, write_frames};
use super::{TcpNode, dial};
use crate::error::call_error;
use crate::frame::{FrameKind, parse_error_body};
use crate::waiting::Waiting;
use crate::{CallError, Lane, NodeName, PeerState, SendError};

type Waiter = oneshot::Sender<Result<Bytes, CallError>>;

/// One (peer, lane) link.
pub(crate) struct Link {
    peer: NodeName,
    lane: Lane,
    queue: mpsc::Sender<Outbound>,
    state: Mutex<LinkState>,
    waiting: Waiting<Waiter>,
}

enum LinkState {
    /// Connected, or free to connect on the next frame.
    Usable,
    /// The last connect failed; frames fail with `error` until `until`.
    Down { until: Instant, error: SendError },
}

impl Link {
    /// Creates the link and starts its task.
    pub(crate) fn open(node: &Arc<TcpNode>, peer: NodeName, lane: Lane) -> Arc<Link> {
        let (queue, rx) = mpsc::channel(node.core.config.queue_frames(lane));
        let link = Arc::new(Link {
            peer,
            lane,
            queue,
            state: Mutex::new(LinkState::Usable),
            waiting: Waiting::new(),
        });
        node.spawn(run(node.clone(), link.clone(), rx));
        link
    }

    pub(crate) async fn send(&self, body: Bytes) -> Result<(), SendError> {
        self.admit()?;
        let frame = Outbound::new(FrameKind::OneWay, 0, body);
        self.queue
            .send(frame)
            .await
            .map_err(|_| SendError::Shutdown)
    }

    pub(crate) fn try_send(&self, body: Bytes) -> Result<(), SendError> {
        self.admit()?;
        let frame = Outbound::new(FrameKind::OneWay, 0, body);
        self.queue.try_send(frame).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => SendError::Overloaded,
            mpsc::error::TrySendError::Closed(_) => SendError::Shutdown,
        })
    }

    pub(crate) async fn call(&self, body: Bytes, deadline: Instant) -> Result<Bytes, CallError> {
        self.admit()?;
        let (tx, rx) = oneshot::channel();
        let id = self.waiting.register(tx);
        let _forget = ForgetOnDrop { link: self, id };
        let exchange = async {
            let frame = Outbound::new(FrameKind::Request, id, body);
            self.queue
                .send(frame)
                .await
                .map_err(|_| CallError::Shutdown)?;
            rx.await.unwrap_or(Err(CallError::Disconnected))
        };
        tokio::time::timeout_at(deadline, exchange)
            .await
            .unwrap_or(Err(CallError::Timeout))
    }

    /// Fails every waiting call with `error` (shutdown).
    pub(crate) fn fail_all(&self, error: &CallError) {
        for tx in self.waiting.take_all() {
            let _ = tx.send(Err(error.clone()));
        }
    }

    /// Lets the next frame try to connect at once.
    pub(crate) fn clear_backoff(&self) {
        *self.state.lock() = LinkState::Usable;
    }

    fn admit(&self) -> Result<(), SendError> {
        match &*self.state.lock() {
            LinkState::Down { until, error } if Instant::now() < *until => Err(error.clone()),
            _ => Ok(()),
        }
    }

    fn complete(&self, id: u64, answer: Result<Bytes, CallError>) {
        // A missing id is a call that already timed out.
        if let Some(tx) = self.waiting.take(id) {
            let _ = tx.send(answer);
        }
    }

    fn fail(&self, frame: Outbound, error: &CallError) {
        if let Some(id) = frame.request_id() {
            self.complete(id, Err(error.clone()));
        }
    }

    fn drain(&self, rx: &mut mpsc::Receiver<Outbound>, error: &CallError) {
        while let Ok(frame) = rx.try_recv() {
            self.fail(frame, error);
        }
    }
}

/// Removes a call's waiter when the call ends, however it ends.
struct ForgetOnDrop<'a> {
    link: &'a Link,
    id: u64,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        self.link.waiting.take(self.id);
    }
}

async fn run(node: Arc<TcpNode>, link: Arc<Link>, mut rx: mpsc::Receiver<Outbound>) {
    let config = &node.core.config;
    let mut backoff = config.reconnect_backoff_min;
    while let Some(first) = rx.recv().await {
        if let Err(error) = link.admit() {
            let error = CallError::from(error);
            link.fail(first, &error);
            link.drain(&mut rx, &error);
            continue;
        }
        match dial(&node, &link.peer, link.lane).await {
            Err((error, state)) => {
                *link.state.lock() = LinkState::Down {
                    until: Instant::now() + backoff,
                    error: error.clone(),
                };
                backoff = backoff.saturating_mul(2).min(config.reconnect_backoff_max);
                node.core.emit(&link.peer, link.lane, state);
                let error = CallError::from(error);
                link.fail(first, &error);
                link.drain(&mut rx, &error);
            }
            Ok(stream) => {
                backoff = config.reconnect_backoff_min;
                node.core.emit(&link.peer, link.lane, PeerState::Connected);
                let why = serve(&node, &link, stream, first, &mut rx).await;
                tracing::info!(peer = %link.peer, lane = ?link.lane, "connection lost: {why}");
                link.fail_all(&CallError::Disconnected);
                link.drain(&mut rx, &CallError::Disconnected);
                node.core.emit(
                    &link.peer,
                    link.lane,
                    PeerState::Lost(why.to_string().into()),
                );
            }
        }
    }
}

/// Writes and reads on an open connection until it ends.
async fn serve(
    node: &TcpNode,
    link: &Link,
    stream: TcpStream,
    first: Outbound,
    rx: &mut mpsc::Receiver<Outbound>,
) -> ConnError {
    let (rd, wr) = stream.into_split();
    let mut reader = FrameReader::new(rd, node.core.config.frame_body_bytes_max);
    let read = async {
        loop {
            let frame = reader.next().await?;
            match frame.kind {
                FrameKind::Reply => link.complete(frame.request_id, Ok(frame.body)),
                FrameKind::Error => {
                    let (code, reason) = parse_error_body(&frame.body);
                    link.complete(frame.request_id, Err(call_error(code, &reason)));
                }
                FrameKind::Request | FrameKind::OneWay => {
                    return Err(ConnError::Protocol("a request on an outgoing connection"));
                }
            }
        }
    };
    let result: Result<(), ConnError> = tokio::select! {
        r = read => r,
        w = write_frames(wr, Some(first), rx) => w,
    };
    match result {
        Ok(()) => ConnError::Closed,
        Err(e) => {
            if matches!(e, ConnError::Frame(_) | ConnError::Protocol(_)) {
                tracing::warn!(peer = %link.peer, lane = ?link.lane, "closing connection: {e}");
            }
            e
        }
    }
}
