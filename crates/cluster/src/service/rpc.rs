//! Calls and one-way sends of membership messages over the transport,
//! always on the control lane.

use eddy_net::{CallError, Lane};
use eddy_ring::NodeName;
use tokio::time::Instant;

use super::core::Inner;
use super::error::MembershipError;
use super::wire::{self, Message, Reply, WireError};

/// Why a call brought no usable reply.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// The transport's error.
    Call(CallError),
    /// The reply did not decode.
    Decode(WireError),
}

impl CallFailure {
    /// Whether the peer's process is gone or its port closed: its
    /// connection was refused, lost, or could not be opened.
    pub(crate) fn is_connection_failure(&self) -> bool {
        matches!(
            self,
            CallFailure::Call(
                CallError::Unreachable(_) | CallError::Refused(_) | CallError::Disconnected
            )
        )
    }

    pub(crate) fn into_error(self, node: &NodeName) -> MembershipError {
        match self {
            CallFailure::Call(CallError::Shutdown) => MembershipError::Shutdown,
            CallFailure::Call(e) => MembershipError::Unreachable {
                node: node.clone(),
                reason: e.to_string(),
            },
            CallFailure::Decode(e) => MembershipError::BadReply {
                node: node.clone(),
                reason: e.to_string(),
            },
        }
    }
}

impl Inner {
    /// Calls `to` with `msg`, waiting for its reply until `deadline`.
    pub(crate) async fn call(
        &self,
        to: &NodeName,
        msg: &Message,
        deadline: Instant,
    ) -> Result<Reply, CallFailure> {
        let body = wire::encode(msg);
        let reply = self
            .transport
            .call(to, Lane::Control, body, deadline)
            .await
            .map_err(CallFailure::Call)?;
        wire::decode(&reply).map_err(CallFailure::Decode)
    }

    /// Like [`Inner::call`], with the service's error for a failure.
    pub(crate) async fn ask(
        &self,
        to: &NodeName,
        msg: &Message,
        deadline: Instant,
    ) -> Result<Reply, MembershipError> {
        self.call(to, msg, deadline)
            .await
            .map_err(|e| e.into_error(to))
    }

    /// Sends `msg` to `to` one way; a failure is only logged (gossip
    /// retries by itself).
    pub(crate) async fn tell(&self, to: &NodeName, msg: &Message) {
        let body = wire::encode(msg);
        if let Err(e) = self.transport.send(to, Lane::Control, body).await {
            tracing::debug!(node = %self.me, peer = %to, error = %e, "membership send failed");
        }
    }
}
