//! Coverage folds (Riak's coverage FSM): one vnode per key range, chosen by
//! the ring's coverage plan over the nodes that are up, each folding what
//! it holds for its ranges and streaming numbered chunks back; the caller
//! gets every chunk once, as it comes.
//!
//! Runs on a blocking thread (list keys, list buckets and 2i queries do):
//! it waits on the replies with the runtime's handle. [`Node::coverage_collect`]
//! folds this node's planned vnodes on that thread too, without a fold
//! thread per vnode (2i queries, which must answer in milliseconds).
//!
//! Invariants: each key range is answered by exactly one vnode; the fold
//! ends once every planned vnode sent its last chunk, or fails with the
//! first vnode error, a range no up node covers, or the deadline.

use std::collections::HashMap;
use std::time::Duration;

use eddy_ring::{CoverageError, CoverageVnode, NodeName, Partition};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::{Instant, timeout_at};

use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::error::Signal;
use eddy_vnode::msg::{FoldKind, FoldRequest, VnodeId, VnodeReply, VnodeRequest};
use eddy_vnode::reply::{LocalHint, Reply, ReplyTo};

/// How long a coverage fold may take in all.
const FOLD_TIMEOUT: Duration = Duration::from_secs(600);
/// Attempts of a vnode's fold (or of a collected fold whose local part
/// found a planned vnode missing) refused because its node does not run
/// it, and the pause before each new attempt (long enough for a ring
/// change to reach this node by gossip).
const COVERAGE_TRIES: u32 = 20;
const COVERAGE_PAUSE: Duration = Duration::from_millis(100);
/// Threads folding this node's vnodes at once for a map fold.
const MAP_LOCAL_THREADS: usize = 4;

/// Chunks a vnode sent so far, and how many it sends in all once known.
#[derive(Default)]
struct Progress {
    received: u32,
    total: Option<u32>,
}

impl Node {
    /// Folds `kind` over a coverage plan for `n_val`, handing each chunk's
    /// items to `emit` until it returns false. Blocking.
    pub(crate) fn coverage_fold(
        &self,
        n_val: u32,
        kind: FoldKind,
        emit: impl FnMut(Vec<Vec<u8>>) -> bool,
    ) -> Result<(), KvError> {
        let deadline = Instant::now() + FOLD_TIMEOUT;
        let (ring_size, plan) = self.coverage_vnodes(n_val)?;
        let (tx, rx) = unbounded_channel();
        let sent = self.send_folds(plan, &kind, ring_size, &tx);
        self.await_chunks(rx, &tx, sent, deadline, emit)
    }

    /// Folds `kind` over a coverage plan for `n_val` and returns every
    /// item: this node's vnodes fold on the calling thread while the
    /// others' answers come in. A planned vnode that is not there (the
    /// plan came from a ring older or newer than its node's, during an
    /// ownership transfer) or is closing fails the attempt, and the fold
    /// starts again under a fresh plan, from this node's ring as it is
    /// then, a little later: an answer is always every key range's whole
    /// answer, never one missing a range. Blocking.
    pub(crate) fn coverage_collect(
        &self,
        n_val: u32,
        kind: FoldKind,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        let mut tries = 1;
        loop {
            match self.coverage_collect_once(n_val, &kind, deadline) {
                Err(e) if moved(&e) && tries < COVERAGE_TRIES => {
                    tracing::debug!(tries, "coverage fold starts again: {e}");
                    tries += 1;
                    let pause = Instant::now() + COVERAGE_PAUSE;
                    if pause >= deadline {
                        return Err(e);
                    }
                    std::thread::sleep(COVERAGE_PAUSE);
                }
                outcome => return outcome,
            }
        }
    }

    fn coverage_collect_once(
        &self,
        n_val: u32,
        kind: &FoldKind,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        let (ring_size, plan) = self.coverage_vnodes(n_val)?;
        if matches!(kind, FoldKind::Index(_) | FoldKind::IndexMap(_)) {
            self.metrics
                .queries
                .vnode_index_reads
                .add(plan.len() as u64);
        }
        let (local, remote): (Vec<_>, Vec<_>) = plan
            .into_iter()
            .partition(|v| v.node == self.config.node_name && self.vnode(v.partition).is_some());
        let (tx, rx) = unbounded_channel();
        let sent = self.send_folds(remote, kind, ring_size, &tx);
        let mut items = self.collect_local(local, kind, ring_size, deadline)?;
        self.await_chunks(rx, &tx, sent, deadline, |chunk| {
            items.extend(chunk);
            true
        })?;
        Ok(items)
    }

