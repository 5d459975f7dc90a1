//! One TCP connection's two halves: the writer that drains a bounded queue
//! and coalesces every queued frame into one write, and the reader that
//! slices frames out of a large buffer.
//!
//! Invariants: the reader checks each header against the frame limit before
//! reserving room for its body; bodies handed out share the read buffer;
//! the writer writes frames in queue order.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use crate::error::ReplyError;
use crate::frame::{self, FRAME_HEADER_BYTES, Frame, FrameError, FrameKind};

/// The writer stops adding frames to one write past this many bytes.
const COALESCE_BYTES_MAX: usize = 256 << 10;
/// Bodies from this size on are written from their own buffer, not copied.
const BODY_COPY_BYTES_MAX: usize = 64 << 10;
/// The reader asks the socket for at least this much room per read.
const READ_BYTES_MIN: usize = 64 << 10;
/// A fresh read buffer's size.
const READ_BUFFER_BYTES: usize = 256 << 10;

/// A frame waiting in a connection's queue.
#[derive(Debug)]
pub(crate) struct Outbound {
    kind: FrameKind,
    request_id: u64,
    body: Bytes,
    /// Held until the frame is written: it bounds a peer's outstanding
    /// requests on an inbound connection.
    _permit: Option<OwnedSemaphorePermit>,
}

impl Outbound {
    pub(crate) fn new(kind: FrameKind, request_id: u64, body: Bytes) -> Outbound {
        Outbound {
            kind,
            request_id,
            body,
            _permit: None,
        }
    }

    /// The request id, if this is a request.
    pub(crate) fn request_id(&self) -> Option<u64> {
        (self.kind == FrameKind::Request).then_some(self.request_id)
    }
}

/// Where the answer to one inbound request goes: the connection's queue,
/// with the permit that reserved a place in it.
#[derive(Debug)]
pub(crate) struct ReplyQueue {
    tx: mpsc::Sender<Outbound>,
    permit: OwnedSemaphorePermit,
}

impl ReplyQueue {
    pub(crate) fn new(tx: mpsc::Sender<Outbound>, permit: OwnedSemaphorePermit) -> ReplyQueue {
        ReplyQueue { tx, permit }
    }

    /// Queues the answer. The queue holds as many frames as there are
    /// permits, so it cannot be full while this one is held.
    pub(crate) fn push(self, mut frame: Outbound) -> Result<(), ReplyError> {
        frame._permit = Some(self.permit);
        self.tx.try_send(frame).map_err(|e| {
            if matches!(e, mpsc::error::TrySendError::Full(_)) {
                tracing::error!("reply queue full although a permit was held; reply dropped");
            }
            ReplyError::Disconnected
        })
    }
}

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnError {
    #[error("closed by the peer")]
    Closed,
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad frame: {0}")]
    Frame(#[from] FrameError),
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
}

/// Writes queued frames until the queue closes or a write fails.
pub(crate) async fn write_frames(
    mut wr: OwnedWriteHalf,
    mut next: Option<Outbound>,
    rx: &mut mpsc::Receiver<Outbound>,
) -> Result<(), ConnError> {
    let mut buf = BytesMut::with_capacity(COALESCE_BYTES_MAX);
    loop {
        let first = match next.take() {
            Some(frame) => frame,
            None => match rx.recv().await {
                Some(frame) => frame,
                None => return Ok(()),
            },
        };
        let mut frame = Some(first);
        while let Some(f) = frame.take() {
            frame::encode_header(f.kind, f.request_id, f.body.len(), &mut buf);
            if f.body.len() < BODY_COPY_BYTES_MAX {
                buf.extend_from_slice(&f.body);
            } else {
                wr.write_all(&buf).await?;
                buf.clear();
                wr.write_all(&f.body).await?;
            }
            drop(f);
            if buf.len() < COALESCE_BYTES_MAX {
                frame = rx.try_recv().ok();
            }
        }
        wr.write_all(&buf).await?;
        buf.clear();
    }
}

/// Reads frames off one connection.
pub(crate) struct FrameReader {
    rd: OwnedReadHalf,
    buf: BytesMut,
    body_bytes_max: usize,
}

impl FrameReader {
    pub(crate) fn new(rd: OwnedReadHalf, body_bytes_max: usize) -> FrameReader {
        FrameReader {
            rd,
            buf: BytesMut::with_capacity(READ_BUFFER_BYTES),
            body_bytes_max,
        }
    }

    /// The next frame; `Closed` at a clean end between frames.
    pub(crate) async fn next(&mut self) -> Result<Frame, ConnError> {
        loop {
            if let Some(frame) = frame::decode(&mut self.buf, self.body_bytes_max)? {
                return Ok(frame);
            }
            let needed =
                frame::bytes_needed(&self.buf, self.body_bytes_max)?.unwrap_or(FRAME_HEADER_BYTES);
            let room = needed.saturating_sub(self.buf.len()).max(READ_BYTES_MIN);
            if self.buf.capacity() - self.buf.len() < room {
                self.buf.reserve(room.max(READ_BUFFER_BYTES));
            }
            if self.rd.read_buf(&mut self.buf).await? == 0 {
                return Err(if self.buf.is_empty() {
                    ConnError::Closed
                } else {
                    ConnError::Frame(FrameError::Truncated(self.buf.len()))
                });
            }
        }
    }
}
