//! The get coordinator (Riak's get FSM): read the preflist, answer at r,
//! then repair the replicas that differ from the merge.
//!
//! Local replicas are read on the caller's thread ([`Vnode::read`]: reads
//! need no serialisation); remote ones get a `Get` message first so they
//! read while the local ones are read. Every reply is stepped into the
//! sans-IO [`GetRun`], which decides when the get answers and whom read
//! repair sends what; this driver only sends, receives and keeps the
//! deadline. A get that has its answer before every replica replied
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
use crate::core::get::{GetCore, GetReply};
use crate::core::get_run::{GetAction, GetEvent, GetRun};
use crate::node::Node;
use crate::repair::around::{self, ReplicaRead, Verdict};
use eddy_model::error::KvError;
use eddy_model::request::{GetRequest, GetResponse};
use eddy_vnode::VnodeHandle;
use eddy_vnode::msg::{
    PutKind, PutRequest, StorageKey, SyncLevel, VnodeReply, VnodeRequest, WritePolicy,
};
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
        let policy = self.write_policy(&props);
        let core = GetCore::new(preflist.len() as u32, r, pr, notfound_ok, basic_quorum);
        let mut fsm = GetFsm {
            run: GetRun::new(preflist.len(), core, policy.write_once),
            key: storage_key(&req.bucket, &props, &req.key),
            policy,
            deadline: self.deadline(req.options.timeout_ms),
            preflist,
        };
        let mut rx = fsm.ask_remote(self);
        fsm.read_locally(self);
        // With every replica local, no reply is left to come.
        let read = match rx {
            Some(_) => GetEvent::LocalRead,
            None => GetEvent::RepliesEnded,
        };
        let mut action = fsm.run.step(read);
        // The run answers before it repairs or ends.
        let answer = loop {
            if let GetAction::Answer(answer) = action {
                break answer;
            }
            action = match fsm.next_reply(&mut rx).await {
                Some(action) => action,
                None => return Err(KvError::Timeout),
            };
        };
        fsm.after_answer(self, rx);
        answer
    }

    /// Reads the local replicas of `preflist` and hands each reply to
    /// `record`, with whether its replica is marked damaged; a marked
    /// replica's object that might bring back lost history reads as a
    /// failure (design note 009). With no replica marked (the usual case)
    /// replies go straight through.
    pub(super) fn read_local_replicas(
        &self,
        preflist: &[PreflistEntry],
        key: &StorageKey,
        mut record: impl FnMut(ReplicaReply, bool),
    ) {
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
            local().for_each(|v| record(read(v), false));
            return;
        }
        let reads: Vec<ReplicaRead<_>> = local()
            .map(|v| ReplicaRead {
                reply: read(v),
                marked: v.is_marked(),
            })
            .collect();
        let verdicts = around::verdicts(&reads, |(_, r)| r.as_ref().ok().and_then(|o| o.as_ref()));
        for (read, verdict) in reads.into_iter().zip(verdicts) {
            let reply = match verdict {
                Verdict::Keep => read.reply,
                Verdict::Distrust => (read.reply.0, Err(KvError::Damaged(read.reply.0.0))),
            };
            record(reply, read.marked);
        }
    }

    /// The write policy a replica merges the objects of storage bucket
    /// `storage_bucket` with, from one lookup of its props; `None` for a
    /// dropped generation of the bucket, whose objects are not written. A
    /// bucket this node cannot name keeps every sibling, which loses
    /// nothing, and has no ttl.
    pub fn write_policy_of(&self, storage_bucket: &[u8]) -> Option<WritePolicy> {
        Some(
            match self.registry().props_of_storage_bucket(storage_bucket) {
                Some((props, generation)) if generation < props.generation => return None,
                Some((props, _)) => self.write_policy(&props),
                None => WritePolicy {
                    allow_mult: true,
                    last_write_wins: false,
                    max_siblings: self.config.siblings_max,
                    write_once: false,
                    ttl_secs: 0,
                },
            },
        )
    }

    /// The write policy a replica merges a bucket's objects with.
    pub fn write_policy(&self, props: &eddy_model::props::BucketProps) -> WritePolicy {
        WritePolicy {
            allow_mult: props.allow_mult,
            last_write_wins: props.last_write_wins,
            max_siblings: self.config.siblings_max,
            write_once: props.write_once,
            ttl_secs: props.ttl.map_or(0, |t| t.secs()),
        }
    }
}

/// One replica's answer to a read.
pub(super) type ReplicaReply = (Partition, Result<Option<RiakObject>, KvError>);

