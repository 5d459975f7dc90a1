//! The get coordinator: read the preflist, answer at r, then repair.
//!
//! Every vnode is local on one node, so each is read on the caller's
//! thread ([`crate::vnode::Vnode::read`]); the replies feed the pure
//! [`GetCore`] exactly as messages from remote vnodes will.

use std::sync::Arc;

use eddy_object::RiakObject;
use eddy_ring::Partition;
use tokio::sync::mpsc::unbounded_channel;

use super::{quorum, storage_key};
use crate::core::get::{GetCore, GetOutcome, GetReply};
use crate::error::KvError;
use crate::node::{Node, NodeCounters};
use crate::repair::around::{self, ReplicaRead, Verdict};
use crate::request::{GetRequest, GetResponse};
use crate::vnode::msg::{PutKind, StorageKey, VnodeRequest, WritePolicy};

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
        let mut seen = Vec::with_capacity(preflist.len());
        let all_marked = self.read_replicas(&preflist, &key, |reply| {
            record(&mut core, &mut seen, reply);
        });
        // With every replica damaged, the merge may hold what the damage
        // brought back: it is answered, but not spread by read repair.
        if let Some(merged) = core.merged().filter(|_| !all_marked) {
            self.read_repair(merged, &seen, &key, self.write_policy(&props));
        }
        answer(core.response())
    }

    /// Reads every replica and hands each reply to `record`; a marked
    /// replica's object that might bring back lost history reads as a
    /// failure (design note 009). Returns whether every replica is marked.
    /// With no replica marked (the usual case) replies go straight through.
    fn read_replicas(
        &self,
        preflist: &[(Partition, &eddy_ring::NodeName)],
        key: &StorageKey,
        mut record: impl FnMut(ReplicaReply),
    ) -> bool {
        let read = |p: Partition| {
            NodeCounters::bump(&self.counters.vnode_gets);
            (p, self.vnode(p).read(key))
        };
        if !preflist.iter().any(|(p, _)| self.vnode(*p).is_marked()) {
            preflist.iter().for_each(|(p, _)| record(read(*p)));
            return false;
        }
        let reads: Vec<ReplicaRead<_>> = preflist
            .iter()
            .map(|(p, _)| ReplicaRead {
                reply: read(*p),
                marked: self.vnode(*p).is_marked(),
            })
            .collect();
        let verdicts = around::verdicts(&reads, |(_, r)| r.as_ref().ok().and_then(|o| o.as_ref()));
        let all_marked = reads.iter().all(|r| r.marked);
        for (read, verdict) in reads.into_iter().zip(verdicts) {
            record(match verdict {
                Verdict::Keep => read.reply,
                Verdict::Distrust => (read.reply.0, Err(KvError::Damaged(read.reply.0.0))),
            });
        }
        all_marked
    }

    pub(crate) fn write_policy(&self, props: &crate::props::BucketProps) -> WritePolicy {
        WritePolicy {
            allow_mult: props.allow_mult,
            last_write_wins: props.last_write_wins,
            max_siblings: self.config.siblings_max,
        }
    }

    /// Sends the merged object to every replica whose copy differs from it.
    /// Fire and forget: the answer does not wait for repairs.
    fn read_repair(
        &self,
        merged: &RiakObject,
        seen: &[(Partition, Option<RiakObject>)],
        key: &StorageKey,
        policy: WritePolicy,
    ) {
        for (p, obj) in seen {
            if obj.as_ref() == Some(merged) {
                continue;
            }
            NodeCounters::bump(&self.counters.read_repairs);
            NodeCounters::bump(&self.counters.vnode_puts);
            let (tx, _rx) = unbounded_channel();
            let kind = Box::new(PutKind::Replicate {
                object: merged.clone(),
                encoded: None,
                logged_at: None,
            });
            let req = VnodeRequest::Put {
                key: key.clone(),
                kind,
                policy,
                sync: false,
                reply: tx,
                forward: Vec::new(),
            };
            if let Err(e) = self.vnode(*p).send(req) {
                tracing::debug!(partition = p.0, "read repair not queued: {e}");
            }
        }
    }
}

/// One replica's answer to a read.
type ReplicaReply = (Partition, Result<Option<RiakObject>, KvError>);

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
        Err(e @ KvError::Damaged(_)) => {
            tracing::debug!(partition = p.0, "{e}");
            core.add_result(GetReply::Failed { primary });
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
