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
        let preflist = self.ring.preflist(Node::key_hash(&req.bucket, &key), n);
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
        let sync = dw > 0 && self.config.sync_on_dw;
        let policy = self.write_policy(&props);
        let skey = storage_key(&req.bucket, &key);
        let deadline = self.deadline(req.options.timeout_ms);
        let mut core = PutCore::new(preflist.len() as u32, w, dw, pw);
        let (tx, mut rx) = unbounded_channel::<(Partition, PutResult)>();

        // The coordinating vnode first: its answer is the object to replicate.
        let (first, _) = preflist[0];
        let req0 = VnodeRequest::Put {
            key: skey.clone(),
            kind: Box::new(kind),
            policy,
            sync,
            reply: tx.clone(),
        };
        self.vnode(first).send(req0)?;
        NodeCounters::bump(&self.counters.vnode_puts);
        let object = match timeout_at(deadline, rx.recv()).await {
            Ok(Some((_, Ok(done)))) => {
                core.add_result(PutReply::Ok {
                    primary: true,
                    durable: done.durable,
                });
                done.object
            }
            Ok(Some((_, Err(e)))) => return Err(e),
            Ok(None) => return Err(KvError::ShuttingDown),
            Err(_) => return Err(KvError::Timeout),
        };
        self.warn_siblings(&object);
        for (p, _) in &preflist[1..] {
            let kind = PutKind::Replicate {
                object: object.clone(),
            };
            let req = VnodeRequest::Put {
                key: skey.clone(),
                kind: Box::new(kind),
                policy,
                sync,
                reply: tx.clone(),
            };
            match self.vnode(*p).send(req) {
                Ok(()) => NodeCounters::bump(&self.counters.vnode_puts),
                Err(_) => core.add_result(PutReply::Failed { primary: true }),
            }
        }
        drop(tx);
        while !core.enough() {
            match timeout_at(deadline, rx.recv()).await {
                Ok(Some((_, Ok(done)))) => core.add_result(PutReply::Ok {
                    primary: true,
                    durable: done.durable,
                }),
                Ok(Some((p, Err(e)))) => {
                    tracing::warn!(partition = p.0, "replica put failed: {e}");
                    core.add_result(PutReply::Failed { primary: true });
                }
                Ok(None) => break,
                Err(_) => return Err(KvError::Timeout),
            }
        }
        core.response().map_err(KvError::WriteQuorum)?;
        let wants_object = req.options.return_body || req.options.return_head;
        Ok(PutResponse {
            key,
            object: wants_object.then_some(object),
        })
    }

    fn warn_siblings(&self, object: &RiakObject) {
        if object.siblings.len() > self.config.siblings_warn {
            NodeCounters::bump(&self.counters.siblings_warnings);
            tracing::warn!(siblings = object.siblings.len(), "object has many siblings");
        }
    }
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
