//! A request body that must arrive within a deadline: once it passes, the
//! next read fails, so a client sending less than its Content-Length (or
//! trickling it) cannot hold a request open.
//!
//! The deadline is armed when the body is first read, so a handler that
//! answers without reading the body is never affected.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::Sleep;

/// Why a body read failed.
#[derive(Debug, thiserror::Error)]
pub enum TimedBodyError {
    #[error("request body not received within {0} ms")]
    Timeout(u128),
    #[error(transparent)]
    Body(#[from] hyper::Error),
}

/// [`Incoming`] with a deadline.
pub struct TimedBody {
    inner: Incoming,
    limit: Option<Duration>,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl TimedBody {
    /// `inner`, which must arrive whole within `limit` of its first read.
    pub fn new(inner: Incoming, limit: Option<Duration>) -> Self {
        TimedBody {
            inner,
            limit,
            deadline: None,
        }
    }
}

impl Body for TimedBody {
    type Data = Bytes;
    type Error = TimedBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, TimedBodyError>>> {
        let this = self.get_mut();
        if let Some(limit) = this.limit {
            let deadline = this
                .deadline
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Some(Err(TimedBodyError::Timeout(limit.as_millis()))));
            }
        }
        Pin::new(&mut this.inner)
            .poll_frame(cx)
            .map(|f| f.map(|r| r.map_err(TimedBodyError::from)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
