//! Routing and delivery: the fault decisions made when a message is sent,
//! the time-ordered queue, and the one driver task that empties it.
//!
//! Invariants: every random draw happens under the network's lock, in the
//! order messages are sent; the queue is ordered by (delivery instant,
//! submission sequence), so equal instants keep submission order; handlers
//! run without the lock held.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use rand::Rng;

use super::{Fate, Shared, State, TRACE_EVENTS_MAX, TraceEvent, TraceKind};
use crate::error::call_error;
use crate::frame::ErrorCode;
use crate::responder::{Answer, Sink};
use crate::{Incoming, Lane, NodeName, Responder};

/// A message on its way.
pub(crate) struct Message {
    pub(crate) from: NodeName,
    pub(crate) to: NodeName,
    pub(crate) lane: Lane,
    pub(crate) kind: Kind,
    pub(crate) body: Bytes,
    /// The receiver's crash epoch when it was sent.
    to_epoch: u64,
}

/// What a message carries.
pub(crate) enum Kind {
    OneWay,
    Request(u64),
    Reply(u64),
    Error(u64, ErrorCode, String),
}

impl Kind {
    fn trace(&self) -> TraceKind {
        match self {
            Kind::OneWay => TraceKind::OneWay,
            Kind::Request(id) => TraceKind::Request(*id),
            Kind::Reply(id) => TraceKind::Reply(*id),
            Kind::Error(id, ..) => TraceKind::Error(*id),
        }
    }
}

impl Message {
    pub(crate) fn new(
        from: NodeName,
        to: NodeName,
        lane: Lane,
        kind: Kind,
        body: Bytes,
    ) -> Message {
        Message {
            from,
            to,
            lane,
            kind,
            body,
            to_epoch: 0,
        }
    }
}

impl State {
    /// Decides a message's fate and queues it if it survives. The receiver
    /// must be on the network.
    pub(crate) fn route(&mut self, mut msg: Message) {
        if self.cuts.contains(&(msg.from.clone(), msg.to.clone())) {
            self.record(&msg, Fate::Cut);
            return;
        }
        let key = (msg.from.clone(), msg.to.clone());
        let faults = self
            .faults
            .get(&key)
            .copied()
            .unwrap_or(self.default_faults);
        if faults.drop_probability > 0.0 && self.rng.random_bool(faults.drop_probability.min(1.0)) {
            self.record(&msg, Fate::Dropped);
            return;
        }
        let delay = if faults.delay_max > faults.delay_min {
            let ns = self
                .rng
                .random_range(faults.delay_min.as_nanos()..=faults.delay_max.as_nanos());
            Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
        } else {
            faults.delay_min
        };
        msg.to_epoch = self.nodes.get(&msg.to).map_or(0, |n| n.epoch);
        self.record(&msg, Fate::Sent(delay));
        let seq = self.next_seq;
        self.next_seq += 1;
        let at = tokio::time::Instant::now() + delay;
        self.queue.insert((at, seq), msg);
    }

    fn record(&mut self, msg: &Message, fate: Fate) {
        if self.trace.len() >= TRACE_EVENTS_MAX {
            self.trace_skipped += 1;
            return;
        }
        self.trace.push(TraceEvent {
            at: tokio::time::Instant::now() - self.start,
            from: msg.from.clone(),
            to: msg.to.clone(),
            lane: msg.lane,
            kind: msg.kind.trace(),
            len: msg.body.len(),
            fate,
        });
    }

    /// Whether a message can still reach its receiver now.
    fn reachable(&self, msg: &Message) -> bool {
        let up = self
            .nodes
            .get(&msg.to)
            .is_some_and(|n| !n.crashed && n.epoch == msg.to_epoch);
        up && !self.cuts.contains(&(msg.from.clone(), msg.to.clone()))
            && !self.link_down(&msg.from, &msg.to)
    }
}

/// Delivers queued messages at their instants until the network is gone.
pub(crate) async fn drive(shared: Weak<Shared>) {
    loop {
        let Some(net) = shared.upgrade() else { return };
        let next = net.state.lock().queue.first_key_value().map(|(k, _)| k.0);
        match next {
            Some(at) if at <= tokio::time::Instant::now() => deliver_first(&net),
            Some(at) => {
                let wake = net.wake.notified();
                tokio::select! {
                    biased;
                    () = wake => {}
                    () = tokio::time::sleep_until(at) => {}
                }
            }
            // Holds `net` while waiting: the task ends with the runtime.
            None => net.wake.notified().await,
        }
    }
}

fn deliver_first(net: &Arc<Shared>) {
    let mut state = net.state.lock();
    let Some((_, msg)) = state.queue.pop_first() else {
        return;
    };
    if !state.reachable(&msg) {
        state.record(&msg, Fate::Lost);
        return;
    }
    match msg.kind {
        Kind::Reply(id) | Kind::Error(id, ..) => {
            let Some(pending) = state.calls.remove(&id) else {
                state.record(&msg, Fate::Lost);
                return;
            };
            state.record(&msg, Fate::Delivered);
            let answer = match msg.kind {
                Kind::Error(_, code, reason) => Err(call_error(code, &reason)),
                _ => Ok(msg.body),
            };
            let _ = pending.tx.send(answer);
        }
        Kind::OneWay | Kind::Request(_) => {
            state.record(&msg, Fate::Delivered);
            let Some(node) = state.nodes.get(&msg.to) else {
                return;
            };
            let core = node.core.clone();
            let responder = match msg.kind {
                Kind::Request(id) => Some(SimReply::responder(net, &msg, id, node.epoch)),
                _ => None,
            };
            drop(state);
            match (core.handler(), responder) {
                (Some(handler), responder) => handler(Incoming {
                    from: msg.from,
                    lane: msg.lane,
                    body: msg.body,
                    responder,
                }),
                (None, Some(responder)) => {
                    responder.refuse(
                        ErrorCode::NoHandler,
                        "no handler registered on the peer yet",
                    );
                }
                (None, None) => {}
            }
        }
    }
}

/// Where a simulated call's answer goes: back across the network, through
/// the reverse link's faults.
#[derive(Debug)]
pub(crate) struct SimReply {
    net: Weak<Shared>,
    /// The answering node, and its crash epoch when the request arrived.
    from: NodeName,
    epoch: u64,
    to: NodeName,
    lane: Lane,
    call: u64,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SimNetwork")
    }
}

impl SimReply {
    fn responder(net: &Arc<Shared>, msg: &Message, call: u64, epoch: u64) -> Responder {
        let reply = SimReply {
            net: Arc::downgrade(net),
            from: msg.to.clone(),
            epoch,
            to: msg.from.clone(),
            lane: msg.lane,
            call,
        };
        Responder::new(Sink::Sim(reply), net.config.frame_body_bytes_max)
    }

    pub(crate) fn deliver(self, answer: Answer) {
        let Some(net) = self.net.upgrade() else {
            return;
        };
        let mut state = net.state.lock();
        // A node that crashed since the request came cannot answer it.
        let alive = state
            .nodes
            .get(&self.from)
            .is_some_and(|n| !n.crashed && n.epoch == self.epoch);
        if !alive || !state.nodes.contains_key(&self.to) {
            return;
        }
        let (kind, body) = match answer {
            Ok(body) => (Kind::Reply(self.call), body),
            Err((code, reason)) => (Kind::Error(self.call, code, reason), Bytes::new()),
        };
        state.route(Message::new(self.from, self.to, self.lane, kind, body));
        drop(state);
        net.wake.notify_one();
    }
}
