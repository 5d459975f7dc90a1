//! Failure detection on the wire: every `probe_interval` each member is
//! pinged; one that misses its ack is probed indirectly through up to
//! `indirect_probes` other members (SWIM's ping-req), so one bad link does
//! not make a live node down. A member is down when no probe reached it
//! for `down_after`, or at once when its connection is refused or lost
//! (a killed process) and no indirect probe reaches it either; the
//! transport's peer events mark a lost connection down without waiting
//! for the next probe. Liveness never changes the ring.

use std::sync::Arc;

use eddy_net::{Lane, PeerState};
use eddy_ring::NodeName;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use super::core::Inner;
use super::wire::{Message, Reply};

/// Probes every member each `probe_interval`, and marks down those not
/// heard from for `down_after`.
pub(crate) async fn probe_loop(inner: Arc<Inner>) {
    let mut ticker = tokio::time::interval(inner.config.probe_interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let down = inner.detector.lock().tick(Instant::now());
        for peer in &down {
            tracing::info!(node = %inner.me, %peer, "member down: not heard from");
        }
        if !down.is_empty() {
            inner.liveness_changed();
        }
        let peers = inner.detector.lock().peers();
        for peer in peers {
            if !inner.probing.lock().insert(peer.clone()) {
                continue;
            }
            let inner = inner.clone();
            tokio::spawn(async move {
                probe(&inner, &peer).await;
                inner.probing.lock().remove(&peer);
            });
        }
    }
}

/// One probe of `peer`: direct, then indirect if that failed.
async fn probe(inner: &Arc<Inner>, peer: &NodeName) {
    let epoch = inner.current().epoch();
    let deadline = Instant::now() + inner.config.probe_timeout;
    let failure = match inner.call(peer, &Message::Ping { epoch }, deadline).await {
        Ok(Reply::Ack { epoch }) => return heard(inner, peer, epoch),
        Ok(_) => None,
        Err(e) => Some(e),
    };
    if let Some(epoch) = probe_indirectly(inner, peer).await {
        return heard(inner, peer, epoch);
    }
    if failure.is_some_and(|e| e.is_connection_failure()) && inner.detector.lock().failed(peer) {
        tracing::info!(node = %inner.me, %peer, "member down: connection failed");
        inner.liveness_changed();
    }
}

/// Asks up to `indirect_probes` other up members to ping `peer`; the
/// epoch of the first ack that comes back.
async fn probe_indirectly(inner: &Arc<Inner>, peer: &NodeName) -> Option<u64> {
    let helpers = helpers(inner, peer);
    let deadline = Instant::now() + inner.config.probe_timeout;
    let mut asks = JoinSet::new();
    for helper in helpers {
        let inner = inner.clone();
        let target = peer.clone();
        asks.spawn(async move {
            let ask = Message::PingReq { target };
            inner.call(&helper, &ask, deadline).await
        });
    }
    while let Some(answer) = asks.join_next().await {
        if let Ok(Ok(Reply::Ack { epoch })) = answer {
            return Some(epoch);
        }
    }
    None
}

/// The members, up and other than this node and `peer`, to probe through.
fn helpers(inner: &Inner, peer: &NodeName) -> Vec<NodeName> {
    use rand::seq::IndexedRandom;
    let detector = inner.detector.lock();
    let candidates: Vec<NodeName> = detector
        .peers()
        .into_iter()
        .filter(|n| n != peer && detector.is_up(n))
        .collect();
    drop(detector);
    let mut rng = inner.rng.lock();
    let chosen = candidates.choose_multiple(&mut *rng, inner.config.indirect_probes);
    chosen.cloned().collect()
}

fn heard(inner: &Inner, peer: &NodeName, epoch: u64) {
    if inner.detector.lock().heard(peer, epoch, Instant::now()) {
        tracing::info!(node = %inner.me, %peer, "member up");
        inner.liveness_changed();
    }
}

/// For a ping-req from another member: pings `target` and relays its
/// ack, or gives no answer if it does not ack in time.
pub(crate) async fn relay_ping(inner: &Inner, target: &NodeName) -> Option<Reply> {
    let epoch = inner.current().epoch();
    let deadline = Instant::now() + inner.config.probe_timeout;
    match inner.call(target, &Message::Ping { epoch }, deadline).await {
        Ok(Reply::Ack { epoch }) => {
            heard(inner, target, epoch);
            Some(Reply::Ack { epoch })
        }
        _ => None,
    }
}

/// A probe from `peer` is a sign of life too.
pub(crate) fn pinged_by(inner: &Inner, peer: &NodeName, epoch: u64) {
    heard(inner, peer, epoch);
}

/// Marks a peer down at once when the transport reports its control
/// connection refused or lost, unless a probe reaches it.
pub(crate) async fn watch_peers(inner: Arc<Inner>) {
    let mut events = inner.transport.peer_events();
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        if event.lane != Lane::Control {
            continue;
        }
        let lost = matches!(
            event.state,
            PeerState::Lost(_) | PeerState::Unreachable(_) | PeerState::Refused(_)
        );
        if lost && inner.detector.lock().failed(&event.peer) {
            tracing::info!(node = %inner.me, peer = %event.peer, state = ?event.state,
                "member down: connection lost");
            inner.liveness_changed();
        }
    }
}