    /// Folds this node's planned `vnodes` on the calling thread or, for a
    /// map fold (whose runner may wait on a JavaScript pool), on up to
    /// [`MAP_LOCAL_THREADS`] scoped threads, so the pool's threads are kept
    /// busy. Blocking.
    fn collect_local(
        &self,
        vnodes: Vec<CoverageVnode>,
        kind: &FoldKind,
        ring_size: u32,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        let runner = self.map_runner();
        let fold_one = |v: CoverageVnode| -> Result<Vec<Vec<u8>>, KvError> {
            let Some(handle) = self.vnode(v.partition).filter(|_| self.owns(v.partition)) else {
                return Err(KvError::Signal(Signal::NotHosted(v.partition.0)));
            };
            let Some(_running) = handle.begin_fold() else {
                return Err(KvError::ShuttingDown);
            };
            let req = FoldRequest {
                kind: kind.clone(),
                ring_size,
                ranges: v.filter,
            };
            let items = eddy_vnode::fold::collect(handle.stores(), &req, runner.as_deref())?;
            match Instant::now() >= deadline {
                true => Err(KvError::Timeout),
                false => Ok(items),
            }
        };
        let threads = match kind.is_map() {
            true => MAP_LOCAL_THREADS.min(vnodes.len()),
            false => 1,
        };
        if threads <= 1 {
            let mut items = Vec::new();
            for v in vnodes {
                items.extend(fold_one(v)?);
            }
            return Ok(items);
        }
        let queue = parking_lot::Mutex::new(vnodes);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut items = Vec::new();
                        loop {
                            // Popped in a statement of its own: the lock is
                            // not held while the vnode folds.
                            let next = queue.lock().pop();
                            let Some(v) = next else { break };
                            match fold_one(v) {
                                Ok(got) => items.extend(got),
                                Err(e) => {
                                    queue.lock().clear(); // the others stop too
                                    return Err(e);
                                }
                            }
                        }
                        Ok::<_, KvError>(items)
                    })
                })
                .collect();
            let mut items = Vec::new();
            for w in workers {
                let done = w
                    .join()
                    .map_err(|_| KvError::BadQuery("a map fold panicked".into()))?;
                items.extend(done?);
            }
            Ok(items)
        })
    }

    /// The ring's size and the vnodes of a coverage plan for `n_val` over
    /// the nodes that are up.
    fn coverage_vnodes(&self, n_val: u32) -> Result<(u32, Vec<CoverageVnode>), KvError> {
        let ring = self.ring();
        let me = &self.config.node_name;
        let is_up = |n: &NodeName| n == me || self.liveness.as_ref().is_none_or(|l| l.is_up(n));
        let offset = rand::random::<u32>();
        let plan = eddy_ring::coverage_plan(&ring, n_val, is_up, offset).map_err(uncovered)?;
        Ok((ring.size(), plan.vnodes))
    }

    /// Sends a fold of `kind` to each of `vnodes`; their chunks come to
    /// `tx`.
    fn send_folds(
        &self,
        vnodes: Vec<CoverageVnode>,
        kind: &FoldKind,
        ring_size: u32,
        tx: &UnboundedSender<Reply>,
    ) -> HashMap<Partition, Planned> {
        let mut sent = HashMap::new();
        for v in vnodes {
            let planned = Planned {
                node: v.node,
                req: FoldRequest {
                    kind: kind.clone(),
                    ring_size,
                    ranges: v.filter,
                },
                progress: Progress::default(),
                resent: 0,
            };
            self.send_fold(v.partition, &planned, tx);
            sent.insert(v.partition, planned);
        }
        sent
    }

    fn send_fold(&self, partition: Partition, planned: &Planned, tx: &UnboundedSender<Reply>) {
        let to = VnodeId {
            partition,
            node: planned.node.clone(),
        };
        let req = VnodeRequest::Fold(planned.req.clone());
        self.deliver(&to, req, ReplyTo::Local(tx.clone()), LocalHint::default());
    }

    /// Hands each chunk's items to `emit` until every vnode in `sent` sent
    /// its last chunk or `emit` returns false; fails with the first vnode
    /// error or at the deadline. A vnode that refuses the fold before any
    /// chunk because its node does not run it (the plan came from a ring
    /// older or newer than that node's, during an ownership transfer) is
    /// asked again where this node's ring then places it, a little later,
    /// a few times: its range is never answered with nothing. Blocking.
    fn await_chunks(
        &self,
        mut rx: UnboundedReceiver<Reply>,
        tx: &UnboundedSender<Reply>,
        mut sent: HashMap<Partition, Planned>,
        deadline: Instant,
        mut emit: impl FnMut(Vec<Vec<u8>>) -> bool,
    ) -> Result<(), KvError> {
        let runtime = tokio::runtime::Handle::current();
        while sent.values().any(|p| !p.progress.done()) {
            let reply = match runtime.block_on(timeout_at(deadline, rx.recv())) {
                Ok(Some(reply)) => reply,
                Ok(None) | Err(_) => return Err(KvError::Timeout),
            };
            let Some(planned) = sent.get_mut(&reply.partition) else {
                continue;
            };
            let chunk = match reply.reply {
                VnodeReply::Fold(Ok(chunk)) => chunk,
                VnodeReply::Fold(Err(e)) if moved(&e) && planned.may_resend() => {
                    tracing::debug!(partition = reply.partition.0, "fold asked again: {e}");
                    std::thread::sleep(COVERAGE_PAUSE);
                    planned.resent += 1;
                    planned.node = self.ring().owner(reply.partition).clone();
                    self.send_fold(reply.partition, planned, tx);
                    continue;
                }
                VnodeReply::Fold(Err(e)) => return Err(e),
                _ => continue,
            };
            planned.progress.received += 1;
            if chunk.last {
                planned.progress.total = Some(chunk.seq + 1);
            }
            if !chunk.items.is_empty() && !emit(chunk.items) {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// A planned vnode's fold: where it went, what it asked, what came back.
struct Planned {
    node: NodeName,
    req: FoldRequest,
    progress: Progress,
    /// Times it was asked again after a refusal.
    resent: u32,
}

impl Planned {
    /// Whether a refusal may be answered by asking again: nothing came
    /// back yet, and not too often.
    fn may_resend(&self) -> bool {
        self.progress.received == 0 && self.resent + 1 < COVERAGE_TRIES
    }
}

impl Progress {
    fn done(&self) -> bool {
        Some(self.received) == self.total
    }
}

/// True for a vnode's error that says it is not where the plan thought:
/// not (or no longer) run by its node, or closing.
fn moved(e: &KvError) -> bool {
    matches!(
        e,
        KvError::Signal(Signal::NotHosted(_)) | KvError::ShuttingDown
    )
}

/// Riak's answer when some key range has no vnode up to answer for it.
fn uncovered(e: CoverageError) -> KvError {
    KvError::InsufficientVnodes(e.to_string())
}
