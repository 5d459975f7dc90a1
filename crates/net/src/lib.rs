//! Eddy's node-to-node transport.
//!
//! Coordinators send vnode requests to vnodes on other nodes and wait for
//! their replies, gossip and failure detection send small messages, and
//! handoff streams big batches: all through one [`Transport`] handle, which
//! is either real TCP ([`Transport::tcp`]) or an in-memory network for
//! deterministic simulation ([`sim::SimNetwork`]). The payload is opaque
//! bytes: the kv layer serializes its own messages.
//!
//! - [`accept`]: the accept loop every listener runs (this transport's,
//!   and the PB and HTTP APIs');
//! - [`frame`]: the frame codec (header, kinds, error bodies);
//! - [`handshake`]: the opening exchange (magic, versions, cluster, names);
//! - [`config`]: the settings;
//! - [`error`]: what sends, calls and replies can fail with;
//! - `transport`, `responder`: the handle and the answer to a call;
//! - `tcp`: listener, per-(peer, lane) links, connection reader and writer;
//! - [`sim`]: the simulated network;
//! - [`waiting`]: requests awaiting replies, by request id (the transport's
//!   calls, and services that match their own replies by id, use it).
//!
//! Invariants: a call ends exactly once — with the reply, or with an error
//! no later than its deadline; control and bulk traffic to a peer travel on
//! separate connections (TCP) and separate queues (both); nothing is global,
//! so many transports and networks can live in one process.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod accept;
pub mod config;
pub mod error;
pub mod frame;
pub mod handshake;
mod responder;
pub mod sim;
mod tcp;
mod transport;
pub mod waiting;

use std::sync::Arc;

use bytes::Bytes;
pub use config::NetConfig;
pub use eddy_ring::NodeName;
pub use error::{CallError, HandlerAlreadySet, ReplyError, SendError};
pub use responder::Responder;
pub use transport::{Listener, Transport};
pub use waiting::Waiting;

/// Which connection (TCP) or queue (simulation) a message travels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lane {
    /// Small requests and replies, gossip, failure detection.
    Control,
    /// Handoff batches and other large transfers, which must never delay
    /// control traffic.
    Bulk,
}

impl Lane {
    /// The lane's byte in the handshake.
    pub fn code(self) -> u8 {
        match self {
            Lane::Control => 0,
            Lane::Bulk => 1,
        }
    }

    /// The lane of a handshake byte, if it names one.
    pub fn from_code(code: u8) -> Option<Lane> {
        match code {
            0 => Some(Lane::Control),
            1 => Some(Lane::Bulk),
            _ => None,
        }
    }
}

/// A message from a peer, handed to the registered [`Handler`].
#[derive(Debug)]
pub struct Incoming {
    /// The sending node.
    pub from: NodeName,
    /// The lane it came on.
    pub lane: Lane,
    /// The payload.
    pub body: Bytes,
    /// For a call, where the answer goes (from any thread, at any time);
    /// `None` for a one-way message.
    pub responder: Option<Responder>,
}

/// Receives every incoming message. It runs on the connection's reader
/// (TCP) or the network's driver (simulation), so it must not block: hand
/// slow work to a task or a thread and answer through the responder later.
pub type Handler = Arc<dyn Fn(Incoming) + Send + Sync>;

/// A change in the reachability of a peer, as seen by this node's outgoing
/// connections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerEvent {
    /// The peer.
    pub peer: NodeName,
    /// The lane whose connection changed.
    pub lane: Lane,
    /// What happened.
    pub state: PeerState,
}

/// What happened to a connection to a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerState {
    /// A connection was opened and its handshake accepted.
    Connected,
    /// An open connection was lost (reset, closed, bad input, crash).
    Lost(Arc<str>),
    /// A connection could not be opened (refused, timed out, no address).
    Unreachable(Arc<str>),
    /// The peer refused the handshake.
    Refused(Arc<str>),
}

#[cfg(test)]
mod tests {
    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_cross_threads() {
        send_sync::<super::Transport>();
        send_sync::<super::Responder>();
        send_sync::<super::Incoming>();
        send_sync::<super::sim::SimNetwork>();
    }
}
