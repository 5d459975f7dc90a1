//! The put coordinator (Riak's put FSM): the coordinating vnode applies
//! the write as its actor and answers with the new object; then the object
//! goes to the other replicas at once; answer at w/dw/pw.
//!
//! The coordinating vnode is the first local one of the preflist that is
//! not marked damaged (design note 009), else the first reachable one.
//! A vnode that refuses before writing (a condition, a limit, a full disk)
//! refuses the whole put: nothing was replicated.

use std::sync::Arc;

use bytes::Bytes;
use eddy_object::codec;
use rand::Rng;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::{Instant, timeout_at};

use super::{PreflistEntry, quorum, storage_key};
use crate::core::put::{NodeIndex, PutCore, PutFailure, PutReply};
use crate::error::KvError;
use crate::node::{Node, NodeCounters};
use crate::props::SyncOnWrite;
use crate::request::{PutRequest, PutResponse};
use crate::vnode::msg::{
    Conditions, Coordinate, PutKind, PutRequest as VnodePut, StorageKey, SyncLevel, VnodeReply,
    VnodeRequest, WritePolicy,
};
use crate::vnode::reply::{LocalHint, Reply, ReplyTo};

impl Node {
    /// Writes an object with the request's (or the bucket's) quorums.
    pub async fn put(self: &Arc<Self>, req: PutRequest) -> Result<PutResponse, KvError> {
        NodeCounters::bump(&self.counters.puts);
        let props = self.props(&req.bucket)?;
        let key = req.key.clone().unwrap_or_else(generate_key);
        self.check_key(&key)?;
        self.check_content(&req.content)?;
        let n = props.n_val;
        let w = quorum("w", req.options.w, props.w, n)?;
        let dw = quorum("dw", req.options.dw, props.dw, n)?;
        let pw = quorum("pw", req.options.pw, props.pw, n)?;
        let node_confirms = quorum("node_confirms", None, props.node_confirms, n)?;
        let preflist = self.preflist_entries(Node::key_hash(&req.bucket, &key), n);
        if preflist.is_empty() {
            // A node that owns no partition (joining, or left) and sees
            // every owner down has no vnode to write to.
            let needed = w.max(dw);
            return Err(KvError::WriteQuorum(PutFailure::W { needed, got: 0 }));
        }
        let first = self.coordinator(&preflist);
        let mut content = req.content;
        content.meta.last_modified_us = self.config.clock.now_us();
        content.meta.vtag = generate_vtag();
        content.normalise_indexes();
        let conditions = Conditions {
            if_none_match: req.options.if_none_match,
            if_not_modified: req
                .options
                .if_not_modified
                .then(|| req.context.clone().unwrap_or_default()),
        };
        let coordinate = Coordinate {
            context: req.context.unwrap_or_default(),
            content,
            conditions,
        };
        let skey = storage_key(&req.bucket, &key);
        if let Some(vnode) = self.local_vnode(&preflist[first]) {
            vnode.check_writable(&skey.bucket)?;
        }
        let mut fsm = PutFsm {
            node: self,
            preflist: &preflist,
            first,
            key: skey,
            policy: self.write_policy(&props),
            sync: Syncs {
                dw: dw > 0,
                on_write: props.sync_on_write,
            },
            deadline: self.deadline(req.options.timeout_ms),
        };
        let core = PutCore::new(preflist.len() as u32, w, dw, pw).with_node_confirms(node_confirms);
        let coordinated = fsm.run(coordinate, core).await?;
        self.warn_siblings(coordinated.siblings);
        let wants_object = req.options.return_body || req.options.return_head;
        let object = match wants_object {
            true => Some(codec::decode(&coordinated.encoded)?),
            false => None,
        };
        Ok(PutResponse { key, object })
    }

    /// The vnode that should coordinate: the first local one not marked
    /// damaged (a marked vnode may have lost the key's latest version,
    /// design note 009), else the first unmarked one, else the first.
    fn coordinator(&self, preflist: &[PreflistEntry]) -> usize {
        let local = |e: &PreflistEntry| self.local_vnode(e);
        let healthy = |e: &PreflistEntry| local(e).is_none_or(|v| !v.is_marked());
        preflist
            .iter()
            .position(|e| local(e).is_some_and(|v| !v.is_marked()))
            .or_else(|| preflist.iter().position(healthy))
            .unwrap_or(0)
    }

