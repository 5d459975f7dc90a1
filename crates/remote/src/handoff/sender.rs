//! One outbound transfer (Riak's handoff sender): open it at the
//! receiver, which says how far an earlier run got; fold the rest of the
//! partition in key order, one batch in flight while the next is read; if
//! an earlier run of this node's process got that far, ask which keys
//! before the checkpoint the receiver lacks; re-send the keys written
//! meanwhile; finish. Any failure pauses (with backoff) and starts over
//! from the receiver's checkpoint.
//!
//! Then an ownership transfer is reported handed and keeps recording
//! writes until [`super::Handoffs::drop_handed_off`], sending them in a
//! round every [`HANDED_ROUND_EVERY`] meanwhile, so the new owner has them
//! when the ring names it; a hinted one, and an ownership one at that
//! call, is retired: the backend is sealed, the writes recorded until then
//! are sent, and the vnode is dropped. A round and the retirement never
//! run at once.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use eddy_net::Lane;
use eddy_ring::{NodeName, Partition};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::progress::{Tracked, TransferState};
use super::reader::{self, Prefetch, ReadBatch};
use super::watch::Watched;
use super::wire::{Kind, Position, Reply, Request, TransferKey};
use super::{Completed, Handoffs, finish};
use eddy_vnode::VnodeHandle;
use eddy_vnode::msg::StorageKey;

/// How often a handed ownership transfer sends the writes its vnode took
/// since the last round (Riak forwards them at once; here they follow
/// within a round, before the ring change reaches the nodes).
pub(crate) const HANDED_ROUND_EVERY: Duration = Duration::from_millis(50);

/// One outbound transfer.
pub(crate) struct Outgoing {
    pub partition: Partition,
    pub kind: Kind,
    pub to: NodeName,
    pub transfer: TransferKey,
    /// New for every transfer this process starts: the receiver's
    /// checkpoint of another session was made before this process
    /// recorded the writes.
    pub session: u64,
    pub vnode: VnodeHandle,
    pub watched: Arc<Watched>,
    pub status: Tracked,
    /// Whether the node's ring gave it the partition (now or next) when
    /// the transfer started: a hinted handoff of a vnode its node has
    /// come to own or receive since keeps the vnode.
    pub owned_at_start: bool,
    /// Keys up to here may have changed unrecorded since the receiver's
    /// checkpoint: their digests are owed.
    catch_up: Mutex<Option<Position>>,
    /// Held by a handed transfer's round and by the retirement.
    rounds: tokio::sync::Mutex<()>,
}

impl Outgoing {
    pub(crate) fn new(
        partition: Partition,
        kind: Kind,
        to: NodeName,
        sender_incarnation: u64,
        vnode: VnodeHandle,
        watched: Arc<Watched>,
        owned_at_start: bool,
    ) -> Outgoing {
        Outgoing {
            partition,
            kind,
            transfer: TransferKey {
                partition: partition.0,
                kind,
                sender_incarnation,
            },
            session: rand::random(),
            status: Tracked::new(partition, kind, to.clone()),
            to,
            vnode,
            watched,
            owned_at_start,
            catch_up: Mutex::new(None),
            rounds: tokio::sync::Mutex::new(()),
        }
    }
}

/// Where the stream to the receiver stands.
struct Stream {
    /// The last acknowledged batch.
    seq: u64,
    position: Position,
}

type Step = Result<(), String>;

