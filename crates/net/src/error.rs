//! What can go wrong when sending, calling or replying.
//!
//! Each variant says one thing the caller can act on: try another node
//! (`Unreachable`, `Refused`), retry later (`Overloaded`, `Timeout`), or
//! give up on this request (`TooLarge`, `NoReply`).

use std::sync::Arc;

/// Why a one-way message was not queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// No connection could be opened to the peer (no address, refused,
    /// timed out, crashed in a simulation); sends fail at once until the
    /// reconnect backoff has passed.
    #[error("unreachable: {0}")]
    Unreachable(Arc<str>),
    /// The peer refused the handshake (protocol version, cluster name).
    #[error("refused by the peer: {0}")]
    Refused(Arc<str>),
    /// The connection's queue is full (`try_send` only).
    #[error("the connection's queue is full")]
    Overloaded,
    /// The body is larger than the frame limit.
    #[error("message of {size} bytes exceeds the frame limit of {max}")]
    TooLarge {
        /// The body's length.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The transport was shut down.
    #[error("the transport is shut down")]
    Shutdown,
}

/// Why a call got no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No connection could be opened to the peer.
    #[error("unreachable: {0}")]
    Unreachable(Arc<str>),
    /// The connection was lost while the call waited for its reply.
    #[error("connection lost while waiting for the reply")]
    Disconnected,
    /// The deadline passed first.
    #[error("no reply before the deadline")]
    Timeout,
    /// The peer's handler refused the request because it is overloaded, or
    /// (`try_call`) the connection's queue is full.
    #[error("overloaded")]
    Overloaded,
    /// The peer refused the handshake (protocol version, cluster name).
    #[error("refused by the peer: {0}")]
    Refused(Arc<str>),
    /// The request, or the peer's reply, is larger than the frame limit.
    #[error("message exceeds the frame limit: {0}")]
    TooLarge(Arc<str>),
    /// The peer dropped the request without answering (its handler dropped
    /// the responder, or no handler is registered there).
    #[error("no reply: {0}")]
    NoReply(Arc<str>),
    /// The transport was shut down.
    #[error("the transport is shut down")]
    Shutdown,
}

impl From<SendError> for CallError {
    fn from(e: SendError) -> CallError {
        match e {
            SendError::Unreachable(r) => CallError::Unreachable(r),
            SendError::Refused(r) => CallError::Refused(r),
            SendError::Overloaded => CallError::Overloaded,
            SendError::TooLarge { size, max } => {
                CallError::TooLarge(format!("request of {size} bytes, limit {max}").into())
            }
            SendError::Shutdown => CallError::Shutdown,
        }
    }
}

/// Why a reply did not leave.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The reply is larger than the frame limit; the caller gets `TooLarge`.
    #[error("reply of {size} bytes exceeds the frame limit of {max}")]
    TooLarge {
        /// The reply's length.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The connection to the caller is gone; the caller saw `Disconnected`.
    #[error("the caller's connection is gone")]
    Disconnected,
}

/// A handler was already registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a handler is already registered on this transport")]
pub struct HandlerAlreadySet;

/// The caller's error for an error frame's code and reason.
pub(crate) fn call_error(code: crate::frame::ErrorCode, reason: &str) -> CallError {
    use crate::frame::ErrorCode;
    match code {
        ErrorCode::NoReply | ErrorCode::NoHandler => CallError::NoReply(reason.into()),
        ErrorCode::TooLarge => CallError::TooLarge(reason.into()),
        ErrorCode::Overloaded => CallError::Overloaded,
    }
}