    fn warn_siblings(&self, siblings: usize) {
        if siblings > self.config.siblings_warn {
            NodeCounters::bump(&self.counters.siblings_warnings);
            tracing::warn!(siblings, "object has many siblings");
        }
    }
}

/// The coordinating vnode's object.
struct Coordinated {
    encoded: Bytes,
    siblings: usize,
}

/// One coordinated put: its preflist (the coordinating vnode first), key,
/// policy and deadline.
struct PutFsm<'a> {
    node: &'a Arc<Node>,
    preflist: &'a [PreflistEntry],
    /// The coordinating vnode's place in `preflist`.
    first: usize,
    key: StorageKey,
    policy: WritePolicy,
    sync: Syncs,
    deadline: Instant,
}

/// What makes a replica sync before it replies: the request's dw, and the
/// bucket's `sync_on_write` (all: every replica to disk; one: the
/// coordinating vnode to disk).
struct Syncs {
    dw: bool,
    on_write: SyncOnWrite,
}

impl Syncs {
    fn level(&self, coordinating: bool) -> SyncLevel {
        match (self.on_write.syncs(coordinating), self.dw) {
            (true, _) => SyncLevel::Disk,
            (false, true) => SyncLevel::Durable,
            (false, false) => SyncLevel::Written,
        }
    }
}

