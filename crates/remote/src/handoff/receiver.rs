//! The receiving side of a transfer (Riak's handoff receiver): starts the
//! partition's vnode, merges each batch's objects as a replica merges a
//! coordinator's object (never over a newer version: siblings or the
//! newer one stay), makes them durable, records the checkpoint, and only
//! then acknowledges. The merges write the backend without commit-log
//! records: [`Vnode::sync_handed`] syncs the backend and marks the log,
//! so each byte received is written once, not twice.
//!
//! Requests of one transfer are served one at a time (a batch resent after
//! a lost reply may meet the original); the disk work runs on blocking
//! threads. A transfer takes an inbound slot at its Start and gives it back
//! at its Finish, or when its sender has been silent for twice the call
//! timeout and another transfer needs the slot.

use std::collections::HashMap;
use std::sync::Arc;

use eddy_net::{Incoming, NodeName};
use eddy_object::codec;
use eddy_ring::Partition;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::Handoffs;
use super::checkpoint::Checkpoint;
use super::limit::{Slot, TransferLimit};
use super::wire::{Digest, Item, Kind, Position, Progress, Reply, Request, TransferKey};
use eddy_kv::node::Node;
use eddy_vnode::msg::StorageKey;
use eddy_vnode::{Vnode, VnodeHandle};

/// How long a vnode that an ownership transfer finished into counts as
/// the partition's next home, whatever this node's ring says: a ring
/// behind the sender's catches up by gossip within seconds; past this, a
/// vnode whose move the claimant did not complete is a fallback again.
pub const MOVED_HERE_HOLD: std::time::Duration = std::time::Duration::from_secs(60);

/// The inbound transfers being served.
#[derive(Default)]
pub(crate) struct Inbound {
    active: Mutex<HashMap<(u32, NodeName), Arc<Receiving>>>,
    /// When an ownership transfer last finished into each
    /// `(partition, receiving incarnation)`.
    moved_here: Mutex<HashMap<(u32, u64), Instant>>,
}

/// One inbound transfer, as shown to operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InboundStatus {
    pub partition: Partition,
    pub from: NodeName,
    /// Batches made durable since this node started receiving it.
    pub batches: u64,
    /// Objects merged from them.
    pub objects: u64,
    /// Time since the sender was last heard from.
    pub idle: std::time::Duration,
}

/// One inbound transfer.
struct Receiving {
    kind: Kind,
    /// `None` for a transfer let in without one (it had started before).
    _slot: Option<Slot>,
    /// Serves its requests one at a time.
    one_at_a_time: tokio::sync::Mutex<()>,
    last_seen: Mutex<Instant>,
    /// Batches and objects made durable.
    counts: Mutex<(u64, u64)>,
    /// Counts it among the inbound transfers running while it is served.
    _running: eddy_metrics::Tracked,
}

impl Inbound {
    /// The transfer of `p` from `from`. A new one needs a slot under
    /// `limit`, unless `admitted` (it started before a receiver restart).
    fn entry(
        &self,
        key: (u32, NodeName),
        kind: Kind,
        limit: &Arc<TransferLimit>,
        admitted: bool,
        stale_after: std::time::Duration,
        running: &eddy_metrics::Gauge,
    ) -> Option<Arc<Receiving>> {
        let mut active = self.active.lock();
        if let Some(e) = active.get(&key) {
            *e.last_seen.lock() = Instant::now();
            return Some(e.clone());
        }
        let mut slot = limit.try_acquire();
        if slot.is_none() {
            active.retain(|_, e| e.last_seen.lock().elapsed() < stale_after);
            slot = limit.try_acquire();
        }
        if slot.is_none() && !admitted {
            return None;
        }
        let e = Arc::new(Receiving {
            kind,
            _slot: slot,
            one_at_a_time: tokio::sync::Mutex::new(()),
            last_seen: Mutex::new(Instant::now()),
            counts: Mutex::default(),
            _running: running.track(),
        });
        active.insert(key, e.clone());
        Some(e)
    }

    fn end(&self, key: &(u32, NodeName)) {
        self.active.lock().remove(key);
    }

    /// What is being received now, by partition.
    pub(crate) fn statuses(&self) -> Vec<InboundStatus> {
        let active = self.active.lock();
        let mut out: Vec<InboundStatus> = active
            .iter()
            .map(|((p, from), e)| {
                let (batches, objects) = *e.counts.lock();
                InboundStatus {
                    partition: Partition(*p),
                    from: from.clone(),
                    batches,
                    objects,
                    idle: e.last_seen.lock().elapsed(),
                }
            })
            .collect();
        out.sort_by(|a, b| (a.partition, &a.from).cmp(&(b.partition, &b.from)));
        out
    }

    /// True while a transfer of partition `p` is being received.
    pub(crate) fn is_active(&self, p: u32) -> bool {
        self.active.lock().keys().any(|(q, _)| *q == p)
    }

