//! Where requests from other nodes run: never on the transport's
//! connection reader, which must not block, while a vnode put may wait on
//! a key lock or the disk.
//!
//! [`WorkerPool`] (production) hands each request to a few std threads
//! through a bounded queue; a full queue refuses the request, which its
//! sender then hears as an overloaded node. [`Inline`] runs the request
//! on the caller, for deterministic simulation on one thread.

use std::fmt;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use parking_lot::Mutex;

use super::Inbound;
use eddy_net::NodeName;
use eddy_vnode::msg::{BatchItem, VnodeId, VnodeRequest};
use eddy_vnode::reply::ReplyTo;

/// A request (or a batch of them) from another node, ready to hand to
/// local vnodes.
pub struct Work {
    pub(super) job: Job,
    pub(super) inbound: Inbound,
}

/// What a [`Work`] delivers. (A `Work` travels boxed whole, so the size
/// of a single request's variant costs nothing; boxing the request too
/// would cost each single request an allocation.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(super) enum Job {
    /// One request to one vnode.
    One {
        to: VnodeId,
        req: VnodeRequest,
        reply: ReplyTo,
    },
    /// A batch's items, to vnodes of this node (`node`), in order.
    Batch {
        node: NodeName,
        items: Vec<(BatchItem, ReplyTo)>,
    },
}

impl Work {
    /// Delivers the request (or each of the batch's, in order) to its
    /// vnode. A panic is caught and logged (the request goes unanswered,
    /// and its coordinator times out), so a worker thread survives it.
    pub fn run(self) {
        let Work { job, inbound } = self;
        match job {
            Job::One { to, req, reply } => deliver(&inbound, to, req, reply),
            Job::Batch { node, items } => {
                for (item, reply) in items {
                    let to = VnodeId {
                        partition: item.partition,
                        node: node.clone(),
                    };
                    deliver(&inbound, to, item.request, reply);
                }
            }
        }
    }
}

fn deliver(inbound: &Inbound, to: VnodeId, req: VnodeRequest, reply: ReplyTo) {
    let partition = to.partition.0;
    let run = std::panic::AssertUnwindSafe(move || inbound(to, req, reply));
    if std::panic::catch_unwind(run).is_err() {
        tracing::error!(partition, "a request from another node panicked its vnode");
    }
}

impl fmt::Debug for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Work")
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

/// Runs requests from other nodes.
pub trait Executor: Send + Sync + fmt::Debug {
    /// Runs `work` now or later; hands it back when it cannot take more.
    fn try_execute(&self, work: Box<Work>) -> Result<(), Box<Work>>;
}

/// Runs each request on the caller's thread (simulation: one thread,
/// deterministic).
#[derive(Clone, Copy, Debug, Default)]
pub struct Inline;

impl Executor for Inline {
    fn try_execute(&self, work: Box<Work>) -> Result<(), Box<Work>> {
        work.run();
        Ok(())
    }
}

/// A few std threads behind a bounded queue. Threads end once the pool
/// is dropped and the queue is drained.
pub struct WorkerPool {
    queue: SyncSender<Box<Work>>,
    threads: usize,
    queue_len: usize,
}

impl WorkerPool {
    /// Starts `threads` workers (at least one) sharing a queue of
    /// `queue_len` requests.
    pub fn new(threads: usize, queue_len: usize) -> std::io::Result<WorkerPool> {
        let (queue, rx) = sync_channel(queue_len);
        let rx = Arc::new(Mutex::new(rx));
        let threads = threads.max(1);
        for i in 0..threads {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("eddy-vnode-in-{i}"))
                .spawn(move || work(&rx))?;
        }
        Ok(WorkerPool {
            queue,
            threads,
            queue_len,
        })
    }
}

fn work(rx: &Mutex<Receiver<Box<Work>>>) {
    loop {
        let next = rx.lock().recv();
        match next {
            Ok(work) => work.run(),
            Err(_) => return,
        }
    }
}

impl Executor for WorkerPool {
    fn try_execute(&self, work: Box<Work>) -> Result<(), Box<Work>> {
        self.queue.try_send(work).map_err(|e| match e {
            TrySendError::Full(w) | TrySendError::Disconnected(w) => w,
        })
    }
}

impl fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerPool")
            .field("threads", &self.threads)
            .field("queue_len", &self.queue_len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_ring::{NodeName, Partition};
    use eddy_vnode::msg::StorageKey;
    use std::sync::mpsc::channel;

    fn work(inbound: Inbound) -> Box<Work> {
        Box::new(Work {
            job: Job::One {
                to: VnodeId {
                    partition: Partition(1),
                    node: NodeName("a".into()),
                },
                req: VnodeRequest::Get {
                    key: StorageKey {
                        bucket: b"b".to_vec(),
                        key: b"k".to_vec(),
                    },
                },
                reply: ReplyTo::Nobody,
            },
            inbound,
        })
    }

    #[test]
    fn a_full_queue_hands_work_back_and_queued_work_runs() {
        let (gate_tx, gate_rx) = channel::<()>();
        let gate = Arc::new(Mutex::new(gate_rx));
        let (done_tx, done_rx) = channel::<u32>();
        let done = Arc::new(Mutex::new(done_tx));
        let inbound: Inbound = Arc::new(move |to, _, _| {
            let _ = gate.lock().recv();
            let _ = done.lock().send(to.partition.0);
        });
        let pool = WorkerPool::new(1, 2).unwrap();
        // One running (blocked on the gate) and two queued fill the pool;
        // the worker may not have taken the first yet, so allow one more.
        let mut accepted = 0;
        while pool.try_execute(work(inbound.clone())).is_ok() {
            accepted += 1;
            assert!(
                accepted <= 3,
                "a pool of one thread and two slots took {accepted}"
            );
        }
        assert!(accepted >= 2);
        for _ in 0..accepted {
            gate_tx.send(()).unwrap();
        }
        for _ in 0..accepted {
            assert_eq!(done_rx.recv().unwrap(), 1);
        }
        assert!(pool.try_execute(work(inbound)).is_ok());
        gate_tx.send(()).unwrap();
        assert_eq!(done_rx.recv().unwrap(), 1);
    }

    #[test]
    fn a_panicking_request_does_not_kill_its_worker() {
        let (done_tx, done_rx) = channel::<()>();
        let done = Arc::new(Mutex::new(done_tx));
        let panics: Inbound = Arc::new(|_, _, _| panic!("vnode bug"));
        let counts: Inbound = Arc::new(move |_, _, _| {
            let _ = done.lock().send(());
        });
        let pool = WorkerPool::new(1, 4).unwrap();
        pool.try_execute(work(panics)).unwrap();
        pool.try_execute(work(counts)).unwrap();
        done_rx.recv().unwrap();
    }
}
