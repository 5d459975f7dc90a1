//! Tombstone reaping (`delete_mode`): a bounded queue that one task drains.
//!
//! A delete that succeeded queues its tombstone; after the delay the
//! drainer reads every replica of the key and removes the tombstone only
//! if every one of them is a primary holding exactly that tombstone, and
//! no handoff of their partitions is pending here or planned by the ring,
//! so a replica that missed the delete cannot bring the key back later
//! (a fallback elsewhere that took an older write while a primary was
//! down still can, until its hinted handoff is done: Riak's
//! `delete_mode = keep` avoids that). A queue
//! that is full drops the job (the tombstone stays, as with
//! `delete_mode = keep`) and counts it.
//!
//! Invariants: at most [`REAP_QUEUE_MAX`] jobs wait; jobs are reaped in
//! the order their deletes finished (one delay for all, so due times never
//! go backwards); the drainer holds no strong reference to the node.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use eddy_object::{VersionVector, codec};
use tokio::sync::mpsc::{Receiver, Sender, channel, unbounded_channel};
use tokio::time::{Instant, sleep_until, timeout_at};

use super::PreflistEntry;
use crate::node::{DeleteMode, Node};
use eddy_vnode::msg::{StorageKey, VnodeReply, VnodeRequest};
use eddy_vnode::reply::{LocalHint, ReplyTo};

/// Most reap jobs waiting at once.
pub const REAP_QUEUE_MAX: usize = 65_536;
/// How long the drainer waits for the replicas' answers before it leaves
/// the tombstone in place.
const REAP_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The node's reap queue.
#[derive(Debug, Default)]
pub(crate) struct Reaper {
    queue: OnceLock<Sender<ReapJob>>,
    /// Jobs dropped because the queue was full.
    pub(crate) dropped: eddy_metrics::Counter,
    /// Tombstones reaped (on every replica).
    pub(crate) reaped: eddy_metrics::Counter,
    /// Tombstones left because some replica did not hold exactly them.
    pub(crate) kept: eddy_metrics::Counter,
    /// Jobs put back because a handoff of their partition was pending.
    pub(crate) deferred: eddy_metrics::Counter,
}

/// One tombstone to reap once `due`.
#[derive(Debug)]
struct ReapJob {
    due: Instant,
    key: StorageKey,
    tombstone: VersionVector,
    preflist: Arc<[PreflistEntry]>,
}

impl Node {
    /// Queues the reaping of `tombstone` at `key`'s replicas, as
    /// `delete_mode` says. Call from within the runtime.
    pub(crate) fn schedule_reap(
        self: &Arc<Self>,
        key: StorageKey,
        tombstone: VersionVector,
        preflist: Arc<[PreflistEntry]>,
    ) {
        let delay_ms = match self.config.delete_mode {
            DeleteMode::Keep => return,
            DeleteMode::Immediate => 0,
            DeleteMode::DelayMs(ms) => ms,
        };
        let queue = self.reaper.queue.get_or_init(|| {
            let (tx, rx) = channel(REAP_QUEUE_MAX);
            tokio::spawn(drain(Arc::downgrade(self), rx));
            tx
        });
        let job = ReapJob {
            due: Instant::now() + Duration::from_millis(delay_ms),
            key,
            tombstone,
            preflist,
        };
        if queue.try_send(job).is_err() {
            self.reaper.dropped.increment();
            tracing::debug!("reap queue full: a tombstone is kept");
        }
    }

    /// Reaps the job's tombstone if every replica is a primary holding it;
    /// while one of its partitions is being handed off the job waits for
    /// another delay (a handoff could bring back what it reaps).
    async fn reap(self: &Arc<Self>, job: ReapJob) {
        if job
            .preflist
            .iter()
            .any(|e| self.handoff_pending(e.id.partition))
        {
            self.reaper.deferred.increment();
            return self.schedule_reap(job.key, job.tombstone, job.preflist);
        }
        if !self.every_replica_holds(&job).await {
            self.reaper.kept.increment();
            return;
        }
        for entry in job.preflist.iter() {
            let req = VnodeRequest::Reap {
                key: job.key.clone(),
                tombstone: job.tombstone.clone(),
            };
            self.deliver(&entry.id, req, ReplyTo::Nobody, LocalHint::default());
        }
        self.reaper.reaped.increment();
    }

    async fn every_replica_holds(&self, job: &ReapJob) -> bool {
        if job.preflist.iter().any(|e| !e.primary) {
            return false;
        }
        let (tx, mut rx) = unbounded_channel();
        for entry in job.preflist.iter() {
            let req = VnodeRequest::Get {
                key: job.key.clone(),
            };
            self.deliver(
                &entry.id,
                req,
                ReplyTo::Local(tx.clone()),
                LocalHint::default(),
            );
        }
        drop(tx);
        let deadline = Instant::now() + REAP_READ_TIMEOUT;
        let mut holding = 0;
        while let Ok(Some(reply)) = timeout_at(deadline, rx.recv()).await {
            match reply.reply {
                VnodeReply::Get(Ok(Some(bytes))) if is_tombstone(&bytes, &job.tombstone) => {
                    holding += 1
                }
                _ => return false,
            }
        }
        holding == job.preflist.len()
    }
}

/// True if `bytes` decode to a tombstone with exactly this version.
fn is_tombstone(bytes: &Bytes, tombstone: &VersionVector) -> bool {
    codec::decode(bytes).is_ok_and(|o| o.is_deleted() && o.vv == *tombstone)
}

/// Reaps each job when it is due, until the node is gone.
async fn drain(node: Weak<Node>, mut jobs: Receiver<ReapJob>) {
    while let Some(job) = jobs.recv().await {
        sleep_until(job.due).await;
        let Some(node) = node.upgrade() else {
            return;
        };
        node.reap(job).await;
    }
}
