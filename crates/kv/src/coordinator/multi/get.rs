//! A multi-get's waves: each key read as [`Node::get`] reads it, its
//! remote replicas asked in batches.
//!
//! A wave sends its batches first, so remote vnodes read while the local
//! ones are read on the caller's thread (key by key, in request order);
//! every reply is stepped into its key's [`GetRun`] (the single get's
//! state machine: quorums, damaged replicas, when to answer, whom to
//! repair with what), and the wave does what it returns. Keys still
//! waiting for their answer at the deadline time out; the answered keys
//! still waiting for replies are repaired by a task that collects the
//! rest of the wave's replies until the deadline, as a single get's does.
//!
//! [`GetRun`]: crate::core::get_run::GetRun

use std::sync::Arc;

use eddy_ring::NodeName;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::time::{Instant, timeout_at};

use super::Run;
use super::plan::{Admission, Outbox};
use crate::coordinator::get::GetFsm;
use crate::coordinator::{PreflistEntry, quorum};
use crate::core::get::GetCore;
use crate::core::get_run::{GetAction, GetEvent, GetRun};
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::props::BucketProps;
use eddy_model::request::{BucketRef, GetOptions, GetResponse};
use eddy_vnode::msg::StorageKey;
use eddy_vnode::msg::{BatchItem, VnodeRequest, WritePolicy};
use eddy_vnode::reply::{KeyedReply, ReplyTo};

/// Local reads between two yields to the runtime.
const READS_PER_YIELD: usize = 64;

/// One key of a multi-get, at `index` in the request.
pub(super) struct GetJob {
    pub(super) index: usize,
    pub(super) key: Vec<u8>,
}

/// What every key of one multi-get is read with.
struct GetSpec {
    n_val: u32,
    r: u32,
    pr: u32,
    notfound_ok: bool,
    basic_quorum: bool,
    policy: WritePolicy,
    /// The bucket's generation, which names its storage (design note 018).
    generation: u64,
}

/// One key of a wave.
struct Slot {
    /// The key's place in the request.
    index: usize,
    fsm: GetFsm,
}

impl Node {
    /// Reads each job's key, in waves, placing each result in `run`.
    pub(super) async fn run_gets(
        self: &Arc<Self>,
        bucket: &BucketRef,
        props: &BucketProps,
        options: &GetOptions,
        jobs: Vec<GetJob>,
        run: &mut Run<GetResponse>,
    ) -> Result<(), KvError> {
        let n = props.n_val;
        let spec = GetSpec {
            n_val: n,
            r: quorum("r", options.r, props.r, n)?,
            pr: quorum("pr", options.pr, props.pr, n)?,
            notfound_ok: options.notfound_ok.unwrap_or(props.notfound_ok),
            basic_quorum: options.basic_quorum.unwrap_or(props.basic_quorum),
            policy: self.write_policy(props),
            generation: props.generation,
        };
        let mut jobs = jobs.into_iter().peekable();
        while jobs.peek().is_some() {
            if run.budget.spent || run.expired() {
                let max = run.budget.max;
                for job in jobs.by_ref() {
                    let e = match run.budget.spent {
                        true => KvError::AnswerTooLarge { max },
                        false => KvError::Timeout,
                    };
                    run.skip(job.index, Err(e));
                }
                break;
            }
            let wave = self.get_wave_of(&mut jobs, bucket, &spec, run);
            self.get_wave(bucket, &spec, wave, run).await;
        }
        Ok(())
    }

    /// The next wave's keys, with their preflists; a key refused before
    /// any vnode is asked is answered here.
    fn get_wave_of(
        &self,
        jobs: &mut std::iter::Peekable<std::vec::IntoIter<GetJob>>,
        bucket: &BucketRef,
        spec: &GetSpec,
        run: &mut Run<GetResponse>,
    ) -> Vec<(GetJob, Arc<[PreflistEntry]>)> {
        let mut admission = Admission::new(run.caps(), run.limits.concurrency);
        let bucket_bytes = bucket.storage_bucket().len();
        let mut wave = Vec::new();
        let mut refused = 0;
        while let Some(job) = jobs.peek() {
            if let Err(e) = self.check_key(&job.key) {
                refused += 1;
                run.place(job.index, Err(e));
                jobs.next();
                continue;
            }
            let preflist = self.preflist_entries(Node::key_hash(bucket, &job.key), spec.n_val);
            let bytes = 9 + bucket_bytes + job.key.len();
            let remote: Vec<(&NodeName, usize)> = preflist
                .iter()
                .filter(|e| !e.local)
                .map(|e| (&e.id.node, bytes))
                .collect();
            if !admission.admit(&remote) {
                break;
            }
            if let Some(job) = jobs.next() {
                wave.push((job, preflist));
            }
        }
        self.metrics.gets.add(refused + wave.len() as u64);
        wave
    }