    /// Records that an ownership transfer of `p` finished into the vnode
    /// incarnation `incarnation`.
    fn moved(&self, p: u32, incarnation: u64) {
        let mut moved = self.moved_here.lock();
        moved.retain(|_, at| at.elapsed() < MOVED_HERE_HOLD);
        moved.insert((p, incarnation), Instant::now());
    }

    /// True while an ownership transfer of `p` is being received (its
    /// sender was heard from within `stale_after`), or for
    /// [`MOVED_HERE_HOLD`] after one finished into the vnode incarnation
    /// `incarnation`: the sender's ring names this node the partition's
    /// next owner, and this node's ring may not say so yet. Reads the
    /// active transfers first: a finishing one is recorded as moved
    /// before it stops being active, so one of the reads sees it.
    pub(crate) fn moving_here(
        &self,
        p: u32,
        incarnation: u64,
        stale_after: std::time::Duration,
    ) -> bool {
        let active = self.active.lock().iter().any(|((q, _), e)| {
            *q == p && e.kind == Kind::Ownership && e.last_seen.lock().elapsed() < stale_after
        });
        active
            || self
                .moved_here
                .lock()
                .get(&(p, incarnation))
                .is_some_and(|at| at.elapsed() < MOVED_HERE_HOLD)
    }
}

/// Serves one bulk call in a task.
pub(crate) fn handle(h: Arc<Handoffs>, incoming: Incoming) {
    let Some(responder) = incoming.responder else {
        return;
    };
    let request = match Request::decode(&incoming.body) {
        Ok(request) => request,
        Err(e) => {
            let _ = responder.reply(Reply::Refused(e.to_string()).encode());
            return;
        }
    };
    let from = incoming.from;
    tokio::spawn(async move {
        let reply = serve(&h, from, request)
            .await
            .unwrap_or_else(Reply::Refused);
        let _ = responder.reply(reply.encode());
    });
}

async fn serve(h: &Arc<Handoffs>, from: NodeName, request: Request) -> Result<Reply, String> {
    let (transfer, is_start) = match &request {
        Request::Start { transfer, .. } => (*transfer, true),
        Request::Batch { transfer, .. }
        | Request::Digests { transfer, .. }
        | Request::Finish { transfer, .. } => (*transfer, false),
    };
    let key = (transfer.partition, from.clone());
    let stale_after = h.config.call_timeout * 2;
    // A round that follows a finished transfer (a handed vnode sending its
    // latest writes) is small and needs no slot of its own.
    let admitted = !is_start || follows_finished(h, &from, transfer);
    let figures = h.figures.of(transfer.kind);
    let Some(entry) = h.underway.inbound.entry(
        key.clone(),
        transfer.kind,
        &h.inbound,
        admitted,
        stale_after,
        &figures.inbound_running,
    ) else {
        h.figures.rejected.increment();
        return Ok(Reply::Busy);
    };
    let _one = entry.one_at_a_time.lock().await;
    let finishing = matches!(request, Request::Finish { .. });
    let objects = match &request {
        Request::Batch { items, .. } => items.len() as u64,
        _ => 0,
    };
    let hs = h.clone();
    let reply = match h.inline {
        true => apply(&hs, &from, request)?,
        false => tokio::task::spawn_blocking(move || apply(&hs, &from, request))
            .await
            .map_err(|e| format!("receiver task failed: {e}"))??,
    };
    if let Reply::Acked { .. } = reply {
        let mut counts = entry.counts.lock();
        counts.0 += 1;
        counts.1 += objects;
    }
    if finishing {
        h.underway.inbound.end(&key);
    }
    Ok(reply)
}

/// Whether this node holds the finished checkpoint of `transfer` from
/// `from`.
fn follows_finished(h: &Handoffs, from: &NodeName, transfer: TransferKey) -> bool {
    h.checkpoints
        .load(transfer.partition, from)
        .is_some_and(|c| c.finished && c.transfer == transfer)
}

