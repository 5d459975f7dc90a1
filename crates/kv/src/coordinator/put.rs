//! The put coordinator: the first vnode of the preflist applies the write
//! as its actor, then the others merge the result; answer at w/dw/pw.

use std::sync::Arc;

use eddy_object::RiakObject;
use eddy_ring::Partition;
use rand::Rng;
use tokio::sync::mpsc::unbounded_channel;
use tokio::time::timeout_at;

use super::{quorum, storage_key};
use crate::core::put::{PutCore, PutReply};
use crate::error::KvError;
use crate::node::{Node, NodeCounters};
use crate::request::{PutRequest, PutResponse};
use crate::vnode::msg::{Conditions, PutKind, PutResult, VnodeRequest};

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
        let mut preflist = self.ring.preflist(Node::key_hash(&req.bucket, &key), n);
        self.unmarked_first(&mut preflist);
        let mut content = req.content;
        content.meta.last_modified_us = now_us();
        content.meta.vtag = generate_vtag();
        content.normalise_indexes();
        let conditions = Conditions {
            if_none_match: req.options.if_none_match,
            if_not_modified: req
                .options
                .if_not_modified
                .then(|| req.context.clone().unwrap_or_default()),
        };
        let kind = PutKind::Coordinate {
            context: req.context.unwrap_or_default(),
            content: Box::new(content),
            conditions,
        };
        let sync = dw > 0;
        let policy = self.write_policy(&props);
        let skey = storage_key(&req.bucket, &key);
        self.vnode(preflist[0].0).check_writable(&skey.bucket)?;
        let deadline = self.deadline(req.options.timeout_ms);
        let mut core =
            PutCore::new(preflist.len() as u32, w, dw, pw).with_node_confirms(node_confirms);
        let (tx, mut rx) = unbounded_channel::<(Partition, PutResult)>();

        // The coordinating vnode writes, then forwards its object to the
        // other replicas; every vnode answers on `rx`.
        let (first, _) = preflist[0];
        let forward = preflist[1..]
            .iter()
            .map(|(p, _)| self.vnode(*p).clone())
            .collect();
        let wants_object = req.options.return_body || req.options.return_head;
        let req = VnodeRequest::Put {
            key: skey,
            kind: Box::new(kind),
            policy,
            sync,
            reply: tx,
            forward,
        };
        self.vnode(first).send(req)?;
        let issued = preflist.len() as u64;
        self.counters
            .vnode_puts
            .fetch_add(issued, std::sync::atomic::Ordering::Relaxed);
        let mut object = None;
        let mut exhausted = None;
        while !core.enough() {
            let (p, result) = match timeout_at(deadline, rx.recv()).await {
                Ok(Some(reply)) => reply,
                Ok(None) => break,
                Err(_) => return Err(KvError::Timeout),
            };
            match result {
                Ok(done) => {
                    core.add_result(PutReply::Ok {
                        // Every vnode of this node's ring is on this node.
                        node: 0,
                        primary: true,
                        durable: done.durable,
                    });
                    if p == first || object.is_none() {
                        object = Some(done.object);
                    }
                }
                // The coordinating vnode refused or failed before writing:
                // nothing was forwarded, so this is the answer.
                Err(e) if p == first && !is_sync_failure(&e) => {
                    self.write_refusal.refused(&e);
                    return Err(e);
                }
                Err(e) => {
                    tracing::warn!(partition = p.0, "vnode put failed: {e}");
                    core.add_result(PutReply::Failed { primary: true });
                    if is_exhaustion(&e) {
                        exhausted.get_or_insert(e);
                    }
                }
            }
        }
        if let Some(o) = &object {
            self.warn_siblings(o);
        }
        // A quorum missed for want of disk or descriptors is answered with
        // that cause, so the client hears it is transient; /health reports
        // it until a write is acknowledged again.
        if let Err(q) = core.response() {
            let e = exhausted.unwrap_or(KvError::WriteQuorum(q));
            self.write_refusal.refused(&e);
            return Err(e);
        }
        self.write_refusal.accepted();
        Ok(PutResponse {
            key,
            object: object.filter(|_| wants_object),
        })
    }

    /// Moves the first replica not marked damaged to the front, so that it
    /// coordinates: a marked vnode may have lost the key's latest version
    /// (design note 009). With every replica marked the order stays.
    fn unmarked_first<T>(&self, preflist: &mut [(Partition, T)]) {
        if let Some(i) = preflist
            .iter()
            .position(|(p, _)| !self.vnode(*p).is_marked())
        {
            preflist[..=i].rotate_right(1);
        }
    }

    fn warn_siblings(&self, object: &RiakObject) {
        if object.siblings.len() > self.config.siblings_warn {
            NodeCounters::bump(&self.counters.siblings_warnings);
            tracing::warn!(siblings = object.siblings.len(), "object has many siblings");
        }
    }
}

/// A vnode that wrote (and so forwarded) but whose sync then failed.
fn is_sync_failure(e: &KvError) -> bool {
    matches!(e, KvError::SyncFailed(_))
}

/// A replica refused for want of a resource (disk, descriptors, memory).
fn is_exhaustion(e: &KvError) -> bool {
    matches!(
        e,
        KvError::Storage(eddy_storage::StorageError::Exhausted { .. })
    )
}

/// Microseconds since the Unix epoch.
pub(crate) fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
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
