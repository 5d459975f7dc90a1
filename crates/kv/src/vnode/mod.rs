//! A vnode: the owner of one partition's backend (Riak's vnode process).
//!
//! Each vnode runs on its own thread and takes requests from a bounded
//! queue, so operations on a partition are serialised: conditional puts are
//! atomic per key, and a coordinated update's read-modify-write cannot
//! interleave with another. The thread drains its queue in batches; writes
//! that asked to be durable are answered only after one shared sync of the
//! backend at the end of the batch (group commit per partition).
//!
//! Files: [`msg`] (requests and replies), [`apply`] (what a put, get or
//! reap does to the stored object), this file (the thread and its handle).

pub mod apply;
pub mod msg;

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

use eddy_object::Actor;
use eddy_ring::Partition;
use eddy_storage::Backend;

use crate::error::KvError;
use msg::{PutReplyMsg, VnodeRequest};

/// Most requests queued at one vnode before callers get `Overload`.
pub const QUEUE_LEN_MAX: usize = 4096;
/// Most requests handled between two syncs.
const BATCH_LEN_MAX: usize = 256;

/// A cheap, cloneable way to send requests to a vnode.
#[derive(Clone)]
pub struct VnodeHandle {
    pub partition: Partition,
    tx: SyncSender<VnodeRequest>,
    backend: Arc<dyn Backend>,
}

impl VnodeHandle {
    /// Queues a request; fails at once if the queue is full or closed.
    pub fn send(&self, req: VnodeRequest) -> Result<(), KvError> {
        self.tx.try_send(req).map_err(|e| match e {
            TrySendError::Full(_) => KvError::Overload,
            TrySendError::Disconnected(_) => KvError::ShuttingDown,
        })
    }

    /// Reads `key` from this vnode's backend on the caller's thread. Reads
    /// need no serialisation with writes (each backend get is atomic), so a
    /// local vnode is read without a trip through its queue.
    pub fn read(&self, key: &msg::StorageKey) -> Result<Option<eddy_object::RiakObject>, KvError> {
        apply::read_object(&*self.backend, key)
    }

    /// The partition's backend, for folds that run off the vnode thread
    /// (key listing), which backends allow concurrently with writes.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }
}

/// The running vnode thread.
pub struct Vnode {
    handle: VnodeHandle,
    thread: Option<JoinHandle<()>>,
}

impl Vnode {
    /// Starts the vnode thread for `partition` over `backend`, coordinating
    /// writes as `actor`.
    pub fn start(partition: Partition, actor: Actor, backend: Arc<dyn Backend>) -> Vnode {
        let (tx, rx) = sync_channel(QUEUE_LEN_MAX);
        let state = apply::VnodeState::new(partition, actor, backend.clone());
        let thread = std::thread::Builder::new()
            .name(format!("vnode-{}", partition.0))
            .spawn(move || run(state, rx))
            .expect("spawn vnode thread");
        Vnode {
            handle: VnodeHandle {
                partition,
                tx,
                backend,
            },
            thread: Some(thread),
        }
    }

    /// A handle for sending requests.
    pub fn handle(&self) -> VnodeHandle {
        self.handle.clone()
    }

    /// Stops taking requests, finishes queued ones, and closes the backend.
    pub fn stop(mut self) {
        let Vnode { handle, thread } = &mut self;
        let _ = handle.tx.send(VnodeRequest::Stop);
        if let Some(t) = thread.take() {
            let _ = t.join();
        }
        if let Err(e) = handle.backend.close() {
            tracing::error!(partition = handle.partition.0, "closing backend: {e}");
        }
    }
}

/// The vnode loop: take a batch, handle it, sync once if needed, answer.
fn run(mut state: apply::VnodeState, rx: Receiver<VnodeRequest>) {
    let mut waiting: Vec<PutReplyMsg> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut stop = false;
        for req in std::iter::once(first).chain(rx.try_iter().take(BATCH_LEN_MAX)) {
            match req {
                VnodeRequest::Stop => stop = true,
                req => state.handle(req, &mut waiting),
            }
        }
        if !waiting.is_empty() {
            let synced = state.sync();
            for reply in waiting.drain(..) {
                reply.send_after_sync(&synced);
            }
        }
        if stop {
            return;
        }
    }
}
