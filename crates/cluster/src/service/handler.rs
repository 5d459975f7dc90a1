//! Incoming membership messages. The transport has one handler per node;
//! [`Inner::dispatch`] takes the messages whose first byte is the
//! service's and gives every other back, so the composition root can try
//! kv's and handoff's handlers next.
//!
//! Pings are answered on the spot (they must not queue behind a save);
//! everything else runs in its own task, since the handler runs on the
//! transport's reader and must not block.

use std::sync::Arc;

use bytes::Bytes;
use eddy_net::{Incoming, Responder};

use super::core::Inner;
use super::error::ErrorWire;
use super::wire::{self, Message, Reply};
use super::{exec, gossip, probe};

impl Inner {
    /// Handles `incoming` if it is a membership message; returns it
    /// otherwise.
    pub(crate) fn dispatch(self: &Arc<Self>, incoming: Incoming) -> Option<Incoming> {
        if !wire::is_membership(&incoming.body) {
            return Some(incoming);
        }
        if self.is_closed() {
            return None;
        }
        let msg: Message = match wire::decode(&incoming.body) {
            Ok(msg) => msg,
            Err(e) => {
                tracing::warn!(node = %self.me, peer = %incoming.from, error = %e,
                    "dropped a bad membership message");
                return None;
            }
        };
        let Incoming {
            from, responder, ..
        } = incoming;
        if let Message::Ping { epoch } = msg {
            probe::pinged_by(self, &from, epoch);
            let epoch = self.current().epoch();
            answer(responder, &Reply::Ack { epoch });
            return None;
        }
        let inner = self.clone();
        tokio::spawn(async move { inner.serve(from, msg, responder).await });
        None
    }

    /// Handles one message other than a ping.
    async fn serve(
        self: Arc<Self>,
        from: eddy_net::NodeName,
        msg: Message,
        responder: Option<Responder>,
    ) {
        let reply = match msg {
            Message::Ping { epoch } => Some(Reply::Ack { epoch }),
            Message::PingReq { target } => probe::relay_ping(&self, &target).await,
            Message::Digest { digest } => Some(gossip::answer_digest(&self, digest)),
            Message::State(state) => {
                gossip::receive_state(&self, &from, &state).await;
                None
            }
            Message::Sync(state) => match gossip::absorb(&self, &from, &state).await {
                Ok(_) => Some(Reply::Ack {
                    epoch: self.current().epoch(),
                }),
                Err(e) => {
                    tracing::warn!(node = %self.me, peer = %from, error = %e, "sync not saved");
                    None
                }
            },
            Message::Admin { hops, request } => {
                let done = exec::route_admin(&self, hops, request).await;
                Some(Reply::Admin(
                    done.map_err(|e| ErrorWire::from_error(e, &self.me)),
                ))
            }
            Message::TransferLimit { limit } => {
                self.limit_tx.send_replace(limit);
                tracing::info!(node = %self.me, limit, "transfer limit set");
                Some(Reply::Ack {
                    epoch: self.current().epoch(),
                })
            }
        };
        if let Some(reply) = reply {
            answer(responder, &reply);
        }
    }
}

/// Answers a call; a one-way message has no one to answer.
fn answer(responder: Option<Responder>, reply: &Reply) {
    let Some(responder) = responder else {
        return;
    };
    let body: Bytes = wire::encode(reply);
    if let Err(e) = responder.reply(body) {
        tracing::warn!(error = %e, "membership reply not sent");
    }
}
