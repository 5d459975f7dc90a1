//! The get coordinator: ask the preflist, answer at r, then repair.

use std::sync::Arc;

use eddy_object::RiakObject;
use eddy_ring::Partition;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::time::{Instant, timeout_at};

use super::{quorum, storage_key};
use crate::core::get::{GetCore, GetOutcome, GetReply};
use crate::error::KvError;
use crate::node::{Node, NodeCounters};
use crate::request::{GetRequest, GetResponse};
use crate::vnode::msg::{PutKind, StorageKey, VnodeRequest, WritePolicy};

type Replies = UnboundedReceiver<(Partition, Result<Option<RiakObject>, KvError>)>;

impl Node {
    /// Reads an object with the request's (or the bucket's) quorums.
    pub async fn get(self: &Arc<Self>, req: GetRequest) -> Result<GetResponse, KvError> {
        NodeCounters::bump(&self.counters.gets);
        let props = self.props(&req.bucket)?;
        self.check_key(&req.key)?;
        let n = props.n_val;
        let r = quorum("r", req.options.r, props.r, n)?;
        let pr = quorum("pr", req.options.pr, props.pr, n)?;
        let notfound_ok = req.options.notfound_ok.unwrap_or(props.notfound_ok);
        let basic_quorum = req.options.basic_quorum.unwrap_or(props.basic_quorum);
        let preflist = self.ring.preflist(Node::key_hash(&req.bucket, &req.key), n);
        let key = storage_key(&req.bucket, &req.key);
        let mut core = GetCore::new(preflist.len() as u32, r, pr, notfound_ok, basic_quorum);
        let (tx, mut rx) = unbounded_channel();
        let mut seen = Vec::new();
        for (p, _) in &preflist {
            let sent = self.vnode(*p).send(VnodeRequest::Get {
                key: key.clone(),
                reply: tx.clone(),
            });
            match sent {
                Ok(()) => NodeCounters::bump(&self.counters.vnode_gets),
                Err(_) => core.add_result(GetReply::Failed { primary: true }),
            }
        }
        drop(tx);
        let deadline = self.deadline(req.options.timeout_ms);
        while !core.enough() {
            match timeout_at(deadline, rx.recv()).await {
                Ok(Some(reply)) => record(&mut core, &mut seen, reply),
                Ok(None) => break,
                Err(_) => return Err(KvError::Timeout),
            }
        }
        let policy = self.write_policy(&props);
        self.read_repair_later(core.clone(), seen, rx, key, policy, deadline);
        answer(core.response())
    }

    pub(crate) fn write_policy(&self, props: &crate::props::BucketProps) -> WritePolicy {
        WritePolicy {
            allow_mult: props.allow_mult,
            last_write_wins: props.last_write_wins,
            max_siblings: self.config.siblings_max,
        }
    }

    /// After answering, waits for the remaining replies and sends the merged
    /// object to every replica that lacked it.
    fn read_repair_later(
        self: &Arc<Self>,
        mut core: GetCore,
        mut seen: Vec<(Partition, Option<RiakObject>)>,
        mut rx: Replies,
        key: StorageKey,
        policy: WritePolicy,
        deadline: Instant,
    ) {
        let node = self.clone();
        tokio::spawn(async move {
            while !core.all_replied() {
                match timeout_at(deadline, rx.recv()).await {
                    Ok(Some(reply)) => record(&mut core, &mut seen, reply),
                    _ => break,
                }
            }
            let Some(merged) = core.merged() else { return };
            for (p, obj) in seen {
                if obj.as_ref() == Some(merged) {
                    continue;
                }
                NodeCounters::bump(&node.counters.read_repairs);
                let (tx, _rx) = unbounded_channel();
                let kind = PutKind::Replicate {
                    object: merged.clone(),
                };
                let req = VnodeRequest::Put {
                    key: key.clone(),
                    kind: Box::new(kind),
                    policy,
                    sync: false,
                    reply: tx,
                };
                if node.vnode(p).send(req).is_ok() {
                    NodeCounters::bump(&node.counters.vnode_puts);
                }
            }
        });
    }
}

fn record(
    core: &mut GetCore,
    seen: &mut Vec<(Partition, Option<RiakObject>)>,
    (p, result): (Partition, Result<Option<RiakObject>, KvError>),
) {
    let primary = true;
    match result {
        Ok(Some(object)) => {
            seen.push((p, Some(object.clone())));
            core.add_result(GetReply::Found { primary, object });
        }
        Ok(None) => {
            seen.push((p, None));
            core.add_result(GetReply::NotFound { primary });
        }
        Err(e) => {
            tracing::warn!(partition = p.0, "vnode get failed: {e}");
            core.add_result(GetReply::Failed { primary });
        }
    }
}

/// Maps the core's outcome to the API's answer. Tombstone siblings are
/// hidden when a live sibling exists (the context still covers them).
fn answer(outcome: GetOutcome) -> Result<GetResponse, KvError> {
    match outcome {
        GetOutcome::Found(mut obj) => {
            obj.siblings.retain(|s| !s.content.meta.deleted);
            Ok(GetResponse::Found(obj))
        }
        GetOutcome::NotFound(tomb) => Ok(GetResponse::NotFound {
            tombstone_context: tomb.map(|t| t.vv),
        }),
        GetOutcome::RUnsatisfied { needed, got } => Err(KvError::ReadQuorum {
            which: "r",
            needed,
            got,
        }),
        GetOutcome::PrUnsatisfied { needed, got } => Err(KvError::ReadQuorum {
            which: "pr",
            needed,
            got,
        }),
    }
}
