//! A multi-put's waves: each object written as [`Node::put`] writes it,
//! the replicated objects sent to each node's vnodes in batches.
//!
//! Each key runs the single put's steps as a state machine fed by one
//! channel for the whole wave: its coordinating vnode (the first local
//! one not marked damaged, usually on this node: then the write is
//! applied on the caller's thread) gets the client's write alone; its
//! object goes to the local replicas at once and to the remote ones
//! through the wave's [`Outbox`], which sends a node's batch when it is
//! full and every batch once the wave's keys were coordinated (and again
//! whenever replies bring more objects). Every reply is a step of the
//! key's [`PutRun`](crate::core::put_run::PutRun) through the single put's
//! [`PutFsm`], as the single put steps it: the run decides which replica
//! coordinates after a refusal, whom the object goes to, and when the
//! replies are enough; the wave does the sends. A replica refusing under
//! newer bucket props hands its key to the single put's restart
//! ([`Node::put_under_props`]), run as a task of the wave.

use std::sync::Arc;

use eddy_object::{Content, VersionVector};
use eddy_ring::NodeName;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinSet;
use tokio::time::timeout_at;

use super::Run;
use super::plan::{Admission, Outbox};
use crate::coordinator::content_bytes;
use crate::coordinator::put::{Coordinated, PutFsm, Target, Write, Written};
use crate::core::put_run::{PutAction, PutEvent, Retry};
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::error::Signal;
use eddy_model::metadata::entries::PropsEntries;
use eddy_model::props::BucketProps;
use eddy_model::request::{BucketRef, PutOptions, PutResponse};
use eddy_vnode::msg::{BatchItem, Coordinate, PutKind, VnodeReply};
use eddy_vnode::reply::{KeyedReply, LocalHint, Reply, ReplyTo};

/// Keys coordinated between two yields to the runtime (a local
/// coordinating vnode writes on the caller's thread).
const WRITES_PER_YIELD: usize = 64;

/// One object of a multi-put, at `index` in the request.
pub(super) struct PutJob {
    pub(super) index: usize,
    pub(super) key: Vec<u8>,
    pub(super) context: Option<VersionVector>,
    pub(super) content: Content,
}

/// A job whose write is ready for its coordinating vnode.
struct Ready {
    index: usize,
    key: Vec<u8>,
    client: Coordinate,
}

/// One key of a wave, as its single put's run.
struct Slot<'t> {
    index: usize,
    key: Vec<u8>,
    target: &'t Target<'t>,
    fsm: PutFsm<'t>,
    stage: Stage,
    /// The client's write, kept for another coordinating vnode when one
    /// of another node may refuse it (as a single put keeps it).
    spare: Option<Coordinate>,
}

enum Stage {
    /// The coordinating vnode has the client's write.
    Coordinating,
    /// Its object went to the other replicas.
    Replicating(Written),
    /// Answered (or handed to a task).
    Done,
}

/// What a wave sends its requests with.
struct Sender<'w> {
    tx: &'w UnboundedSender<KeyedReply>,
    outbox: Outbox<ReplyTo>,
}

impl Node {
    /// Writes each job's object, in waves, placing each result in `run`.
    pub(super) async fn run_puts(
        self: &Arc<Self>,
        bucket: &BucketRef,
        options: &PutOptions,
        jobs: Vec<PutJob>,
        run: &mut Run<PutResponse>,
    ) -> Result<(), KvError> {
        let resolved = self.props_entries(bucket)?;
        if jobs.iter().any(|j| !j.content.meta.deleted) {
            crate::coordinator::put::refuse_plain_put(bucket, &resolved.0)?;
        }
        let mut jobs = jobs.into_iter().peekable();
        while jobs.peek().is_some() {
            if run.expired() {
                for job in jobs.by_ref() {
                    run.skip(job.index, Err(KvError::Timeout));
                }
                break;
            }
            let wave = self.put_wave_of(&mut jobs, bucket, options, &resolved.0, run);
            self.put_wave(bucket, options, &resolved, wave, run).await;
        }
        Ok(())
    }