impl PutFsm<'_> {
    /// Runs the put to its answer: the coordinating vnode's object once
    /// every quorum is met.
    async fn run(
        &mut self,
        coordinate: Coordinate,
        mut core: PutCore,
    ) -> Result<Coordinated, KvError> {
        let node = self.node;
        // A vnode of another node may be handing its partition off or be
        // gone: the write then goes to the next replica, once each.
        let mut spare = self
            .preflist
            .iter()
            .any(|e| !e.local)
            .then(|| coordinate.clone());
        let mut coordinate = Some(coordinate);
        let mut tries = 1;
        let (tx, mut rx, coordinated) = loop {
            let (tx, mut rx) = unbounded_channel::<Reply>();
            let write = coordinate.take().or_else(|| spare.clone());
            let Some(write) = write else {
                return Err(KvError::Unreachable("no replica took the write".into()));
            };
            let req = self.request(PutKind::Coordinate(Box::new(write)), true);
            let to = &self.preflist[self.first].id;
            node.deliver(to, req, ReplyTo::Local(tx.clone()), LocalHint::default());
            match self.await_coordinated(&mut rx, &mut core).await {
                Ok(coordinated) => break (tx, rx, coordinated),
                Err(e) if moving(&e) && tries < self.preflist.len() && spare.is_some() => {
                    tracing::debug!(partition = to.partition.0, "coordinating elsewhere: {e}");
                    tries += 1;
                    self.first = (self.first + 1) % self.preflist.len();
                }
                Err(e) => return Err(e),
            }
        };
        let _ = spare.take();
        self.replicate(&coordinated.encoded, coordinated.hint, tx);
        NodeCounters::add(&node.counters.vnode_puts, self.preflist.len() as u64);
        let mut exhausted = None;
        while !core.enough() {
            let reply = match timeout_at(self.deadline, rx.recv()).await {
                Ok(Some(reply)) => reply,
                Ok(None) => break,
                Err(_) => return Err(KvError::Timeout),
            };
            self.record(&mut core, reply, &mut exhausted);
        }
        // A quorum missed for want of disk or descriptors is answered with
        // that cause, so the client hears it is transient; /health reports
        // it until a write is acknowledged again.
        if let Err(q) = core.response() {
            let e = exhausted.unwrap_or(KvError::WriteQuorum(q));
            node.write_refusal.refused(&e);
            return Err(e);
        }
        node.write_refusal.accepted();
        Ok(Coordinated {
            encoded: coordinated.encoded,
            siblings: coordinated.siblings,
        })
    }

    /// Waits for the coordinating vnode's object. A refusal before it
    /// wrote is the put's answer: nothing was replicated.
    async fn await_coordinated(
        &self,
        rx: &mut UnboundedReceiver<Reply>,
        core: &mut PutCore,
    ) -> Result<Written, KvError> {
        loop {
            let reply = match timeout_at(self.deadline, rx.recv()).await {
                Ok(Some(reply)) => reply,
                Ok(None) => return Err(KvError::Timeout),
                Err(_) => return Err(KvError::Timeout),
            };
            match reply.reply {
                VnodeReply::Coordinated { encoded, siblings } => {
                    return Ok(Written {
                        encoded,
                        siblings,
                        hint: reply.hint,
                    });
                }
                VnodeReply::Put(Err(e)) => {
                    self.node.write_refusal.refused(&e);
                    return Err(e);
                }
                VnodeReply::Put(Ok(ack)) => {
                    let (node, primary) = self.replier(reply.partition);
                    core.add_result(PutReply::Ok {
                        node,
                        primary,
                        durable: ack.durable,
                    })
                }
                VnodeReply::Get(_) | VnodeReply::Fold(_) => {}
            }
        }
    }

    /// Sends the coordinating vnode's object to the other replicas.
    fn replicate(&self, encoded: &Bytes, hint: LocalHint, tx: UnboundedSender<Reply>) {
        let others = self
            .preflist
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.first);
        for (_, entry) in others {
            let req = self.request(
                PutKind::Replicate {
                    encoded: encoded.clone(),
                },
                false,
            );
            // The commit-log position is a fact of this node only.
            let hint = match entry.local {
                true => hint,
                false => LocalHint::default(),
            };
            self.node
                .deliver(&entry.id, req, ReplyTo::Local(tx.clone()), hint);
        }
    }

    fn record(&self, core: &mut PutCore, reply: Reply, exhausted: &mut Option<KvError>) {
        let (node, primary) = self.replier(reply.partition);
        match reply.reply {
            VnodeReply::Put(Ok(ack)) => core.add_result(PutReply::Ok {
                node,
                primary,
                durable: ack.durable,
            }),
            VnodeReply::Put(Err(e)) => {
                match e {
                    KvError::Unreachable(_) => {
                        tracing::debug!(partition = reply.partition.0, "{e}")
                    }
                    _ => tracing::warn!(partition = reply.partition.0, "vnode put failed: {e}"),
                }
                core.add_result(PutReply::Failed { primary });
                if is_exhaustion(&e) {
                    exhausted.get_or_insert(e);
                }
            }
            VnodeReply::Coordinated { .. } | VnodeReply::Get(_) | VnodeReply::Fold(_) => {}
        }
    }

    /// The node a reply's vnode runs on (as the index of its first entry
    /// in the preflist, so that two vnodes of one node count once for
    /// `node_confirms`) and whether it is a primary.
    fn replier(&self, p: eddy_ring::Partition) -> (NodeIndex, bool) {
        let Some(entry) = self.preflist.iter().find(|e| e.id.partition == p) else {
            return (NodeIndex::MAX, false);
        };
        let node = self
            .preflist
            .iter()
            .position(|e| e.id.node == entry.id.node)
            .unwrap_or(0);
        (node as NodeIndex, entry.primary)
    }

    fn request(&self, kind: PutKind, coordinating: bool) -> VnodeRequest {
        VnodeRequest::Put(VnodePut {
            key: self.key.clone(),
            kind,
            policy: self.policy,
            sync: self.sync.level(coordinating),
        })
    }
}

/// The coordinating vnode's reply, with what it knows locally.
struct Written {
    encoded: Bytes,
    siblings: usize,
    hint: LocalHint,
}

/// A coordinating vnode that did not apply the write because it is being
/// handed off, closing, or out of reach: another replica may.
fn moving(e: &KvError) -> bool {
    matches!(
        e,
        KvError::Storage(eddy_storage::StorageError::Closed)
            | KvError::NotHosted(_)
            | KvError::ShuttingDown
            | KvError::Unreachable(_)
    )
}

/// A replica refused for want of a resource (disk, descriptors, memory).
fn is_exhaustion(e: &KvError) -> bool {
    matches!(
        e,
        KvError::Storage(eddy_storage::StorageError::Exhausted { .. })
    )
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn random_base62(len: usize) -> Vec<u8> {
    let mut rng = rand::rng();
    (0..len).map(|_| BASE62[rng.random_range(0..62)]).collect()
}

/// A server-generated key, like Riak's: 27 random base-62 characters.
fn generate_key() -> Vec<u8> {
    random_base62(27)
}

/// A random version tag (the HTTP ETag).
fn generate_vtag() -> Vec<u8> {
    random_base62(22)
}