/// Runs a transfer: waits for a slot, sends everything, then reports an
/// ownership transfer or retires a hinted one.
pub(crate) async fn run(h: Arc<Handoffs>, t: Arc<Outgoing>) {
    let slot = h.outbound.acquire().await;
    let figures = h.figures.of(t.kind);
    let running = figures.outbound_running.track();
    figures.started.increment();
    t.status.set_state(TransferState::Running);
    t.watched.track();
    let sent = retry(&h, &t, || send_and_finish(&h, &t, true));
    if sent.await.is_none() {
        return;
    }
    figures.completed.increment();
    match t.kind {
        Kind::Ownership => {
            t.status.set_state(TransferState::Handed);
            drop((slot, running));
            tracing::info!(partition = t.partition.0, to = %t.to, "ownership handoff done");
            if let (Some(report), Some(node)) = (h.on_complete.get(), h.node.upgrade()) {
                report(Completed {
                    partition: t.partition,
                    from: node.config().node_name.clone(),
                    to: t.to.clone(),
                });
            }
            tokio::spawn(follow_handed(h, t));
        }
        Kind::Hinted => {
            t.status.set_state(TransferState::Dropping);
            retire(h, t).await;
        }
    }
}

/// While `t` is handed, sends what its vnode takes, a round every
/// [`HANDED_ROUND_EVERY`]; a round that fails leaves its keys for the next
/// (or for the retirement). Ends when the transfer retires.
async fn follow_handed(h: Arc<Handoffs>, t: Arc<Outgoing>) {
    loop {
        tokio::time::sleep(HANDED_ROUND_EVERY).await;
        if h.stopping() || t.status.state() != TransferState::Handed {
            return;
        }
        if !t.watched.has_dirty() {
            continue;
        }
        let _round = t.rounds.lock().await;
        if t.status.state() != TransferState::Handed {
            return;
        }
        if let Err(e) = send_and_finish(&h, &t, false).await {
            tracing::debug!(partition = t.partition.0, to = %t.to, "handed round: {e}");
        }
    }
}

/// Seals the vnode, sends what was written until then, and drops it
/// (unless the partition moved here meanwhile: [`seal_and_drop`]).
pub(crate) async fn retire(h: Arc<Handoffs>, t: Arc<Outgoing>) {
    let Some(retired) = retry(&h, &t, || seal_and_drop(&h, &t)).await else {
        return;
    };
    t.watched.untrack();
    t.status.set_state(TransferState::Dropped);
    let (partition, to) = (t.partition.0, &t.to);
    match retired {
        Retired::Dropped => tracing::info!(partition, %to, "handed-off vnode dropped"),
        Retired::Kept => {
            tracing::info!(partition, %to, "fallback vnode kept: the partition moves here")
        }
    }
}

/// How a retirement ended.
enum Retired {
    Dropped,
    /// The vnode stays: the partition moved to this node meanwhile.
    Kept,
}

/// Runs `step` until it succeeds, pausing after each failure; `None` if
/// the node stopped first.
async fn retry<T, F, Fut>(h: &Handoffs, t: &Outgoing, mut step: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let mut pause = h.config.retry_min;
    loop {
        if h.stopping() {
            return None;
        }
        match step().await {
            Ok(done) => return Some(done),
            Err(e) => {
                tracing::info!(partition = t.partition.0, to = %t.to, "handoff paused: {e}");
                h.figures.of(t.kind).failed.increment();
                t.status.failed(e);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(h.config.retry_max);
            }
        }
    }
}

/// Sends everything the receiver may lack ([`send_all`]), then finishes.
async fn send_and_finish(h: &Handoffs, t: &Outgoing, wait_busy: bool) -> Step {
    let s = send_all(h, t, wait_busy).await?;
    finish_call(h, t, &s).await
}

/// Opens the transfer and sends everything the receiver may lack; with
/// `wait_busy`, asks a busy receiver again until it has a slot, else fails.
async fn send_all(h: &Handoffs, t: &Outgoing, wait_busy: bool) -> Result<Stream, String> {
    let mut s = start(h, t, wait_busy).await?;
    loop {
        if s.position != Position::Folded {
            fold(h, t, &mut s).await?;
        }
        let owed = t.catch_up.lock().clone();
        if let Some(upto) = owed {
            catch_up(h, t, &mut s, upto).await?;
            *t.catch_up.lock() = None;
        }
        if drain(h, t, &mut s).await? {
            return Ok(s);
        }
        // Too much was written to list: fold the whole partition again.
        s.position = Position::Start;
    }
}

