//! The delete coordinator: a delete is a put of a tombstone, reaped later
//! according to `delete_mode`.

use std::sync::Arc;
use std::time::Duration;

use eddy_object::Content;

use super::storage_key;
use crate::error::KvError;
use crate::node::{DeleteMode, Node, NodeCounters};
use crate::request::{DeleteRequest, GetOptions, GetRequest, GetResponse, PutOptions, PutRequest};
use crate::vnode::msg::VnodeRequest;

/// What a delete found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// A tombstone was written.
    Deleted,
    /// There was nothing live to delete (no tombstone written).
    NotFound,
}

impl Node {
    /// Deletes an object: reads its context if the request has none, writes
    /// a tombstone over it, and schedules the tombstone's reaping.
    pub async fn delete(self: &Arc<Self>, req: DeleteRequest) -> Result<DeleteOutcome, KvError> {
        NodeCounters::bump(&self.counters.deletes);
        let opts = &req.options;
        let context = match &req.context {
            Some(c) => c.clone(),
            None => {
                let get = GetRequest {
                    bucket: req.bucket.clone(),
                    key: req.key.clone(),
                    options: GetOptions {
                        r: opts.r.or(opts.rw),
                        pr: opts.pr,
                        timeout_ms: opts.timeout_ms,
                        ..GetOptions::default()
                    },
                };
                match self.get(get).await? {
                    GetResponse::Found(obj) => obj.vv,
                    GetResponse::NotFound { .. } => return Ok(DeleteOutcome::NotFound),
                }
            }
        };
        let put = PutRequest {
            bucket: req.bucket.clone(),
            key: Some(req.key.clone()),
            context: Some(context),
            content: Content::tombstone(0),
            options: PutOptions {
                w: opts.w.or(opts.rw),
                dw: opts.dw,
                pw: opts.pw,
                return_body: true,
                timeout_ms: opts.timeout_ms,
                ..PutOptions::default()
            },
        };
        let stored = self.put(put).await?.object;
        if let Some(tombstone) = stored.filter(|o| o.is_deleted()) {
            self.schedule_reap(&req, tombstone.vv);
        }
        Ok(DeleteOutcome::Deleted)
    }

    fn schedule_reap(self: &Arc<Self>, req: &DeleteRequest, tombstone: eddy_object::VersionVector) {
        let delay_ms = match self.config.delete_mode {
            DeleteMode::Keep => return,
            DeleteMode::Immediate => 0,
            DeleteMode::DelayMs(ms) => ms,
        };
        let Ok(props) = self.props(&req.bucket) else {
            return;
        };
        let preflist: Vec<_> = self
            .ring
            .preflist(Node::key_hash(&req.bucket, &req.key), props.n_val)
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        let key = storage_key(&req.bucket, &req.key);
        let node = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            for p in preflist {
                let reap = VnodeRequest::Reap {
                    key: key.clone(),
                    tombstone: tombstone.clone(),
                };
                let _ = node.vnode(p).send(reap);
            }
        });
    }
}
