//! Delivery of vnode requests to the vnode at `(partition, node)`.
//!
//! A vnode on this node handles the request on the caller's thread (the
//! fast path a one-member ring always takes); a vnode elsewhere gets it
//! through the node's [`RemoteVnodes`], which the cluster layer provides.
//! A node without one (a single node) answers requests for other nodes'
//! vnodes with [`KvError::Unreachable`].
//!
//! Invariant: every delivered put or get is answered exactly once on its
//! `ReplyTo`, by the vnode or, when it cannot be reached, here.

use eddy_ring::Partition;

use crate::error::KvError;
use crate::node::Node;
use crate::vnode::msg::{VnodeId, VnodeReply, VnodeRequest};
use crate::vnode::reply::{LocalHint, ReplyTo};

/// Sends vnode requests to other nodes.
pub trait RemoteVnodes: Send + Sync + std::fmt::Debug {
    /// Delivers `req` to the vnode `to` on another node; its replies go to
    /// `reply`. Unreachable vnodes must still be answered (with an error).
    fn send(&self, to: &VnodeId, req: VnodeRequest, reply: ReplyTo);
}

impl Node {
    /// Delivers `req` to the vnode `to`, on this node or another.
    pub(crate) fn deliver(&self, to: &VnodeId, req: VnodeRequest, reply: ReplyTo, hint: LocalHint) {
        if self.is_local(to) {
            return self.vnode(to.partition).send(req, reply, hint);
        }
        match &self.remote {
            Some(remote) => remote.send(to, req, reply),
            None => {
                let e = KvError::Unreachable(to.node.to_string());
                unanswerable(to.partition, &req, &reply, e)
            }
        }
    }

    /// True for a vnode of this node.
    pub(crate) fn is_local(&self, id: &VnodeId) -> bool {
        id.node == self.config.node_name
    }
}

/// Answers `req` with `e` on behalf of a vnode that cannot answer.
pub fn unanswerable(partition: Partition, req: &VnodeRequest, reply: &ReplyTo, e: KvError) {
    let answer = match req {
        VnodeRequest::Put(_) => VnodeReply::Put(Err(e)),
        VnodeRequest::Get { .. } => VnodeReply::Get(Err(e)),
        VnodeRequest::Reap { .. } => return,
    };
    reply.send(partition, answer, LocalHint::default());
}
