//! The answer to one call, which a handler may give later from any thread.
//!
//! Invariant: every call ends: a responder either replies, refuses, or on
//! drop sends a `NoReply` error, so the caller never waits past the moment
//! the handler gives the request up.

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::error::{CallError, ReplyError, call_error};
use crate::frame::{ErrorCode, FrameKind, error_body};
use crate::sim::SimReply;
use crate::tcp::{Outbound, ReplyQueue};

/// Where a call's answer goes. Dropping it unanswered fails the call with
/// [`CallError::NoReply`].
#[derive(Debug)]
pub struct Responder {
    sink: Option<Sink>,
    body_bytes_max: usize,
}

#[derive(Debug)]
pub(crate) enum Sink {
    /// A call that came over a TCP connection.
    Tcp(ReplyQueue, u64),
    /// A call made to this node itself.
    Local(oneshot::Sender<Result<Bytes, CallError>>),
    /// A call across a simulated network.
    Sim(SimReply),
}

impl Responder {
    pub(crate) fn new(sink: Sink, body_bytes_max: usize) -> Responder {
        Responder {
            sink: Some(sink),
            body_bytes_max,
        }
    }

    /// Sends the reply. A reply over the frame limit reaches the caller as
    /// [`CallError::TooLarge`] instead.
    pub fn reply(mut self, body: Bytes) -> Result<(), ReplyError> {
        let Some(sink) = self.sink.take() else {
            return Ok(());
        };
        let max = self.body_bytes_max;
        if body.len() > max {
            let reason = format!("reply of {} bytes, limit {max}", body.len());
            let _ = deliver(sink, Err((ErrorCode::TooLarge, reason)));
            return Err(ReplyError::TooLarge {
                size: body.len(),
                max,
            });
        }
        deliver(sink, Ok(body))
    }

    /// Refuses the request because this node is overloaded; the caller gets
    /// [`CallError::Overloaded`] and may try another replica.
    pub fn refuse_overloaded(self) {
        self.refuse(ErrorCode::Overloaded, "overloaded");
    }

    /// Fails the call with an error frame of `code`.
    pub(crate) fn refuse(mut self, code: ErrorCode, reason: &str) {
        if let Some(sink) = self.sink.take() {
            let _ = deliver(sink, Err((code, reason.to_owned())));
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(sink) = self.sink.take() {
            let reason = "the handler dropped the request without answering".to_owned();
            let _ = deliver(sink, Err((ErrorCode::NoReply, reason)));
        }
    }
}

/// A reply, or an error code and reason for the caller.
pub(crate) type Answer = Result<Bytes, (ErrorCode, String)>;

fn deliver(sink: Sink, answer: Answer) -> Result<(), ReplyError> {
    match sink {
        Sink::Tcp(queue, id) => {
            let (kind, body) = match answer {
                Ok(body) => (FrameKind::Reply, body),
                Err((code, reason)) => (FrameKind::Error, error_body(code, &reason)),
            };
            queue.push(Outbound::new(kind, id, body))
        }
        Sink::Local(tx) => {
            let _ = tx.send(answer.map_err(|(code, reason)| call_error(code, &reason)));
            Ok(())
        }
        Sink::Sim(reply) => {
            reply.deliver(answer);
            Ok(())
        }
    }
}
