//! An in-memory network for deterministic simulation.
//!
//! A [`SimNetwork`] holds many nodes' transports in one process. Every
//! message is routed through one queue ordered by delivery time, then by
//! submission order, and delivered by one driver task; random choices (drops,
//! delays) come from one RNG seeded by the test. On a current-thread tokio
//! runtime with paused time, the same seed and the same test code therefore
//! give the same deliveries at the same virtual instants, which
//! [`SimNetwork::trace`] records for comparison.
//!
//! Faults, settable at any time: per-link drop probability and delay range
//! (a range reorders messages), one-way and two-way partitions, a node's
//! connections to one peer lost and not reopened (`links`), and a node's
//! crash (all its links cut; calls to it fail `Unreachable` at once, calls
//! waiting on it fail `Disconnected`), restore, and restart (a fresh
//! transport with no handler, as after a process restart).
//!
//! Limits: queues are unbounded (no `Overloaded`), and a partition is
//! silent, as TCP's is until timeouts: calls across it time out at their
//! deadline. Nothing is static, so networks are independent.

mod deliver;
mod endpoint;
mod links;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
pub(crate) use deliver::SimReply;
pub(crate) use endpoint::Endpoint;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::transport::Core;
use crate::{CallError, Lane, NetConfig, NodeName, PeerState, Transport};

/// Faults on one directed link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkFaults {
    /// Probability in `0.0..=1.0` that a message is lost.
    pub drop_probability: f64,
    /// Shortest delay of a message.
    pub delay_min: Duration,
    /// Longest delay; each message draws its delay uniformly in between.
    pub delay_max: Duration,
}

impl Default for LinkFaults {
    /// No loss; one millisecond of delay, in order.
    fn default() -> LinkFaults {
        LinkFaults {
            drop_probability: 0.0,
            delay_min: Duration::from_millis(1),
            delay_max: Duration::from_millis(1),
        }
    }
}

/// What a traced message was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// A one-way message.
    OneWay,
    /// A call's request, with its call id.
    Request(u64),
    /// A call's reply.
    Reply(u64),
    /// A call's error answer.
    Error(u64),
}

/// What became of a traced message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Queued for delivery after this delay.
    Sent(Duration),
    /// Lost to the link's drop probability.
    Dropped,
    /// Lost to a partition.
    Cut,
    /// Handed to the receiver's handler or waiting call.
    Delivered,
    /// Lost because the receiver crashed, restarted or was cut off while it
    /// was in flight, or the call it answers had ended.
    Lost,
}

/// One line of a network's trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Virtual time since the network was made.
    pub at: Duration,
    /// Sender.
    pub from: NodeName,
    /// Receiver.
    pub to: NodeName,
    /// Lane.
    pub lane: Lane,
    /// What it was.
    pub kind: TraceKind,
    /// Its body's length.
    pub len: usize,
    /// What became of it.
    pub fate: Fate,
}

/// Trace lines kept; later events are counted but not recorded.
pub const TRACE_EVENTS_MAX: usize = 1 << 20;

/// Why a simulated node could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// A node of that name is already on the network.
    #[error("node {0} is already on the network")]
    NodeExists(NodeName),
    /// No node of that name is on the network.
    #[error("no node {0} on the network")]
    UnknownNode(NodeName),
}

/// A simulated network of nodes; cheap to clone.
#[derive(Clone)]
pub struct SimNetwork {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    wake: Notify,
    config: NetConfig,
}

struct Node {
    core: Arc<Core>,
    /// Bumped by `restart`: older endpoints of the node stop working.
    incarnation: u64,
    /// Bumped by every crash: messages in flight to an older epoch are lost.
    epoch: u64,
    crashed: bool,
}

struct Pending {
    caller: NodeName,
    callee: NodeName,
    tx: oneshot::Sender<Result<Bytes, CallError>>,
}

struct State {
    rng: StdRng,
    start: Instant,
    nodes: BTreeMap<NodeName, Node>,
    default_faults: LinkFaults,
    faults: HashMap<(NodeName, NodeName), LinkFaults>,
    cuts: BTreeSet<(NodeName, NodeName)>,
    /// (from, to): `from`'s connections to `to` are down (see `links`).
    down_links: BTreeSet<(NodeName, NodeName)>,
    queue: BTreeMap<(Instant, u64), deliver::Message>,
    next_seq: u64,
    calls: BTreeMap<u64, Pending>,
    next_call: u64,
    trace: Vec<TraceEvent>,
    trace_skipped: u64,
}

impl SimNetwork {
    /// A network whose random choices follow `seed`, with default settings.
    /// Must be called inside a tokio runtime (it starts the driver task).
    pub fn new(seed: u64) -> SimNetwork {
        SimNetwork::with_config(seed, NetConfig::default())
    }

