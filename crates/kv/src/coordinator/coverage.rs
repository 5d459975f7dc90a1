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

use crate::error::KvError;
use crate::node::Node;
use crate::vnode::msg::{FoldKind, FoldRequest, VnodeId, VnodeReply, VnodeRequest};
use crate::vnode::reply::{LocalHint, ReplyTo};

/// How long a coverage fold may take in all.
const FOLD_TIMEOUT: Duration = Duration::from_secs(600);
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
        let progress = self.send_folds(plan, &kind, ring_size, &tx);
        drop(tx);
        await_chunks(rx, progress, deadline, emit)
    }

    /// Folds `kind` over a coverage plan for `n_val` and returns every
    /// item: this node's vnodes fold on the calling thread while the
    /// others' answers come in. Blocking.
    pub(crate) fn coverage_collect(
        &self,
        n_val: u32,
        kind: FoldKind,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        let (ring_size, plan) = self.coverage_vnodes(n_val)?;
        let (local, remote): (Vec<_>, Vec<_>) = plan
            .into_iter()
            .partition(|v| v.node == self.config.node_name && self.vnode(v.partition).is_some());
        let (tx, rx) = unbounded_channel();
        let progress = self.send_folds(remote, &kind, ring_size, &tx);
        drop(tx);
        let mut items = self.collect_local(local, &kind, ring_size, deadline)?;
        await_chunks(rx, progress, deadline, |chunk| {
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
            let Some(handle) = self.vnode(v.partition) else {
                return Ok(Vec::new());
            };
            let req = FoldRequest {
                kind: kind.clone(),
                ring_size,
                ranges: v.filter,
            };
            let items = crate::vnode::fold::collect(&**handle.backend(), &req, runner.as_deref())?;
            match Instant::now() >= deadline {
                true => Err(KvError::Timeout),
                false => Ok(items),
            }
        };
        let threads = match kind {
            FoldKind::Map(_) => MAP_LOCAL_THREADS.min(vnodes.len()),
            _ => 1,
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
        let is_up = |n: &NodeName| n == me || self.liveness.get().is_none_or(|l| l.is_up(n));
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
        tx: &UnboundedSender<crate::vnode::reply::Reply>,
    ) -> HashMap<Partition, Progress> {
        let mut progress = HashMap::new();
        for v in vnodes {
            let req = VnodeRequest::Fold(FoldRequest {
                kind: kind.clone(),
                ring_size,
                ranges: v.filter,
            });
            progress.insert(v.partition, Progress::default());
            let to = VnodeId {
                partition: v.partition,
                node: v.node,
            };
            self.deliver(&to, req, ReplyTo::Local(tx.clone()), LocalHint::default());
        }
        progress
    }
}

/// Hands each chunk's items to `emit` until every vnode in `progress` sent
/// its last chunk or `emit` returns false; fails with the first vnode
/// error or at the deadline. Blocking.
fn await_chunks(
    mut rx: UnboundedReceiver<crate::vnode::reply::Reply>,
    mut progress: HashMap<Partition, Progress>,
    deadline: Instant,
    mut emit: impl FnMut(Vec<Vec<u8>>) -> bool,
) -> Result<(), KvError> {
    let runtime = tokio::runtime::Handle::current();
    while progress.values().any(|p| Some(p.received) != p.total) {
        let reply = match runtime.block_on(timeout_at(deadline, rx.recv())) {
            Ok(Some(reply)) => reply,
            Ok(None) => return Err(KvError::Timeout),
            Err(_) => return Err(KvError::Timeout),
        };
        let chunk = match reply.reply {
            VnodeReply::Fold(Ok(chunk)) => chunk,
            VnodeReply::Fold(Err(e)) => return Err(e),
            _ => continue,
        };
        let Some(p) = progress.get_mut(&reply.partition) else {
            continue;
        };
        p.received += 1;
        if chunk.last {
            p.total = Some(chunk.seq + 1);
        }
        if !chunk.items.is_empty() && !emit(chunk.items) {
            return Ok(());
        }
    }
    Ok(())
}

/// Riak's answer when some key range has no vnode up to answer for it.
fn uncovered(e: CoverageError) -> KvError {
    KvError::InsufficientVnodes(e.to_string())
}