/// Does what `request` asks (blocking).
fn apply(h: &Handoffs, from: &NodeName, request: Request) -> Result<Reply, String> {
    let node = h.node.upgrade().ok_or("the node is shutting down")?;
    match request {
        Request::Start { transfer, session } => start(h, &node, from, transfer, session),
        Request::Batch {
            transfer,
            session,
            seq,
            position,
            items,
        } => {
            let mut c = current(h, &node, from, transfer, session)?;
            if seq <= c.progress.seq {
                return Ok(Reply::Acked { seq });
            }
            if seq != c.progress.seq + 1 {
                let last = c.progress.seq;
                return Err(format!(
                    "batch {seq} out of order: {last} is the last durable"
                ));
            }
            let vnode = vnode_of(&node, transfer)?;
            merge(&node, &vnode, &items)?;
            vnode.sync_handed().map_err(|e| format!("syncing: {e}"))?;
            c.progress.seq = seq;
            c.progress.position = position;
            save(h, &c, false)?;
            let figures = h.figures.of(transfer.kind);
            figures.objects_received.add(items.len() as u64);
            let bytes: usize = items.iter().map(Item::wire_bytes).sum();
            figures.bytes_received.add(bytes as u64);
            Ok(Reply::Acked { seq })
        }
        Request::Digests {
            transfer,
            session,
            digests,
        } => {
            current(h, &node, from, transfer, session)?;
            let vnode = vnode_of(&node, transfer)?;
            Ok(Reply::Wanted {
                indices: wanted(&vnode, &digests),
            })
        }
        Request::Finish {
            transfer,
            session,
            seq,
        } => {
            let mut c = current(h, &node, from, transfer, session)?;
            if seq != c.progress.seq {
                let last = c.progress.seq;
                return Err(format!(
                    "finish after batch {seq}: {last} is the last durable"
                ));
            }
            let vnode = vnode_of(&node, transfer)?;
            vnode.sync_handed().map_err(|e| format!("syncing: {e}"))?;
            c.finished = true;
            save(h, &c, true)?;
            if transfer.kind == Kind::Ownership {
                let p = transfer.partition;
                h.underway.inbound.moved(p, c.receiver_incarnation);
            }
            Ok(Reply::Finished)
        }
    }
}

/// Opens a transfer: starts the vnode, answers with what was made durable
/// of this transfer before, and takes `session`'s batches from now on.
fn start(
    h: &Handoffs,
    node: &Node,
    from: &NodeName,
    transfer: TransferKey,
    session: u64,
) -> Result<Reply, String> {
    let p = Partition(transfer.partition);
    let incarnation = node
        .start_vnode(p)
        .map_err(|e| e.to_string())?
        .incarnation();
    let resume = h
        .checkpoints
        .load(p.0, from)
        .filter(|c| c.transfer == transfer && c.receiver_incarnation == incarnation)
        .map(|c| c.progress);
    let progress = match &resume {
        Some(r) => Progress {
            session,
            ..r.clone()
        },
        None => Progress {
            session,
            seq: 0,
            position: Position::Start,
        },
    };
    let c = Checkpoint {
        from: from.clone(),
        transfer,
        receiver_incarnation: incarnation,
        progress,
        finished: false,
    };
    save(h, &c, false)?;
    Ok(Reply::Started { resume })
}

/// The checkpoint of the transfer `session` runs, if it is the one open.
fn current(
    h: &Handoffs,
    node: &Node,
    from: &NodeName,
    transfer: TransferKey,
    session: u64,
) -> Result<Checkpoint, String> {
    let p = transfer.partition;
    let incarnation = vnode_of(node, transfer)?.incarnation();
    h.checkpoints
        .load(p, from)
        .filter(|c| {
            c.transfer == transfer
                && c.progress.session == session
                && c.receiver_incarnation == incarnation
        })
        .ok_or_else(|| "no such transfer session open: start again".to_string())
}

fn save(h: &Handoffs, c: &Checkpoint, sync: bool) -> Result<(), String> {
    h.checkpoints
        .save(c, sync)
        .map_err(|e| format!("saving the checkpoint: {e}"))
}

fn vnode_of(node: &Node, transfer: TransferKey) -> Result<VnodeHandle, String> {
    let p = transfer.partition;
    node.vnode(Partition(p))
        .ok_or_else(|| format!("partition {p} has no vnode here: start again"))
}

/// Merges each item into `vnode` as a replica would, durable only once
/// the caller's [`Vnode::sync_handed`] returns. An object that does not
/// decode is skipped with a warning: it could not be read anywhere.
fn merge(node: &Node, vnode: &Vnode, items: &[Item]) -> Result<(), String> {
    for item in items {
        // `None`: an object of a dropped bucket's earlier generation,
        // from a sender that has not heard of the drop (design note 018).
        let Some(policy) = node.write_policy_of(&item.bucket) else {
            continue;
        };
        let key = StorageKey {
            bucket: item.bucket.to_vec(),
            key: item.key.to_vec(),
        };
        match vnode.merge_handed(&key, item.encoded.clone(), policy) {
            Ok(()) => {}
            Err(eddy_model::KvError::Corrupt(e)) => {
                tracing::warn!(
                    partition = vnode.partition.0,
                    "handed-off object skipped: {e}"
                );
            }
            Err(e) => return Err(format!("merging: {e}")),
        }
    }
    Ok(())
}

/// The indices of the digests whose objects this vnode has not seen all of.
fn wanted(vnode: &Vnode, digests: &[Digest]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, d) in digests.iter().enumerate() {
        let key = StorageKey {
            bucket: d.bucket.to_vec(),
            key: d.key.to_vec(),
        };
        let seen = match (vnode.read(&key), codec::decode_vv(&d.vv)) {
            (Ok(Some(local)), Ok(vv)) => local.vv.descends(&vv),
            _ => false,
        };
        if !seen {
            out.push(i as u32);
        }
    }
    out
}
