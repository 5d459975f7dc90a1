//! Where a vnode's replies go: the envelope around a message, never part
//! of it.
//!
//! A request from a coordinator on this node is answered on its local
//! channel; a request that came over the network is answered to
//! `(node, request id)` through the node's outbound route, which carries
//! the reply back to the coordinator's channel there.
//!
//! A local reply may carry a [`LocalHint`] beside the message: facts that
//! hold only on this node (where the commit log already holds the encoded
//! object), which let the coordinator spare the other local replicas work.
//! A hint is an optimisation only; a reply without one is never wrong.

use std::sync::Arc;

use eddy_ring::Partition;
use tokio::sync::mpsc::UnboundedSender;

use super::msg::VnodeReply;
use crate::commitlog::Lsn;

/// One reply, with where it came from.
#[derive(Debug)]
pub struct Reply {
    pub partition: Partition,
    pub reply: VnodeReply,
    /// Set only on replies from a local vnode.
    pub hint: LocalHint,
}

/// Node-local facts about a local vnode's write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalHint {
    /// Where this node's commit log holds the record of the reply's
    /// encoded object: a local replica storing the same bytes logs a
    /// reference to it instead of the bytes again.
    pub logged_at: Option<Lsn>,
}

/// Carries replies back to a coordinator on another node.
pub trait ReplyRoute: Send + Sync + std::fmt::Debug {
    /// Sends `reply` to the coordinator waiting on `request_id` at `node`.
    /// Best effort: a coordinator that is gone or unreachable times out.
    fn reply(&self, node: &eddy_ring::NodeName, request_id: u64, reply: Reply);
}

/// A reply to one key of a multi-key request, named by the key's place
/// in the coordinator's list.
#[derive(Debug)]
pub struct KeyedReply {
    pub key: u32,
    pub reply: Reply,
}

/// Where a request's replies go.
#[derive(Clone, Debug)]
pub enum ReplyTo {
    /// A coordinator on this node.
    Local(UnboundedSender<Reply>),
    /// A coordinator of many keys on this node, on one channel: the
    /// reply is tagged with `key`, the key's place in its list.
    Keyed {
        tx: UnboundedSender<KeyedReply>,
        key: u32,
    },
    /// A coordinator on `node`, waiting on `request_id`.
    Remote {
        node: eddy_ring::NodeName,
        request_id: u64,
        route: Arc<dyn ReplyRoute>,
    },
    /// Nobody: fire-and-forget requests (read repair, reaping).
    Nobody,
}

impl ReplyTo {
    /// True once nobody listens for the replies.
    pub fn abandoned(&self) -> bool {
        match self {
            ReplyTo::Local(tx) => tx.is_closed(),
            ReplyTo::Keyed { tx, .. } => tx.is_closed(),
            ReplyTo::Remote { .. } => false,
            ReplyTo::Nobody => true,
        }
    }

    /// Sends one reply; a coordinator that stopped listening is no error.
    pub fn send(&self, partition: Partition, reply: VnodeReply, hint: LocalHint) {
        let reply = Reply {
            partition,
            reply,
            hint,
        };
        match self {
            ReplyTo::Local(tx) => {
                let _ = tx.send(reply);
            }
            ReplyTo::Keyed { tx, key } => {
                let _ = tx.send(KeyedReply { key: *key, reply });
            }
            ReplyTo::Remote {
                node,
                request_id,
                route,
            } => route.reply(
                node,
                *request_id,
                Reply {
                    hint: LocalHint::default(),
                    ..reply
                },
            ),
            ReplyTo::Nobody => {}
        }
    }
}
