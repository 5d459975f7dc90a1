//! The listener's side: accepting connections, checking their handshake,
//! and serving the requests and one-way messages they carry.
//!
//! Invariant: a refused handshake is logged here and answered with its
//! reason, so both sides say why.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};

use super::TcpNode;
use super::conn::{ConnError, FrameReader, Outbound, ReplyQueue, write_frames};
use crate::accept;
use crate::frame::{ErrorCode, FrameKind};
use crate::handshake::{Hello, Welcome};
use crate::responder::Sink;
use crate::{Incoming, Lane, NodeName, Responder};

/// Accepts peer connections until [`TcpNode::shutdown`] aborts this task
/// (and with it every connection it accepted).
pub(super) async fn accept_loop(node: Arc<TcpNode>, listener: TcpListener) {
    let serve = |stream, addr, _stop| serve(node.clone(), stream, addr);
    accept::accept_loop(listener, "cluster", std::future::pending(), serve).await;
}

async fn serve(node: Arc<TcpNode>, mut stream: TcpStream, addr: SocketAddr) {
    let config = &node.core.config;
    let hello = match tokio::time::timeout(config.handshake_timeout, Hello::read(&mut stream)).await
    {
        Ok(Ok(hello)) => hello,
        Ok(Err(e)) => {
            tracing::warn!(%addr, "closing peer connection: {e}");
            return;
        }
        Err(_) => {
            tracing::warn!(%addr, "closing peer connection: no handshake in time");
            return;
        }
    };
    let welcome = check(&node, &hello);
    if let Welcome::Refused { reason } = &welcome {
        tracing::warn!(%addr, peer = %hello.from, "refusing peer connection: {reason}");
    }
    let sent = tokio::time::timeout(
        config.handshake_timeout,
        stream.write_all(&welcome.encode()),
    )
    .await;
    if !matches!(sent, Ok(Ok(()))) || matches!(welcome, Welcome::Refused { .. }) {
        return;
    }
    // The peer is up: our own links to it need not wait out a backoff
    // from the time it was down (its replies would be dropped meanwhile).
    node.peer_is_up(&hello.from);
    if let Err(e) = serve_frames(&node, stream, hello.from.clone(), hello.lane).await {
        let log = matches!(e, ConnError::Frame(_) | ConnError::Protocol(_));
        if log {
            tracing::warn!(%addr, peer = %hello.from, "closing peer connection: {e}");
        } else {
            tracing::debug!(%addr, peer = %hello.from, "peer connection ended: {e}");
        }
    }
}

fn check(node: &TcpNode, hello: &Hello) -> Welcome {
    let config = &node.core.config;
    let ours = config.protocol_versions;
    let reason = if hello.cluster != config.cluster_name {
        format!(
            "cluster name {:?} differs from this node's {:?}",
            hello.cluster, config.cluster_name
        )
    } else if hello.to != node.core.local {
        format!("this is node {}, not {}", node.core.local, hello.to)
    } else if let Some(version) = ours.negotiate(hello.versions) {
        return Welcome::Accepted { version };
    } else {
        format!(
            "no common protocol version: the peer speaks {}..={}, this node {}..={}",
            hello.versions.min, hello.versions.max, ours.min, ours.max
        )
    };
    Welcome::Refused { reason }
}

async fn serve_frames(
    node: &TcpNode,
    stream: TcpStream,
    from: NodeName,
    lane: Lane,
) -> Result<(), ConnError> {
    let config = &node.core.config;
    let max = config.frame_body_bytes_max;
    let slots = config.queue_frames(lane);
    let (rd, wr) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Outbound>(slots);
    let permits = Arc::new(Semaphore::new(slots));
    let mut reader = FrameReader::new(rd, max);
    let read = async {
        loop {
            let frame = reader.next().await?;
            let responder = match frame.kind {
                FrameKind::OneWay => None,
                FrameKind::Request => {
                    let permit = permits
                        .clone()
                        .acquire_owned()
                        .await
                        .map_err(|_| ConnError::Closed)?;
                    let queue = ReplyQueue::new(tx.clone(), permit);
                    Some(Responder::new(Sink::Tcp(queue, frame.request_id), max))
                }
                FrameKind::Reply | FrameKind::Error => {
                    return Err(ConnError::Protocol("a reply on an incoming connection"));
                }
            };
            let Some(handler) = node.core.handler() else {
                if let Some(responder) = responder {
                    no_handler(responder);
                }
                continue;
            };
            handler(Incoming {
                from: from.clone(),
                lane,
                body: frame.body,
                responder,
            });
        }
    };
    tokio::select! {
        r = read => r,
        w = write_frames(wr, None, &mut rx) => w,
    }
}

fn no_handler(responder: Responder) {
    responder.refuse(
        ErrorCode::NoHandler,
        "no handler registered on the peer yet",
    );
}
