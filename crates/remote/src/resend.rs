//! Replies sent again from a task: one that found the transport's queue
//! full waits for room; one whose link to its coordinator is down (the
//! transport refused it at once) is tried again after waits that double,
//! for a bounded time, then dropped.
//!
//! Invariant: a reply's task ends within `retry_for` of its first attempt
//! plus the time its last send waits for room in the queue.

use std::time::Duration;

use bytes::Bytes;
use eddy_net::{Lane, NodeName, SendError, Transport};
use tokio::time::Instant;

/// How replies are retried.
#[derive(Clone, Copy, Debug)]
pub(super) struct Resend {
    /// The first wait between attempts; each later one doubles.
    pub(super) wait: Duration,
    /// How long after the first attempt a reply is still tried.
    pub(super) retry_for: Duration,
}

impl Resend {
    /// Sends `body` to `to` after `first_wait`, again while the link is
    /// down and the time allows.
    pub(super) async fn send(
        self,
        transport: Transport,
        to: NodeName,
        body: Bytes,
        first_wait: Duration,
    ) {
        let give_up = Instant::now() + self.retry_for;
        let mut wait = first_wait;
        loop {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let e = match transport.send(&to, Lane::Control, body.clone()).await {
                Ok(()) => return,
                Err(e) => e,
            };
            wait = wait.saturating_mul(2).max(self.wait);
            let retry = matches!(e, SendError::Unreachable(_) | SendError::Refused(_));
            if !retry || Instant::now() + wait > give_up {
                return tracing::debug!(%to, "reply dropped: {e}");
            }
        }
    }
}