/// Sends the transfer's Start and takes the receiver's checkpoint.
async fn start(h: &Handoffs, t: &Outgoing, wait_busy: bool) -> Result<Stream, String> {
    let request = Request::Start {
        transfer: t.transfer,
        session: t.session,
    };
    let resume = loop {
        match call(h, t, request.clone()).await? {
            Reply::Started { resume } => break resume,
            // A busy receiver is no failure: ask again soon, so that its
            // next free slot is not left idle for a backoff's length.
            Reply::Busy if wait_busy && !h.stopping() => {
                tokio::time::sleep(h.config.retry_min).await
            }
            other => return Err(unexpected(&other)),
        }
    };
    let Some(progress) = resume else {
        *t.catch_up.lock() = None;
        return Ok(Stream {
            seq: 0,
            position: Position::Start,
        });
    };
    if progress.position != Position::Start {
        h.figures.of(t.kind).resumed.increment();
    }
    if progress.session != t.session && progress.position != Position::Start {
        let mut owed = t.catch_up.lock();
        *owed = owed.take().max(Some(progress.position.clone()));
    }
    Ok(Stream {
        seq: progress.seq,
        position: progress.position,
    })
}

/// Sends the partition's objects after the stream's position.
async fn fold(h: &Handoffs, t: &Outgoing, s: &mut Stream) -> Step {
    let backend = t.vnode.backend().clone();
    let fold = reader::Fold::new(backend, s.position.clone(), h.config.clone());
    let mut batches = Prefetch::new(fold, h.inline);
    while let Some(batch) = batches.next().await? {
        send_batch(h, t, s, batch).await?;
    }
    Ok(())
}

/// Sends the digests of the keys up to `upto`, then the objects the
/// receiver wants.
async fn catch_up(h: &Handoffs, t: &Outgoing, s: &mut Stream, upto: Position) -> Step {
    let backend = t.vnode.backend().clone();
    let mut lists = Prefetch::new(
        reader::Digests::new(backend, upto, h.config.clone()),
        h.inline,
    );
    while let Some(digests) = lists.next().await? {
        let keys: Vec<StorageKey> = digests
            .iter()
            .map(|d| StorageKey {
                bucket: d.bucket.to_vec(),
                key: d.key.to_vec(),
            })
            .collect();
        let request = Request::Digests {
            transfer: t.transfer,
            session: t.session,
            digests,
        };
        let Reply::Wanted { indices } = call(h, t, request).await? else {
            return Err("the receiver did not answer the digests".into());
        };
        let wanted = indices
            .iter()
            .filter_map(|i| keys.get(*i as usize).cloned())
            .collect();
        send_keys(h, t, s, wanted).await?;
    }
    Ok(())
}

/// Sends the keys written since the last round, for a few rounds; false if
/// too many were written to list.
async fn drain(h: &Handoffs, t: &Outgoing, s: &mut Stream) -> Result<bool, String> {
    for _ in 0..h.config.drain_rounds_max {
        let written = t.watched.take_dirty();
        if written.overflowed {
            return Ok(false);
        }
        if written.keys.is_empty() {
            break;
        }
        if let Err(e) = send_keys(h, t, s, written.keys.clone()).await {
            t.watched.restore_dirty(written);
            return Err(e);
        }
    }
    Ok(true)
}