    /// The next wave's writes; a key refused before any vnode is asked is
    /// answered here.
    fn put_wave_of(
        &self,
        jobs: &mut std::iter::Peekable<std::vec::IntoIter<PutJob>>,
        bucket: &BucketRef,
        options: &PutOptions,
        props: &BucketProps,
        run: &mut Run<PutResponse>,
    ) -> Vec<Ready> {
        let mut admission = Admission::new(run.caps(), run.limits.concurrency);
        let bucket_bytes = bucket.storage_bucket().len();
        let mut wave = Vec::new();
        while let Some(job) = jobs.peek() {
            let bytes = 64 + bucket_bytes + job.key.len() + content_bytes(&job.content);
            let hash = Node::key_hash(bucket, &job.key);
            let preflist = self.preflist_entries(hash, props.n_val);
            let remote: Vec<(&NodeName, usize)> = preflist
                .iter()
                .filter(|e| !e.local)
                .map(|e| (&e.id.node, bytes))
                .collect();
            if !admission.admit(&remote) {
                break;
            }
            let Some(job) = jobs.next() else { break };
            self.metrics.puts.increment();
            let write = self.check_key(&job.key).and_then(|()| {
                self.client_write((bucket, &job.key), job.context, job.content, options)
            });
            match write {
                Ok(client) => wave.push(Ready {
                    index: job.index,
                    key: job.key,
                    client,
                }),
                Err(e) => run.place(job.index, Err(e)),
            }
        }
        wave
    }

    /// Runs one wave to the answer of each of its keys.
    async fn put_wave(
        self: &Arc<Self>,
        bucket: &BucketRef,
        options: &PutOptions,
        resolved: &(Arc<BucketProps>, Arc<PropsEntries>),
        wave: Vec<Ready>,
        run: &mut Run<PutResponse>,
    ) {
        let (props, entries) = resolved;
        let keys: Vec<Vec<u8>> = wave.iter().map(|ready| ready.key.clone()).collect();
        let targets: Vec<Target<'_>> = keys
            .iter()
            .map(|key| Target {
                bucket,
                key,
                options,
                deadline: run.deadline,
            })
            .collect();
        let (tx, mut rx) = unbounded_channel::<KeyedReply>();
        let mut send = Sender {
            tx: &tx,
            outbox: Outbox::new(run.caps()),
        };
        let mut restarts = JoinSet::new();
        let mut slots: Vec<Option<Slot<'_>>> = Vec::with_capacity(wave.len());
        for (s, (ready, target)) in wave.into_iter().zip(&targets).enumerate() {
            if s % WRITES_PER_YIELD == WRITES_PER_YIELD - 1 {
                tokio::task::yield_now().await;
            }
            let mut fsm = match self.put_fsm(target, props, entries.clone()) {
                Ok(started) => started,
                Err(e) => {
                    run.place(ready.index, Err(e));
                    slots.push(None);
                    continue;
                }
            };
            let spare = fsm
                .preflist
                .iter()
                .any(|e| !e.local)
                .then(|| ready.client.clone());
            let idempotent = ready.client.update.is_none();
            fsm.steps.retry(Retry::of(spare.is_some(), idempotent));
            let slot = Slot {
                index: ready.index,
                key: ready.key,
                target,
                fsm,
                stage: Stage::Coordinating,
                spare,
            };
            self.send_coordinate(&slot, s, ready.client, &send);
            slots.push(Some(slot));
            // A local coordinating vnode answered already.
            self.drain_puts(&mut slots, &mut rx, &mut send, &mut restarts, run);
        }
        self.flush_puts(&mut send);
        let mut waiting = slots.iter().flatten().filter(|s| s.is_waiting()).count();
        while waiting > 0 {
            let keyed = match timeout_at(run.deadline, rx.recv()).await {
                Ok(Some(keyed)) => keyed,
                Ok(None) | Err(_) => break,
            };
            self.on_put_reply(&mut slots, keyed, &mut send, &mut restarts, run);
            self.drain_puts(&mut slots, &mut rx, &mut send, &mut restarts, run);
            self.flush_puts(&mut send);
            waiting = slots.iter().flatten().filter(|s| s.is_waiting()).count();
        }
        for slot in slots.iter_mut().flatten().filter(|s| s.is_waiting()) {
            run.place(slot.index, Err(KvError::Timeout));
            slot.stage = Stage::Done;
        }
        while let Some(joined) = restarts.join_next().await {
            match joined {
                Ok((index, result)) => run.answer(index, result),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => {}
            }
        }
    }

