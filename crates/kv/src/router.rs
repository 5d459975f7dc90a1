//! Delivery of vnode requests to the vnode at `(partition, node)`.
//!
//! A vnode on this node handles the request on the caller's thread (the
//! fast path a one-member ring always takes); a vnode elsewhere gets it
//! through the node's [`RemoteVnodes`], which the cluster layer provides.
//! A node without one (a single node) answers requests for other nodes'
//! vnodes with [`KvError::Unreachable`].
//!
//! A request for a partition this node runs no vnode for is a fallback's
//! (design note 010 §4): a put starts the vnode through the node's
//! [`crate::node::VnodeFactory`], a get finds nothing.
//!
//! A put from another node's coordinator that carries the bucket props
//! entries it was coordinated under is checked against this node's
//! registry before its vnode sees it ([`Node::receive`]); a vnode of the
//! coordinator's own node shares its registry and is not checked.
//!
//! A batch (several gets and replicated puts for vnodes of one node, a
//! multi-key request's; design note 016) goes to the other node as one
//! message ([`RemoteVnodes::send_batch`]); there each item is received as
//! if it had come alone ([`Node::receive_batch`]).
//!
//! Invariant: every delivered put or get is answered exactly once on its
//! `ReplyTo`, by the vnode or, when it cannot be reached, here; so is
//! every item of a batch.

use eddy_ring::{NodeName, Partition};

use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::error::Signal;
use eddy_model::metadata::entries::PropsEntries;
use eddy_model::request::BucketRef;
use eddy_vnode::Vnode;
use eddy_vnode::msg::{BatchItem, StorageKey, VnodeId, VnodeReply, VnodeRequest};
use eddy_vnode::reply::{LocalHint, ReplyTo};

/// Sends vnode requests to other nodes.
pub trait RemoteVnodes: Send + Sync + std::fmt::Debug {
    /// Delivers `req` to the vnode `to` on another node; its replies go to
    /// `reply`. Unreachable vnodes must still be answered (with an error).
    fn send(&self, to: &VnodeId, req: VnodeRequest, reply: ReplyTo);

    /// Delivers a batch to vnodes of `node` (another node), each item's
    /// replies going to its `ReplyTo`; every item must be answered. The
    /// default sends each item as a request of its own.
    fn send_batch(&self, node: &NodeName, items: Vec<(BatchItem, ReplyTo)>) {
        for (item, reply) in items {
            let to = VnodeId {
                partition: item.partition,
                node: node.clone(),
            };
            self.send(&to, item.request, reply);
        }
    }
}

impl Node {
    /// Delivers `req` to the vnode `to`, on this node or another.
    pub(crate) fn deliver(&self, to: &VnodeId, req: VnodeRequest, reply: ReplyTo, hint: LocalHint) {
        if self.is_local(to) {
            return match self.vnode(to.partition) {
                Some(vnode) => self.hand_to(&vnode, req, reply, hint),
                None => self.deliver_to_new_vnode(to.partition, req, reply),
            };
        }
        match &self.remote {
            Some(remote) => remote.send(to, req, reply),
            None => {
                let e = KvError::Unreachable(to.node.to_string());
                unanswerable(to.partition, &req, &reply, e)
            }
        }
    }

    /// Delivers a batch to vnodes of `node` as one message (counted in
    /// [`NodeMetrics::vnode_batches`](crate::metrics::NodeMetrics::vnode_batches)); a batch for this node is
    /// delivered item by item.
    pub(crate) fn deliver_batch(&self, node: &NodeName, items: Vec<(BatchItem, ReplyTo)>) {
        if items.is_empty() {
            return;
        }
        if *node == self.config.node_name {
            for (item, reply) in items {
                let to = VnodeId {
                    partition: item.partition,
                    node: node.clone(),
                };
                self.deliver(&to, item.request, reply, LocalHint::default());
            }
            return;
        }
        self.metrics.vnode_batches.increment();
        match &self.remote {
            Some(remote) => remote.send_batch(node, items),
            None => {
                for (item, reply) in items {
                    let e = KvError::Unreachable(node.to_string());
                    unanswerable(item.partition, &item.request, &reply, e);
                }
            }
        }
    }

    /// Takes a batch another node sent to this node's vnodes: each item
    /// as [`Node::receive`] takes a request.
    pub fn receive_batch(&self, items: Vec<(BatchItem, ReplyTo)>) {
        for (item, reply) in items {
            self.receive(item.partition, item.request, reply);
        }
    }

    /// Takes a request another node sent to this node's vnode of
    /// `partition` (the transport's inbound side calls this): it is
    /// handled as a local delivery, replies going to `reply`.
    pub fn receive(&self, partition: Partition, req: VnodeRequest, reply: ReplyTo) {
        if let VnodeRequest::Put(put) = &req {
            if let Some(entries) = &put.props
                && let Err(e) = self.settle_props(&put.key, entries)
            {
                return unanswerable(partition, &req, &reply, e);
            }
            // A repair from a node that has not heard of a drop: what it
            // would write is never read (design note 018).
            if put.props.is_none() && self.is_dropped_generation(&put.key.bucket) {
                let ack = Ok(eddy_vnode::msg::PutAck { durable: true });
                return reply.send(partition, VnodeReply::Put(ack), LocalHint::default());
            }
        }
        match self.vnode(partition) {
            Some(vnode) => self.hand_to(&vnode, req, reply, LocalHint::default()),
            None => self.deliver_to_new_vnode(partition, req, reply),
        }
    }