/// One coordinated get: its run and what its sends need.
pub(super) struct GetFsm {
    pub(super) run: GetRun,
    pub(super) key: StorageKey,
    pub(super) policy: WritePolicy,
    pub(super) deadline: Instant,
    pub(super) preflist: Arc<[PreflistEntry]>,
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

    /// Reads the local replicas into the run (it answers only once told
    /// they were all read).
    pub(super) fn read_locally(&mut self, node: &Node) {
        node.read_local_replicas(&self.preflist, &self.key, |reply, marked| {
            step_reply(&mut self.run, &self.preflist, reply, marked);
        });
    }

    /// Steps a remote replica's reply.
    pub(super) fn record_remote(&mut self, reply: Reply) -> GetAction {
        match reply.reply {
            VnodeReply::Get(got) => {
                let got = (reply.partition, decode_reply(got));
                step_reply(&mut self.run, &self.preflist, got, false)
            }
            _ => GetAction::Wait,
        }
    }

    /// The run's next action: on the next reply, or once none is left to
    /// come (`rx` closed, or none at all). `None` at the deadline.
    async fn next_reply(&mut self, rx: &mut Option<UnboundedReceiver<Reply>>) -> Option<GetAction> {
        let Some(rx) = rx else {
            return Some(self.run.step(GetEvent::RepliesEnded));
        };
        match timeout_at(self.deadline, rx.recv()).await {
            Ok(Some(reply)) => Some(self.record_remote(reply)),
            Ok(None) => Some(self.run.step(GetEvent::RepliesEnded)),
            Err(_) => None,
        }
    }

    /// Once answered: repairs now if every reply came, or leaves a task
    /// to collect the rest (until the deadline) and repair then.
    fn after_answer(mut self, node: &Arc<Node>, rx: Option<UnboundedReceiver<Reply>>) {
        match self.run.step(GetEvent::Answered) {
            GetAction::Repair => self.repair(node),
            GetAction::Wait => {
                let node = node.clone();
                tokio::spawn(async move { self.finish_late(&node, rx).await });
            }
            GetAction::Answer(_) | GetAction::Done => {}
        }
    }

    /// Collects the replies still due (until the deadline), then repairs.
    async fn finish_late(mut self, node: &Node, mut rx: Option<UnboundedReceiver<Reply>>) {
        loop {
            let action = match self.next_reply(&mut rx).await {
                Some(action) => action,
                None => self.run.step(GetEvent::RepliesEnded),
            };
            match action {
                GetAction::Wait => {}
                GetAction::Repair => return self.repair(node),
                GetAction::Answer(_) | GetAction::Done => return,
            }
        }
    }

    /// Sends the object the run names to the replicas it names. Fire and
    /// forget: the answer does not wait for repairs.
    pub(super) fn repair(&self, node: &Node) {
        let Some(repairs) = self.run.repairs() else {
            return;
        };
        let mut encoded = None;
        for place in repairs.replicas() {
            let Some(entry) = self.preflist.get(place) else {
                continue;
            };
            node.metrics.read_repairs.increment();
            node.metrics.vnode_puts.increment();
            let encoded =
                encoded.get_or_insert_with(|| Bytes::from(codec::encode(repairs.object())));
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

/// Steps one replica's reply into `run`, at the replica's place in
/// `preflist`. Replies come only from the partitions asked, so each has a
/// place.
fn step_reply(
    run: &mut GetRun,
    preflist: &[PreflistEntry],
    (p, result): ReplicaReply,
    marked: bool,
) -> GetAction {
    let Some(place) = preflist.iter().position(|e| e.id.partition == p) else {
        tracing::debug!(partition = p.0, "get reply from a partition not asked");
        return GetAction::Wait;
    };
    let primary = preflist.get(place).is_some_and(|e| e.primary);
    let reply = match result {
        Ok(Some(object)) => GetReply::Found { primary, object },
        Ok(None) => GetReply::NotFound { primary },
        // Expected while a node is down: said once by the failure
        // detector, not for every request.
        Err(e @ (KvError::Damaged(_) | KvError::Unreachable(_))) => {
            tracing::debug!(partition = p.0, "{e}");
            GetReply::Failed { primary }
        }
        Err(e) => {
            tracing::warn!(partition = p.0, "vnode get failed: {e}");
            GetReply::Failed { primary }
        }
    };
    run.step(GetEvent::Replied {
        place,
        marked,
        reply,
    })
}

/// A remote replica's encoded object, decoded; a corrupt one is an error.
fn decode_reply(got: Result<Option<Bytes>, KvError>) -> Result<Option<RiakObject>, KvError> {
    match got? {
        Some(bytes) => Ok(Some(codec::decode(&bytes)?)),
        None => Ok(None),
    }
}