/// The last round: with the backend sealed, sends what was written, then
/// finishes and drops the vnode, or keeps a fallback's whose partition
/// moved here meanwhile.
async fn seal_and_drop(h: &Arc<Handoffs>, t: &Outgoing) -> Result<Retired, String> {
    let _round = t.rounds.lock().await;
    let mut s = send_all(h, t, true).await?;
    let watched = t.watched.clone();
    blocking(h, move || {
        watched.seal();
        Ok(())
    })
    .await?;
    let sealed = async {
        let written = t.watched.take_dirty();
        if written.overflowed {
            t.watched.restore_dirty(written);
            return Err("too many writes to list: folding again".to_string());
        }
        if let Err(e) = send_keys(h, t, &mut s, written.keys.clone()).await {
            t.watched.restore_dirty(written);
            return Err(e);
        }
        finish_call(h, t, &s).await?;
        let node = h.node.upgrade().ok_or("the node is shutting down")?;
        let (p, incarnation) = (t.partition, t.transfer.sender_incarnation);
        let came_here = !t.owned_at_start && node.owns_or_will_own(p);
        if t.kind == Kind::Hinted && (h.moving_here(p, incarnation) || came_here) {
            // The partition moved here while the fallback's data went
            // back: an ownership transfer into this very vnode runs or
            // just finished (which this node's ring, behind the sender's,
            // may not say yet), or the ring now gives this node the
            // partition. Its data stays.
            t.watched.unseal();
            return Ok(Retired::Kept);
        }
        let (hs, vnode, p) = (h.clone(), t.vnode.clone(), t.partition);
        blocking(h, move || finish::drop_vnode(&hs, &node, p, &vnode)).await?;
        Ok(Retired::Dropped)
    };
    let result = sealed.await;
    if result.is_err() {
        t.watched.unseal();
    }
    result
}

/// Sends the stored objects of `keys`.
async fn send_keys(h: &Handoffs, t: &Outgoing, s: &mut Stream, keys: Vec<StorageKey>) -> Step {
    if keys.is_empty() {
        return Ok(());
    }
    let backend = t.vnode.backend().clone();
    let objects = reader::Objects::new(backend, keys, s.position.clone(), h.config.clone());
    let mut batches = Prefetch::new(objects, h.inline);
    while let Some(batch) = batches.next().await? {
        send_batch(h, t, s, batch).await?;
    }
    Ok(())
}

async fn send_batch(h: &Handoffs, t: &Outgoing, s: &mut Stream, batch: ReadBatch) -> Step {
    let seq = s.seq + 1;
    let (objects, bytes) = (batch.items.len(), batch.bytes);
    let request = Request::Batch {
        transfer: t.transfer,
        session: t.session,
        seq,
        position: batch.position.clone(),
        items: batch.items,
    };
    t.status.sent();
    match call(h, t, request).await? {
        Reply::Acked { seq: acked } if acked == seq => {}
        other => return Err(unexpected(&other)),
    }
    s.seq = seq;
    s.position = batch.position;
    t.status.acked(objects, bytes);
    let figures = h.figures.of(t.kind);
    figures.objects_sent.add(objects as u64);
    figures.bytes_sent.add(bytes as u64);
    Ok(())
}

async fn finish_call(h: &Handoffs, t: &Outgoing, s: &Stream) -> Step {
    let request = Request::Finish {
        transfer: t.transfer,
        session: t.session,
        seq: s.seq,
    };
    match call(h, t, request).await? {
        Reply::Finished => Ok(()),
        other => Err(unexpected(&other)),
    }
}

/// One call to the receiver; a refusal is an error.
async fn call(h: &Handoffs, t: &Outgoing, request: Request) -> Result<Reply, String> {
    let deadline = Instant::now() + h.config.call_timeout;
    let body = h
        .transport
        .call(&t.to, Lane::Bulk, request.encode(), deadline)
        .await
        .map_err(|e| format!("calling {}: {e}", t.to))?;
    match Reply::decode(&body).map_err(|e| format!("{}'s reply: {e}", t.to))? {
        Reply::Refused(reason) => Err(format!("{} refused: {reason}", t.to)),
        reply => Ok(reply),
    }
}

fn unexpected(reply: &Reply) -> String {
    format!("unexpected reply {reply:?}")
}

/// Runs blocking work (syncs, destroys) off the runtime's threads, unless
/// the node runs it inline.
async fn blocking<F>(h: &Handoffs, work: F) -> Step
where
    F: FnOnce() -> Step + Send + 'static,
{
    if h.inline {
        return work();
    }
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("blocking task failed: {e}"))?
}