    /// Hands `req` to this node's `vnode`: a map fold with the node's map
    /// runner, which the vnode does not know. A fold (a coverage plan's)
    /// is refused unless this node's ring says it owns the partition: a
    /// vnode it runs otherwise is a fallback, or waits for a transfer in,
    /// or was handed away, and holds only part of the partition; the
    /// coordinator, whose ring said otherwise, asks again once the rings
    /// agree.
    fn hand_to(&self, vnode: &Vnode, req: VnodeRequest, reply: ReplyTo, hint: LocalHint) {
        match req {
            VnodeRequest::Fold(_) if !self.owns(vnode.partition) => {
                let refused = Err(KvError::Signal(Signal::NotHosted(vnode.partition.0)));
                reply.send(vnode.partition, VnodeReply::Fold(refused), hint);
            }
            VnodeRequest::Fold(fold) if fold.kind.is_map() => {
                vnode.fold(fold, self.map_runner(), reply);
            }
            req => vnode.send(req, reply, hint),
        }
    }

    /// Brings this node's bucket props to the put's before it applies
    /// (design note 010 §2): entries the coordinator sent that are newer
    /// than this node's are applied to the registry (merged by stamp, as
    /// the cluster's metadata is); if this node then still holds a newer
    /// entry, the put is refused with this node's entries, for the
    /// coordinator to put again under them.
    fn settle_props(&self, key: &StorageKey, theirs: &PropsEntries) -> Result<(), KvError> {
        let Some(b) = BucketRef::from_storage_bucket(&key.bucket) else {
            return Ok(());
        };
        let registry = &self.registry;
        let version = theirs.version();
        let mut ours = registry.props_version(&b.bucket_type, &b.bucket);
        if version.has_newer_than(&ours) {
            registry.apply_entries(&b.bucket_type, &b.bucket, theirs)?;
            ours = registry.props_version(&b.bucket_type, &b.bucket);
        }
        match ours.has_newer_than(&version) {
            true => {
                let entries = registry.props_entries(&b.bucket_type, &b.bucket);
                Err(KvError::Signal(Signal::PropsNewer(Box::new(entries))))
            }
            false => Ok(()),
        }
    }

    /// Answers a request for a partition this node runs no vnode for: a
    /// get finds nothing (a fallback starts empty, as Riak's does), a
    /// fold is refused (a coverage plan named this node from a ring that
    /// is not this node's: the coordinator plans again, never taking
    /// nothing for the range's answer), a put starts the vnode (a
    /// fallback taking a down primary's writes) off the caller's thread,
    /// since opening a backend reads the disk.
    fn deliver_to_new_vnode(&self, p: Partition, req: VnodeRequest, reply: ReplyTo) {
        match req {
            VnodeRequest::Get { .. } => {
                reply.send(p, VnodeReply::Get(Ok(None)), LocalHint::default());
            }
            VnodeRequest::Reap { .. } => {}
            VnodeRequest::Fold(_) => {
                let refused = Err(KvError::Signal(Signal::NotHosted(p.0)));
                reply.send(p, VnodeReply::Fold(refused), LocalHint::default());
            }
            VnodeRequest::Put(_) => {
                let Some(node) = self.me.upgrade() else {
                    return unanswerable(p, &req, &reply, KvError::ShuttingDown);
                };
                let start = move || match node.start_vnode(p) {
                    Ok(vnode) => vnode.send(req, reply, LocalHint::default()),
                    Err(e) => unanswerable(p, &req, &reply, e),
                };
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) if !self.config.blocking_inline => {
                        drop(runtime.spawn_blocking(start))
                    }
                    _ => start(),
                }
            }
        }
    }

    /// True when this node's ring gives it partition `p` now.
    pub(crate) fn owns(&self, p: Partition) -> bool {
        self.ring_now().owner(p) == &self.config.node_name
    }

    /// True for a vnode of this node.
    pub(crate) fn is_local(&self, id: &VnodeId) -> bool {
        id.node == self.config.node_name
    }

    /// The vnode a preflist entry names, if it is one of this node's.
    pub(crate) fn local_vnode(
        &self,
        entry: &crate::coordinator::PreflistEntry,
    ) -> Option<eddy_vnode::VnodeHandle> {
        entry
            .local
            .then(|| self.vnode(entry.id.partition))
            .flatten()
    }
}

/// Answers `req` with `e` on behalf of a vnode that cannot answer.
pub fn unanswerable(partition: Partition, req: &VnodeRequest, reply: &ReplyTo, e: KvError) {
    let answer = match req {
        VnodeRequest::Put(_) => VnodeReply::Put(Err(e)),
        VnodeRequest::Get { .. } => VnodeReply::Get(Err(e)),
        VnodeRequest::Fold(_) => VnodeReply::Fold(Err(e)),
        VnodeRequest::Reap { .. } => return,
    };
    reply.send(partition, answer, LocalHint::default());
}