    /// Hands the client's write to the slot's coordinating vnode.
    fn send_coordinate(&self, slot: &Slot<'_>, s: usize, client: Coordinate, send: &Sender<'_>) {
        let fsm = &slot.fsm;
        let first = fsm.first();
        let req = fsm.request(PutKind::Coordinate(Box::new(client)), first);
        let reply = ReplyTo::Keyed {
            tx: send.tx.clone(),
            key: s as u32,
        };
        self.deliver(&fsm.preflist[first].id, req, reply, LocalHint::default());
    }

    /// Handles every reply already received, without waiting.
    fn drain_puts(
        self: &Arc<Self>,
        slots: &mut [Option<Slot<'_>>],
        rx: &mut UnboundedReceiver<KeyedReply>,
        send: &mut Sender<'_>,
        restarts: &mut JoinSet<(usize, Result<PutResponse, KvError>)>,
        run: &mut Run<PutResponse>,
    ) {
        while let Ok(keyed) = rx.try_recv() {
            self.on_put_reply(slots, keyed, send, restarts, run);
        }
        for (node, items) in send.outbox.take_full() {
            self.deliver_batch(&node, items);
        }
    }

    /// Sends every batch of the outbox.
    fn flush_puts(&self, send: &mut Sender<'_>) {
        for (node, items) in send.outbox.take_all() {
            self.deliver_batch(&node, items);
        }
    }

    /// Feeds one reply to its key, as the single put's run would.
    fn on_put_reply(
        self: &Arc<Self>,
        slots: &mut [Option<Slot<'_>>],
        keyed: KeyedReply,
        send: &mut Sender<'_>,
        restarts: &mut JoinSet<(usize, Result<PutResponse, KvError>)>,
        run: &mut Run<PutResponse>,
    ) {
        let s = keyed.key as usize;
        let Some(Some(slot)) = slots.get_mut(s) else {
            return;
        };
        let reply = keyed.reply;
        match slot.stage {
            Stage::Done => {}
            Stage::Coordinating => self.on_coordinating(slot, s, reply, send, restarts, run),
            Stage::Replicating(_) => {
                let action = slot.fsm.record(reply);
                self.on_put_action(slot, action, restarts, run);
            }
        }
    }

    /// Does what a replicating key's run decided.
    fn on_put_action(
        self: &Arc<Self>,
        slot: &mut Slot<'_>,
        action: PutAction,
        restarts: &mut JoinSet<(usize, Result<PutResponse, KvError>)>,
        run: &mut Run<PutResponse>,
    ) {
        match action {
            PutAction::Newer(KvError::Signal(Signal::PropsNewer(theirs))) => {
                let Stage::Replicating(written) = std::mem::replace(&mut slot.stage, Stage::Done)
                else {
                    return;
                };
                let write = Write {
                    client: None,
                    coordinated: Some(written),
                    spare: slot.spare.take(),
                };
                self.restart_put(slot, write, *theirs, restarts, run);
            }
            PutAction::Newer(e) => self.finish_put(slot, Err(e), run),
            PutAction::Done(answer) => self.settle_put(slot, answer, run),
            PutAction::Coordinate(_)
            | PutAction::Fail
            | PutAction::Replicate { .. }
            | PutAction::CatchUp
            | PutAction::Wait => {}
        }
    }

    /// A reply to a key whose coordinating vnode has not answered with
    /// its object yet (the single put's `await_coordinated`).
    fn on_coordinating(
        self: &Arc<Self>,
        slot: &mut Slot<'_>,
        s: usize,
        reply: Reply,
        send: &mut Sender<'_>,
        restarts: &mut JoinSet<(usize, Result<PutResponse, KvError>)>,
        run: &mut Run<PutResponse>,
    ) {
        match reply.reply {
            // Multi-key puts carry no data type operations, so no deltas.
            VnodeReply::Coordinated {
                encoded, siblings, ..
            } => {
                let written = Written {
                    encoded,
                    siblings,
                    hint: reply.hint,
                    delta: None,
                };
                if let PutAction::Replicate { except } = slot.fsm.steps.step(PutEvent::Coordinated)
                {
                    self.replicate_batched(slot, s, &written, except, send);
                }
                slot.stage = Stage::Replicating(written);
                let action = slot.fsm.steps.step(PutEvent::Replicated);
                self.on_put_action(slot, action, restarts, run);
            }
            VnodeReply::Put(Err(e)) => {
                self.write_refusal.refused(&e);
                let refused = slot.fsm.preflist[slot.fsm.first()].id.partition;
                if let PutAction::Coordinate(_) =
                    slot.fsm.steps.step(PutEvent::CoordinateFailed(&e))
                {
                    tracing::debug!(partition = refused.0, "coordinating elsewhere: {e}");
                    if let Some(client) = slot.spare.clone() {
                        self.send_coordinate(slot, s, client, send);
                    }
                    return;
                }
                match e {
                    KvError::Signal(Signal::PropsNewer(theirs)) => {
                        slot.stage = Stage::Done;
                        let write = Write {
                            client: slot.spare.take(),
                            coordinated: None,
                            spare: None,
                        };
                        self.restart_put(slot, write, *theirs, restarts, run);
                    }
                    e => self.finish_put(slot, Err(e), run),
                }
            }
            VnodeReply::Put(Ok(_)) => {
                // Counted; the run answers only once it replicated.
                slot.fsm.record(reply);
            }
            VnodeReply::Get(_) | VnodeReply::Fold(_) => {}
        }
    }

    /// Sends the coordinated object to every other replica: a local one
    /// at once, a remote one through the outbox.
    fn replicate_batched(
        &self,
        slot: &Slot<'_>,
        s: usize,
        written: &Written,
        except: Option<usize>,
        send: &mut Sender<'_>,
    ) {
        let fsm = &slot.fsm;
        self.metrics.vnode_puts.add(fsm.preflist.len() as u64);
        for (i, entry) in fsm.preflist.iter().enumerate() {
            if Some(i) == except {
                continue;
            }
            let kind = PutKind::Replicate {
                encoded: written.encoded.clone(),
            };
            let request = fsm.request(kind, i);
            let reply = ReplyTo::Keyed {
                tx: send.tx.clone(),
                key: s as u32,
            };
            match entry.local {
                true => self.deliver(&entry.id, request, reply, written.hint),
                false => {
                    let item = BatchItem {
                        partition: entry.id.partition,
                        request,
                    };
                    send.outbox.push(&entry.id.node, item, reply);
                }
            }
        }
    }

    /// Answers a replicating key whose run has its answer (the end of
    /// the single put's run).
    fn settle_put(
        &self,
        slot: &mut Slot<'_>,
        answer: Result<(), KvError>,
        run: &mut Run<PutResponse>,
    ) {
        let Stage::Replicating(written) = std::mem::replace(&mut slot.stage, Stage::Done) else {
            return;
        };
        let result = match answer {
            Err(e) => {
                self.write_refusal.refused(&e);
                Err(e)
            }
            Ok(()) => {
                self.write_refusal.accepted();
                let coordinated = Coordinated {
                    encoded: written.encoded,
                    siblings: written.siblings,
                };
                let key = std::mem::take(&mut slot.key);
                self.put_response(slot.target.bucket, key, coordinated, slot.target.options)
            }
        };
        run.answer(slot.index, result);
    }

    fn finish_put(
        &self,
        slot: &mut Slot<'_>,
        result: Result<PutResponse, KvError>,
        run: &mut Run<PutResponse>,
    ) {
        slot.stage = Stage::Done;
        run.answer(slot.index, result);
    }

    /// Hands a key refused under newer bucket props to the single put's
    /// restart, as a task of the wave (its first restart).
    fn restart_put(
        self: &Arc<Self>,
        slot: &mut Slot<'_>,
        write: Write,
        theirs: PropsEntries,
        restarts: &mut JoinSet<(usize, Result<PutResponse, KvError>)>,
        run: &Run<PutResponse>,
    ) {
        let node = self.clone();
        let (index, key) = (slot.index, std::mem::take(&mut slot.key));
        let target = slot.target;
        let bucket = target.bucket.clone();
        let options = target.options.clone();
        let user_key = target.key.to_vec();
        let deadline = run.deadline;
        restarts.spawn(async move {
            let result = async {
                tracing::debug!(restarts = 1, "a replica has newer bucket props");
                node.registry
                    .apply_entries(&bucket.bucket_type, &bucket.bucket, &theirs)?;
                let resolved = node.props_entries(&bucket)?;
                let target = Target {
                    bucket: &bucket,
                    key: &user_key,
                    options: &options,
                    deadline,
                };
                let coordinated = node.put_under_props(&target, resolved, write, 1).await?;
                node.put_response(&bucket, key, coordinated, &options)
            };
            (index, result.await)
        });
    }
}

impl Slot<'_> {
    fn is_waiting(&self) -> bool {
        !matches!(self.stage, Stage::Done)
    }
}