    /// Runs one wave to the answer of each of its keys.
    async fn get_wave(
        self: &Arc<Self>,
        bucket: &BucketRef,
        spec: &GetSpec,
        wave: Vec<(GetJob, Arc<[PreflistEntry]>)>,
        run: &mut Run<GetResponse>,
    ) {
        let (tx, mut rx) = unbounded_channel::<KeyedReply>();
        let mut outbox = Outbox::new(run.caps());
        let mut slots = Vec::with_capacity(wave.len());
        for (s, (job, preflist)) in wave.into_iter().enumerate() {
            let key = StorageKey {
                bucket: bucket.storage_bucket_at(spec.generation),
                key: job.key.clone(),
            };
            for entry in preflist.iter().filter(|e| !e.local) {
                self.metrics.vnode_gets.increment();
                let item = BatchItem {
                    partition: entry.id.partition,
                    request: VnodeRequest::Get { key: key.clone() },
                };
                let reply = ReplyTo::Keyed {
                    tx: tx.clone(),
                    key: s as u32,
                };
                outbox.push(&entry.id.node, item, reply);
            }
            for (node, items) in outbox.take_full() {
                self.deliver_batch(&node, items);
            }
            let core = GetCore::new(
                preflist.len() as u32,
                spec.r,
                spec.pr,
                spec.notfound_ok,
                spec.basic_quorum,
            );
            let fsm = GetFsm {
                run: GetRun::new(preflist.len(), core, spec.policy.write_once),
                key,
                policy: spec.policy,
                deadline: run.deadline,
                preflist,
            };
            slots.push(Slot {
                index: job.index,
                fsm,
            });
        }
        for (node, items) in outbox.take_all() {
            self.deliver_batch(&node, items);
        }
        // The vnodes hold the other senders: the channel closes once
        // every reply came.
        drop(tx);
        self.read_wave_locally(&mut slots, run).await;
        self.await_wave(&mut slots, &mut rx, run).await;
        let late: Vec<Option<GetFsm>> = slots
            .into_iter()
            .map(|s| (!s.fsm.run.over()).then_some(s.fsm))
            .collect();
        if late.iter().any(Option::is_some) {
            let (node, deadline) = (self.clone(), run.deadline);
            tokio::spawn(async move { finish_late(&node, late, rx, deadline).await });
        }
    }

    /// Reads each key's local replicas, in order, and answers the keys
    /// that have enough; keys not read once the answer budget is spent
    /// are shed unread.
    async fn read_wave_locally(&self, slots: &mut [Slot], run: &mut Run<GetResponse>) {
        for (n, slot) in slots.iter_mut().enumerate() {
            if n % READS_PER_YIELD == READS_PER_YIELD - 1 {
                tokio::task::yield_now().await;
            }
            if run.budget.spent {
                let max = run.budget.max;
                run.place(slot.index, Err(KvError::AnswerTooLarge { max }));
                slot.fsm.run.step(GetEvent::Abandoned);
                continue;
            }
            slot.fsm.read_locally(self);
            let action = slot.fsm.run.step(GetEvent::LocalRead);
            self.act_get(slot, action, run);
        }
    }

    /// Steps remote replies into their keys' runs until every key is
    /// answered. Once every reply came (the channel closed), each run
    /// answers with what it has and repairs; at the deadline the keys
    /// still waiting time out.
    async fn await_wave(
        &self,
        slots: &mut [Slot],
        rx: &mut UnboundedReceiver<KeyedReply>,
        run: &mut Run<GetResponse>,
    ) {
        let mut waiting = slots.iter().filter(|s| !s.fsm.run.answered()).count();
        while waiting > 0 {
            let keyed = match timeout_at(run.deadline, rx.recv()).await {
                Ok(Some(keyed)) => keyed,
                Ok(None) => {
                    for slot in slots.iter_mut() {
                        let action = slot.fsm.run.step(GetEvent::RepliesEnded);
                        self.act_get(slot, action, run);
                    }
                    return;
                }
                Err(_) => {
                    for slot in slots.iter_mut().filter(|s| !s.fsm.run.answered()) {
                        run.place(slot.index, Err(KvError::Timeout));
                        slot.fsm.run.step(GetEvent::Abandoned);
                    }
                    return;
                }
            };
            let Some(slot) = slots.get_mut(keyed.key as usize) else {
                continue;
            };
            if slot.fsm.run.over() {
                continue;
            }
            let was_waiting = !slot.fsm.run.answered();
            let action = slot.fsm.record_remote(keyed.reply);
            self.act_get(slot, action, run);
            if was_waiting && slot.fsm.run.answered() {
                waiting -= 1;
            }
        }
    }

    /// Does what a key's run returned: answers the key (and steps on),
    /// or repairs its replicas.
    fn act_get(&self, slot: &mut Slot, mut action: GetAction, run: &mut Run<GetResponse>) {
        loop {
            action = match action {
                GetAction::Answer(answer) => {
                    run.answer(slot.index, answer);
                    slot.fsm.run.step(GetEvent::Answered)
                }
                GetAction::Repair => return slot.fsm.repair(self),
                GetAction::Wait | GetAction::Done => return,
            };
        }
    }
}

/// Collects the replies still due to answered keys (until the deadline),
/// then repairs each key, as a single get's late task does.
async fn finish_late(
    node: &Node,
    mut late: Vec<Option<GetFsm>>,
    mut rx: UnboundedReceiver<KeyedReply>,
    deadline: Instant,
) {
    let mut left = late.iter().flatten().count();
    while left > 0 {
        let keyed = match timeout_at(deadline, rx.recv()).await {
            Ok(Some(keyed)) => keyed,
            _ => break,
        };
        let Some(slot) = late.get_mut(keyed.key as usize) else {
            continue;
        };
        let Some(fsm) = slot else { continue };
        match fsm.record_remote(keyed.reply) {
            GetAction::Wait => continue,
            GetAction::Repair => fsm.repair(node),
            GetAction::Answer(_) | GetAction::Done => {}
        }
        *slot = None;
        left -= 1;
    }
    for mut fsm in late.into_iter().flatten() {
        if let GetAction::Repair = fsm.run.step(GetEvent::RepliesEnded) {
            fsm.repair(node);
        }
    }
}
