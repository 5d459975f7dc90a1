//! The delete coordinator: a delete is a put of a tombstone, reaped later
//! according to `delete_mode`.

use std::sync::Arc;

use eddy_object::Content;

use super::storage_key;
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::request::{
    DeleteRequest, GetOptions, GetRequest, GetResponse, PutOptions, PutRequest,
};

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
        self.metrics.deletes.increment();
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
            let props = self.props(&req.bucket)?;
            let preflist =
                self.preflist_entries(Node::key_hash(&req.bucket, &req.key), props.n_val);
            let key = storage_key(&req.bucket, &props, &req.key);
            self.schedule_reap(key, tombstone.vv, preflist);
        }
        Ok(DeleteOutcome::Deleted)
    }
}
