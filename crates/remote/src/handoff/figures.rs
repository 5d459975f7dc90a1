//! Handoff's figures (design note 025), registered in the node's registry
//! when the node's [`super::Handoffs`] is built and counted by the sender
//! and the receiver, one labelled series per [`Kind`].
//!
//! `/stats` shows Riak's `rejected_handoffs`, `{kind}_handoff_objects_sent`,
//! `{kind}_handoff_bytes_sent` and
//! `{kind}_handoff_{inbound,outbound}_active_transfers` from them.

use eddy_metrics::{Counter, Gauge, Registry};

use super::wire::Kind;

/// One kind of transfer's figures.
#[derive(Debug)]
pub struct KindFigures {
    /// Outbound transfers that began running (had a slot).
    pub started: Counter,
    /// Outbound transfers whose every object is durable at the receiver.
    pub completed: Counter,
    /// Outbound attempts that failed and were paused before trying again
    /// from the receiver's checkpoint.
    pub failed: Counter,
    /// Outbound attempts that went on after the receiver's checkpoint
    /// instead of from the start.
    pub resumed: Counter,
    /// Objects and bytes sent in batches the receiver acknowledged.
    pub objects_sent: Counter,
    pub bytes_sent: Counter,
    /// Objects and bytes received in batches made durable here.
    pub objects_received: Counter,
    pub bytes_received: Counter,
    /// Transfers running now, each way.
    pub outbound_running: Gauge,
    pub inbound_running: Gauge,
}

/// The handoff figures of a node.
#[derive(Debug)]
pub struct HandoffFigures {
    ownership: KindFigures,
    hinted: KindFigures,
    /// Inbound transfers refused at the transfer limit (answered busy).
    pub rejected: Counter,
}

impl HandoffFigures {
    /// Registers handoff's figures in `r`.
    pub fn register(r: &Registry) -> HandoffFigures {
        HandoffFigures {
            ownership: KindFigures::register(r, Kind::Ownership),
            hinted: KindFigures::register(r, Kind::Hinted),
            rejected: r.counter(
                "eddy_handoff_rejected_total",
                "Inbound transfers refused at the transfer limit.",
            ),
        }
    }

    /// The figures of transfers of `kind`.
    pub fn of(&self, kind: Kind) -> &KindFigures {
        match kind {
            Kind::Ownership => &self.ownership,
            Kind::Hinted => &self.hinted,
        }
    }
}

impl KindFigures {
    #[rustfmt::skip]
    fn register(r: &Registry, kind: Kind) -> KindFigures {
        let k = kind.name();
        let counter = |name, help| r.counter_with(name, help, &[("kind", k)]);
        let running = |direction| {
            let help = "Transfers running now, by kind and direction (inbound, outbound).";
            r.gauge_with("eddy_handoff_transfers_running", help, &[("kind", k), ("direction", direction)])
        };
        KindFigures {
            started: counter("eddy_handoff_transfers_started_total", "Outbound transfers started, by kind (ownership, hinted)."),
            completed: counter("eddy_handoff_transfers_completed_total", "Outbound transfers whose every object is durable at the receiver, by kind."),
            failed: counter("eddy_handoff_attempts_failed_total", "Outbound transfer attempts that failed and were paused, by kind."),
            resumed: counter("eddy_handoff_resumed_total", "Outbound transfer attempts resumed after the receiver's checkpoint, by kind."),
            objects_sent: counter("eddy_handoff_objects_sent_total", "Objects sent in acknowledged batches, by kind."),
            bytes_sent: counter("eddy_handoff_bytes_sent_total", "Bytes of the objects sent in acknowledged batches, by kind."),
            objects_received: counter("eddy_handoff_objects_received_total", "Objects received in batches made durable, by kind."),
            bytes_received: counter("eddy_handoff_bytes_received_total", "Bytes of the objects received in batches made durable, by kind."),
            outbound_running: running("outbound"),
            inbound_running: running("inbound"),
        }
    }
}
