//! The get coordinator (Riak's get FSM): read the preflist, answer at r,
//! then repair the replicas that differ from the merge.
//!
//! Local replicas are read on the caller's thread ([`Vnode::read`]: reads
//! need no serialisation); remote ones get a `Get` message first so they
//! read while the local ones are read. Every reply feeds the pure
//! [`GetCore`]. A get that has its answer before every replica replied
//! leaves a task to collect the rest until the deadline and then repair.
//!
//! [`Vnode::read`]: eddy_vnode::Vnode::read

use std::sync::Arc;

use bytes::Bytes;
use eddy_object::{RiakObject, codec};
use eddy_ring::Partition;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::time::{Instant, timeout_at};

use super::{PreflistEntry, quorum, storage_key};
use crate::core::get::{GetCore, GetOutcome, GetReply};
use crate::node::Node;
use crate::repair::around::{self, ReplicaRead, Verdict};
use eddy_model::error::KvError;
use eddy_model::request::{GetRequest, GetResponse};
use eddy_vnode::VnodeHandle;
use eddy_vnode::msg::{
    PutKind, PutRequest, StorageKey, SyncLevel, VnodeReply, VnodeRequest, WritePolicy,
};
use eddy_vnode::once::one_version;
use eddy_vnode::reply::{LocalHint, Reply, ReplyTo};

impl Node {
    /// Reads an object with the request's (or the bucket's) quorums.
    /// Counted and timed in the node's figures, whoever asks (PB, HTTP,
    /// MapReduce, a delete's read).
    pub async fn get(self: &Arc<Self>, req: GetRequest) -> Result<GetResponse, KvError> {
        self.metrics.gets.increment();
        let start = std::time::Instant::now();
        let result = self.coordinate_get(req).await;
        self.metrics.record_get(start, &result);
        result
    }

    async fn coordinate_get(self: &Arc<Self>, req: GetRequest) -> Result<GetResponse, KvError> {
        let props = self.props(&req.bucket)?;
        self.check_key(&req.key)?;
        let n = props.n_val;
        let r = quorum("r", req.options.r, props.r, n)?;
        let pr = quorum("pr", req.options.pr, props.pr, n)?;
        let notfound_ok = req.options.notfound_ok.unwrap_or(props.notfound_ok);
        let basic_quorum = req.options.basic_quorum.unwrap_or(props.basic_quorum);
        let preflist = self.preflist_entries(Node::key_hash(&req.bucket, &req.key), n);
        let mut fsm = GetFsm {
            tally: Tally {
                core: GetCore::new(preflist.len() as u32, r, pr, notfound_ok, basic_quorum),
                seen: Vec::with_capacity(preflist.len()),
            },
            key: storage_key(&req.bucket, &props, &req.key),
            policy: self.write_policy(&props),
            deadline: self.deadline(req.options.timeout_ms),
            preflist,
            all_marked: false,
        };
        let remote = fsm.ask_remote(self);
        fsm.all_marked = self.read_local_replicas(&fsm.preflist, &fsm.key, |reply| {
            fsm.tally.record(&fsm.preflist, reply);
        });
        if let Some(mut rx) = remote {
            while !fsm.tally.core.enough() {
                match timeout_at(fsm.deadline, rx.recv()).await {
                    Ok(Some(reply)) => fsm.record_remote(reply),
                    Ok(None) => break,
                    Err(_) => return Err(KvError::Timeout),
                }
            }
            let outcome = fsm.tally.core.response();
            if !fsm.tally.core.all_replied() {
                let (node, policy) = (self.clone(), fsm.policy);
                tokio::spawn(async move { fsm.finish_late(&node, rx).await });
                return answer(outcome, policy);
            }
        }
        fsm.repair(self);
        answer(fsm.tally.core.response(), fsm.policy)
    }

    /// Reads the local replicas of `preflist` and hands each reply to
    /// `record`; a marked replica's object that might bring back lost
    /// history reads as a failure (design note 009). Returns whether every
    /// replica is local and marked. With no replica marked (the usual
    /// case) replies go straight through.
    pub(super) fn read_local_replicas(
        &self,
        preflist: &[PreflistEntry],
        key: &StorageKey,
        mut record: impl FnMut(ReplicaReply),
    ) -> bool {
        let vnodes = self.vnodes.snapshot();
        let local = || {
            preflist
                .iter()
                .filter(|e| e.local)
                .filter_map(|e| vnodes.get(e.id.partition.0 as usize)?.as_ref())
        };
        let read = |v: &VnodeHandle| {
            self.metrics.vnode_gets.increment();
            (v.partition, v.read(key))
        };
        if !local().any(|v| v.is_marked()) {
            local().for_each(|v| record(read(v)));
            return false;
        }
        let reads: Vec<ReplicaRead<_>> = local()
            .map(|v| ReplicaRead {
                reply: read(v),
                marked: v.is_marked(),
            })
            .collect();
        let verdicts = around::verdicts(&reads, |(_, r)| r.as_ref().ok().and_then(|o| o.as_ref()));
        let all_marked = reads.len() == preflist.len() && reads.iter().all(|r| r.marked);
        for (read, verdict) in reads.into_iter().zip(verdicts) {
            record(match verdict {
                Verdict::Keep => read.reply,
                Verdict::Distrust => (read.reply.0, Err(KvError::Damaged(read.reply.0.0))),
            });
        }
        all_marked
    }

