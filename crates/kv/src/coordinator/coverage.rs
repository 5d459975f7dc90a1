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
        mut emit: impl FnMut(Vec<Vec<u8>>) -> bool,
    ) -> Result<(), KvError> {
        let deadline = Instant::now() + FOLD_TIMEOUT;
        let coverage = self.coverage(n_val)?;
        let asks = coverage.asks_all(&kind).into_iter().enumerate().collect();
        let (tx, rx) = unbounded_channel();
        let sent = self.send_folds(asks, coverage.ring_size, &tx);
        self.await_chunks(rx, &tx, sent, deadline, |_, items| emit(items))
    }

    /// Folds `kind` over a coverage plan for `n_val` and returns every
    /// item (see [`Node::with_coverage`]). Blocking.
    pub(crate) fn coverage_collect(
        &self,
        n_val: u32,
        kind: FoldKind,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        self.with_coverage(n_val, deadline, |coverage| {
            let asks = coverage.asks_all(&kind);
            let answers = self.coverage_round(coverage, asks, deadline)?;
            Ok(answers.into_iter().flatten().collect())
        })
    }

    /// Runs `fold` (one or more [`Node::coverage_round`]s) over a fresh
    /// coverage plan for `n_val`. A planned vnode that is not there (the
    /// plan came from a ring older or newer than its node's, during an
    /// ownership transfer) or is closing fails the attempt, and `fold`
    /// starts again under a fresh plan, from this node's ring as it is
    /// then, a little later: an answer is always every key range's whole
    /// answer, never one missing a range. Blocking.
    pub(crate) fn with_coverage<T>(
        &self,
        n_val: u32,
        deadline: Instant,
        mut fold: impl FnMut(&Coverage) -> Result<T, KvError>,
    ) -> Result<T, KvError> {
        let mut tries = 1;
        loop {
            match self.coverage(n_val).and_then(|c| fold(&c)) {
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

    /// Runs each ask's fold at its planned vnode and returns each ask's
    /// items, in the order asked: this node's vnodes fold on the calling
    /// thread while the others' answers come in. Blocking.
    pub(crate) fn coverage_round(
        &self,
        coverage: &Coverage,
        asks: Vec<Ask>,
        deadline: Instant,
    ) -> Result<Vec<Vec<Vec<u8>>>, KvError> {
        let index_reads = asks.iter().filter(|a| a.kind.is_index()).count();
        self.metrics
            .queries
            .vnode_index_reads
            .add(index_reads as u64);
        let mut answers = vec![Vec::new(); asks.len()];
        let (local, remote): (Vec<_>, Vec<_>) = asks.into_iter().enumerate().partition(|(_, a)| {
            a.vnode.node == self.config.node_name && self.vnode(a.vnode.partition).is_some()
        });
        let (tx, rx) = unbounded_channel();
        let sent = self.send_folds(remote, coverage.ring_size, &tx);
        for (i, items) in self.collect_local(local, coverage.ring_size, deadline)? {
            answers[i] = items;
        }
        self.await_chunks(rx, &tx, sent, deadline, |i, items| {
            answers[i].extend(items);
            true
        })?;
        Ok(answers)
    }

    /// Folds this node's `asks` on the calling thread or, for map folds
    /// (whose runner may wait on a JavaScript pool), on up to
    /// [`MAP_LOCAL_THREADS`] scoped threads, so the pool's threads are kept
    /// busy. Returns each ask's place and items. Blocking.
    fn collect_local(
        &self,
        asks: Vec<(usize, Ask)>,
        ring_size: u32,
        deadline: Instant,
    ) -> Result<Vec<Answer>, KvError> {
        let runner = self.map_runner();
        let fold_one = |(i, ask): (usize, Ask)| -> Result<Answer, KvError> {
            let v = ask.vnode;
            let Some(handle) = self.vnode(v.partition).filter(|_| self.owns(v.partition)) else {
                return Err(KvError::Signal(Signal::NotHosted(v.partition.0)));
            };
            let Some(_running) = handle.begin_fold() else {
                return Err(KvError::ShuttingDown);
            };
            let req = FoldRequest {
                kind: ask.kind,
                ring_size,
                ranges: v.filter,
            };
            let items = eddy_vnode::fold::collect(handle.stores(), &req, runner.as_deref())?;
            match Instant::now() >= deadline {
                true => Err(KvError::Timeout),
                false => Ok((i, items)),
            }
        };
        let threads = match asks.iter().any(|(_, a)| a.kind.is_map()) {
            true => MAP_LOCAL_THREADS.min(asks.len()),
            false => 1,
        };
        if threads <= 1 {
            return asks.into_iter().map(fold_one).collect();
        }
        let queue = parking_lot::Mutex::new(asks);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut answers = Vec::new();
                        loop {
                            // Popped in a statement of its own: the lock is
                            // not held while the vnode folds.
                            let next = queue.lock().pop();
                            let Some(ask) = next else { break };
                            match fold_one(ask) {
                                Ok(answer) => answers.push(answer),
                                Err(e) => {
                                    queue.lock().clear(); // the others stop too
                                    return Err(e);
                                }
                            }
                        }
                        Ok::<_, KvError>(answers)
                    })
                })
                .collect();
            let mut answers = Vec::new();
            for w in workers {
                let done = w
                    .join()
                    .map_err(|_| KvError::BadQuery("a map fold panicked".into()))?;
                answers.extend(done?);
            }
            Ok(answers)
        })
    }

    /// A coverage plan for `n_val` over the nodes that are up.
    fn coverage(&self, n_val: u32) -> Result<Coverage, KvError> {
        let ring = self.ring();
        let me = &self.config.node_name;
        let is_up = |n: &NodeName| n == me || self.liveness.as_ref().is_none_or(|l| l.is_up(n));
        let offset = rand::random::<u32>();
        let plan = eddy_ring::coverage_plan(&ring, n_val, is_up, offset).map_err(uncovered)?;
        Ok(Coverage {
            ring_size: ring.size(),
            n_val,
            vnodes: plan.vnodes,
        })
    }

    /// Sends each of `asks` (with its place) to its vnode; their chunks
    /// come to `tx`.
    fn send_folds(
        &self,
        asks: Vec<(usize, Ask)>,
        ring_size: u32,
        tx: &UnboundedSender<Reply>,
    ) -> HashMap<Partition, Planned> {
        let mut sent = HashMap::new();
        for (place, ask) in asks {
            let v = ask.vnode;
            let planned = Planned {
                place,
                node: v.node,
                req: FoldRequest {
                    kind: ask.kind,
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

    /// Hands each chunk's items, with its ask's place, to `emit` until
    /// every vnode in `sent` sent
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
        mut emit: impl FnMut(usize, Vec<Vec<u8>>) -> bool,
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
            if !chunk.items.is_empty() && !emit(planned.place, chunk.items) {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// A coverage plan, kept across the rounds of a fold pulled in chunks.
pub(crate) struct Coverage {
    ring_size: u32,
    n_val: u32,
    /// One vnode per key range, in the order the plan walked the ring.
    vnodes: Vec<CoverageVnode>,
}

impl Coverage {
    /// The plan's vnodes.
    pub(crate) fn vnodes(&self) -> &[CoverageVnode] {
        &self.vnodes
    }

    /// Each vnode's share of the key space: the key ranges it answers for
    /// (all `n_val` it holds, unless filtered) over the ring's.
    pub(crate) fn shares(&self) -> Vec<f64> {
        let ranges = |v: &CoverageVnode| v.filter.as_ref().map_or(self.n_val as usize, Vec::len);
        let all = (self.ring_size as f64).max(1.0);
        self.vnodes.iter().map(|v| ranges(v) as f64 / all).collect()
    }

    /// The same fold asked of every vnode.
    fn asks_all(&self, kind: &FoldKind) -> Vec<Ask> {
        let ask = |v: &CoverageVnode| Ask {
            vnode: v.clone(),
            kind: kind.clone(),
        };
        self.vnodes.iter().map(ask).collect()
    }
}

/// An ask's place in its round and the items its vnode sent.
type Answer = (usize, Vec<Vec<u8>>);

/// One fold of a coverage round: what to ask of which planned vnode.
pub(crate) struct Ask {
    pub vnode: CoverageVnode,
    pub kind: FoldKind,
}

/// A planned vnode's fold: where it went, what it asked, what came back.
struct Planned {
    /// The ask's place in its round.
    place: usize,
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