    /// A network whose nodes use `config` (frame limit, names).
    pub fn with_config(seed: u64, config: NetConfig) -> SimNetwork {
        let state = State {
            rng: StdRng::seed_from_u64(seed),
            start: Instant::now(),
            nodes: BTreeMap::new(),
            default_faults: LinkFaults::default(),
            faults: HashMap::new(),
            cuts: BTreeSet::new(),
            down_links: BTreeSet::new(),
            queue: BTreeMap::new(),
            next_seq: 0,
            calls: BTreeMap::new(),
            next_call: 1,
            trace: Vec::new(),
            trace_skipped: 0,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            wake: Notify::new(),
            config,
        });
        tokio::spawn(deliver::drive(Arc::downgrade(&shared)));
        SimNetwork { shared }
    }

    /// Adds a node and returns its transport.
    pub fn add_node(&self, name: NodeName) -> Result<Transport, SimError> {
        let mut state = self.shared.state.lock();
        if state.nodes.contains_key(&name) {
            return Err(SimError::NodeExists(name));
        }
        let core = Arc::new(Core::new(name.clone(), self.shared.config.clone()));
        let node = Node {
            core: core.clone(),
            incarnation: 0,
            epoch: 0,
            crashed: false,
        };
        state.nodes.insert(name.clone(), node);
        Ok(Transport::sim(
            core,
            Endpoint::new(self.shared.clone(), name, 0),
        ))
    }

    /// Faults for messages that no link-specific setting covers.
    pub fn set_default_faults(&self, faults: LinkFaults) {
        self.shared.state.lock().default_faults = faults;
    }

    /// Faults for messages from `from` to `to`.
    pub fn set_link_faults(&self, from: &NodeName, to: &NodeName, faults: LinkFaults) {
        let key = (from.clone(), to.clone());
        self.shared.state.lock().faults.insert(key, faults);
    }

    /// Back to the default faults on every link.
    pub fn clear_link_faults(&self) {
        self.shared.state.lock().faults.clear();
    }

    /// Cuts every link between the two sides, both ways.
    pub fn partition(&self, side_a: &[NodeName], side_b: &[NodeName]) {
        self.partition_one_way(side_a, side_b);
        self.partition_one_way(side_b, side_a);
    }

    /// Cuts every link from `from` to `to`; the other direction still works.
    pub fn partition_one_way(&self, from: &[NodeName], to: &[NodeName]) {
        let mut state = self.shared.state.lock();
        for a in from {
            for b in to.iter().filter(|b| *b != a) {
                state.cuts.insert((a.clone(), b.clone()));
            }
        }
    }

    /// Removes every partition.
    pub fn heal(&self) {
        self.shared.state.lock().cuts.clear();
    }

    /// Crashes a node: its links are cut, calls to it fail `Unreachable`
    /// at once, calls waiting on it (or made by it) fail `Disconnected`,
    /// and the other nodes see [`PeerState::Lost`].
    pub fn crash(&self, name: &NodeName) -> Result<(), SimError> {
        self.shared.crash(name)
    }

    /// Brings a crashed node's links back, handler and all (a network
    /// outage rather than a process restart); the others see `Connected`.
    pub fn restore(&self, name: &NodeName) -> Result<(), SimError> {
        let mut state = self.shared.state.lock();
        let node = state
            .nodes
            .get_mut(name)
            .ok_or_else(|| SimError::UnknownNode(name.clone()))?;
        if node.crashed {
            node.crashed = false;
            state.announce(name, &PeerState::Connected);
        }
        Ok(())
    }

    /// Restarts a node as a new process: a crash if it was up, then a fresh
    /// transport with no handler. The old transport fails from now on.
    pub fn restart(&self, name: &NodeName) -> Result<Transport, SimError> {
        self.shared.crash(name)?;
        let mut state = self.shared.state.lock();
        let core = Arc::new(Core::new(name.clone(), self.shared.config.clone()));
        let node = state
            .nodes
            .get_mut(name)
            .ok_or_else(|| SimError::UnknownNode(name.clone()))?;
        node.incarnation += 1;
        node.crashed = false;
        node.core = core.clone();
        let incarnation = node.incarnation;
        state.announce(name, &PeerState::Connected);
        let endpoint = Endpoint::new(self.shared.clone(), name.clone(), incarnation);
        Ok(Transport::sim(core, endpoint))
    }

    /// Every message so far and what became of it, in order.
    pub fn trace(&self) -> Vec<TraceEvent> {
        self.shared.state.lock().trace.clone()
    }

    /// Messages in flight (queued, not yet delivered or lost).
    pub fn in_flight(&self) -> usize {
        self.shared.state.lock().queue.len()
    }
}

impl Shared {
    fn crash(&self, name: &NodeName) -> Result<(), SimError> {
        let mut state = self.state.lock();
        let node = state
            .nodes
            .get_mut(name)
            .ok_or_else(|| SimError::UnknownNode(name.clone()))?;
        node.epoch += 1;
        if node.crashed {
            return Ok(());
        }
        node.crashed = true;
        let ended: Vec<u64> = state
            .calls
            .iter()
            .filter(|(_, p)| p.caller == *name || p.callee == *name)
            .map(|(id, _)| *id)
            .collect();
        for id in ended {
            if let Some(p) = state.calls.remove(&id) {
                let _ = p.tx.send(Err(CallError::Disconnected));
            }
        }
        state.announce(name, &PeerState::Lost("the node crashed".into()));
        Ok(())
    }
}

impl State {
    /// Tells every other live node about `name`, on both lanes.
    fn announce(&self, name: &NodeName, peer_state: &PeerState) {
        for (other, node) in &self.nodes {
            if other != name && !node.crashed {
                for lane in [Lane::Control, Lane::Bulk] {
                    node.core.emit(name, lane, peer_state.clone());
                }
            }
        }
    }
}