    /// The write policy a replica merges a bucket's objects with.
    pub fn write_policy(&self, props: &eddy_model::props::BucketProps) -> WritePolicy {
        WritePolicy {
            allow_mult: props.allow_mult,
            last_write_wins: props.last_write_wins,
            max_siblings: self.config.siblings_max,
            write_once: props.write_once,
        }
    }
}

/// One replica's answer to a read.
pub(super) type ReplicaReply = (Partition, Result<Option<RiakObject>, KvError>);

/// One coordinated get.
pub(super) struct GetFsm {
    pub(super) tally: Tally,
    pub(super) key: StorageKey,
    pub(super) policy: WritePolicy,
    pub(super) deadline: Instant,
    pub(super) preflist: Arc<[PreflistEntry]>,
    /// Every replica is local and marked damaged.
    pub(super) all_marked: bool,
}

impl GetFsm {
    /// Sends `Get` to the remote replicas; their replies come on the
    /// returned channel (none if every replica is local).
    fn ask_remote(&self, node: &Node) -> Option<UnboundedReceiver<Reply>> {
        let mut remote = self.preflist.iter().filter(|e| !e.local);
        let first = remote.next()?;
        let (tx, rx) = unbounded_channel();
        for entry in std::iter::once(first).chain(remote) {
            node.metrics.vnode_gets.increment();
            let req = VnodeRequest::Get {
                key: self.key.clone(),
            };
            node.deliver(
                &entry.id,
                req,
                ReplyTo::Local(tx.clone()),
                LocalHint::default(),
            );
        }
        Some(rx)
    }

    pub(super) fn record_remote(&mut self, reply: Reply) {
        if let VnodeReply::Get(got) = reply.reply {
            let got = (reply.partition, decode_reply(got));
            self.tally.record(&self.preflist, got);
        }
    }

    /// Collects the replies still due (until the deadline), then repairs.
    async fn finish_late(mut self, node: &Node, mut rx: UnboundedReceiver<Reply>) {
        while !self.tally.core.all_replied() {
            match timeout_at(self.deadline, rx.recv()).await {
                Ok(Some(reply)) => self.record_remote(reply),
                _ => break,
            }
        }
        self.repair(node);
    }

    /// Sends the merged object to every replica whose copy differs from
    /// it. Fire and forget: the answer does not wait for repairs. With
    /// every replica damaged, the merge may hold what the damage brought
    /// back: it is answered, but not spread.
    pub(super) fn repair(&self, node: &Node) {
        let Some(merged) = self.tally.core.merged().filter(|_| !self.all_marked) else {
            return;
        };
        let resolved;
        let merged = match self.policy.write_once {
            true => {
                resolved = one_version(merged.clone());
                &resolved
            }
            false => merged,
        };
        let mut encoded = None;
        for (p, obj) in &self.tally.seen {
            if obj.as_ref() == Some(merged) {
                continue;
            }
            let Some(entry) = self.preflist.iter().find(|e| e.id.partition == *p) else {
                continue;
            };
            node.metrics.read_repairs.increment();
            node.metrics.vnode_puts.increment();
            let encoded = encoded.get_or_insert_with(|| Bytes::from(codec::encode(merged)));
            let req = VnodeRequest::Put(PutRequest {
                key: self.key.clone(),
                kind: PutKind::Replicate {
                    encoded: encoded.clone(),
                },
                policy: self.policy,
                sync: SyncLevel::Written,
                props: None,
            });
            node.deliver(&entry.id, req, ReplyTo::Nobody, LocalHint::default());
        }
    }
}

/// The replies so far.
pub(super) struct Tally {
    pub(super) core: GetCore,
    /// Each replica that answered, and what it holds.
    pub(super) seen: Vec<(Partition, Option<RiakObject>)>,
}

impl Tally {
    pub(super) fn record(&mut self, preflist: &[PreflistEntry], (p, result): ReplicaReply) {
        let primary = preflist
            .iter()
            .find(|e| e.id.partition == p)
            .is_some_and(|e| e.primary);
        match result {
            Ok(Some(object)) => {
                self.seen.push((p, Some(object.clone())));
                self.core.add_result(GetReply::Found { primary, object });
            }
            Ok(None) => {
                self.seen.push((p, None));
                self.core.add_result(GetReply::NotFound { primary });
            }
            // Expected while a node is down: said once by the failure
            // detector, not for every request.
            Err(e @ (KvError::Damaged(_) | KvError::Unreachable(_))) => {
                tracing::debug!(partition = p.0, "{e}");
                self.core.add_result(GetReply::Failed { primary });
            }
            Err(e) => {
                tracing::warn!(partition = p.0, "vnode get failed: {e}");
                self.core.add_result(GetReply::Failed { primary });
            }
        }
    }
}

/// A remote replica's encoded object, decoded; a corrupt one is an error.
fn decode_reply(got: Result<Option<Bytes>, KvError>) -> Result<Option<RiakObject>, KvError> {
    match got? {
        Some(bytes) => Ok(Some(codec::decode(&bytes)?)),
        None => Ok(None),
    }
}

/// Maps the core's outcome to the API's answer. Tombstone siblings are
/// hidden when a live sibling exists (the context still covers them).
pub(super) fn answer(outcome: GetOutcome, policy: WritePolicy) -> Result<GetResponse, KvError> {
    match outcome {
        GetOutcome::Found(obj) if policy.write_once => Ok(GetResponse::Found(one_version(obj))),
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
