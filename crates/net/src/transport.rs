//! The [`Transport`] handle: one API over TCP and over the simulated network.
//!
//! Calls and sends addressed to this node itself never touch a socket or a
//! simulated link: they go straight to the handler.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio::sync::{broadcast, oneshot};
use tokio::time::Instant;

use crate::responder::Sink;
use crate::{
    CallError, Handler, HandlerAlreadySet, Incoming, Lane, NetConfig, NodeName, PeerEvent,
    Responder, SendError, sim, tcp,
};

/// Peer events kept for a slow subscriber before it starts missing some.
const PEER_EVENTS_CAPACITY: usize = 1024;

/// What every implementation holds: the node's name, settings, handler
/// and peer events.
pub(crate) struct Core {
    pub(crate) local: NodeName,
    pub(crate) config: NetConfig,
    handler: OnceLock<Handler>,
    events: broadcast::Sender<PeerEvent>,
}

impl Core {
    pub(crate) fn new(local: NodeName, config: NetConfig) -> Core {
        Core {
            local,
            config,
            handler: OnceLock::new(),
            events: broadcast::channel(PEER_EVENTS_CAPACITY).0,
        }
    }

    pub(crate) fn handler(&self) -> Option<&Handler> {
        self.handler.get()
    }

    pub(crate) fn emit(&self, peer: &NodeName, lane: Lane, state: crate::PeerState) {
        let _ = self.events.send(PeerEvent {
            peer: peer.clone(),
            lane,
            state,
        });
    }

    pub(crate) fn check_size(&self, body: &Bytes) -> Result<(), SendError> {
        let max = self.config.frame_body_bytes_max;
        if body.len() > max {
            return Err(SendError::TooLarge {
                size: body.len(),
                max,
            });
        }
        Ok(())
    }
}

/// A node's handle on the transport: cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Transport {
    core: Arc<Core>,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Tcp(Arc<tcp::TcpNode>),
    Sim(sim::Endpoint),
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            Kind::Tcp(_) => "tcp",
            Kind::Sim(_) => "sim",
        };
        write!(f, "Transport({kind}, {})", self.core.local)
    }
}

/// The bound socket of a [`Transport::tcp_bound`], not accepting yet.
pub struct Listener {
    node: Arc<tcp::TcpNode>,
    socket: tokio::net::TcpSocket,
}

impl Listener {
    /// Starts accepting peers' connections. Must be called inside a tokio
    /// runtime.
    pub fn listen(self) -> std::io::Result<()> {
        self.node.listen(self.socket)
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Listener({})", self.node.listen_addr())
    }
}

impl Transport {
    /// Starts a TCP transport listening on `listen` (port 0 picks one; see
    /// [`Transport::listen_addr`]). Must be called inside a tokio runtime.
    pub async fn tcp(
        local: NodeName,
        listen: SocketAddr,
        config: NetConfig,
    ) -> std::io::Result<Transport> {
        let (transport, listener) = Transport::tcp_bound(local, listen, config)?;
        listener.listen()?;
        Ok(transport)
    }

    /// A TCP transport bound to `listen` that does not accept peers'
    /// connections until [`Listener::listen`]: meanwhile a peer's connect
    /// is refused (it sees this node down, not silent), while this node
    /// may already send. A node builds its links on it before it replays
    /// its commit log, and listens once it can serve.
    pub fn tcp_bound(
        local: NodeName,
        listen: SocketAddr,
        config: NetConfig,
    ) -> std::io::Result<(Transport, Listener)> {
        let core = Arc::new(Core::new(local, config));
        let (node, socket) = tcp::TcpNode::bind(core.clone(), listen)?;
        let listener = Listener {
            node: node.clone(),
            socket,
        };
        let transport = Transport {
            core,
            kind: Kind::Tcp(node),
        };
        Ok((transport, listener))
    }

    pub(crate) fn sim(core: Arc<Core>, endpoint: sim::Endpoint) -> Transport {
        Transport {
            core,
            kind: Kind::Sim(endpoint),
        }
    }

    /// This node's name.
    pub fn local(&self) -> &NodeName {
        &self.core.local
    }

    /// The settings this transport runs with.
    pub fn config(&self) -> &NetConfig {
        &self.core.config
    }

    /// The address the TCP listener is bound to; `None` in a simulation.
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        match &self.kind {
            Kind::Tcp(node) => Some(node.listen_addr()),
            Kind::Sim(_) => None,
        }
    }

    /// Records where a peer listens (TCP); connections opened from now on
    /// use it. A simulation routes by name and ignores it.
    pub fn set_peer_address(&self, node: NodeName, addr: SocketAddr) {
        if let Kind::Tcp(tcp) = &self.kind {
            tcp.set_peer_address(node, addr);
        }
    }

    /// Registers the one handler for incoming messages. Until then, calls
    /// from peers fail with [`CallError::NoReply`] and one-way messages are
    /// dropped.
    pub fn set_handler(&self, handler: Handler) -> Result<(), HandlerAlreadySet> {
        self.core
            .handler
            .set(handler)
            .map_err(|_| HandlerAlreadySet)
    }

    /// Subscribes to changes in the peers' reachability.
    pub fn peer_events(&self) -> broadcast::Receiver<PeerEvent> {
        self.core.events.subscribe()
    }

    /// Sends a one-way message, waiting while the connection's queue is full.
    /// `Ok` means queued: a message lost with its connection is not reported.
    pub async fn send(&self, to: &NodeName, lane: Lane, body: Bytes) -> Result<(), SendError> {
        self.core.check_size(&body)?;
        if *to == self.core.local {
            return self.send_local(lane, body);
        }
        match &self.kind {
            Kind::Tcp(node) => node.link(to, lane)?.send(body).await,
            Kind::Sim(endpoint) => endpoint.send(to, lane, body),
        }
    }

    /// Sends a one-way message if the queue has room, else
    /// [`SendError::Overloaded`].
    pub fn try_send(&self, to: &NodeName, lane: Lane, body: Bytes) -> Result<(), SendError> {
        self.core.check_size(&body)?;
        if *to == self.core.local {
            return self.send_local(lane, body);
        }
        match &self.kind {
            Kind::Tcp(node) => node.link(to, lane)?.try_send(body),
            Kind::Sim(endpoint) => endpoint.send(to, lane, body),
        }
    }

    /// Sends a request and waits for its reply until `deadline`.
    pub async fn call(
        &self,
        to: &NodeName,
        lane: Lane,
        body: Bytes,
        deadline: Instant,
    ) -> Result<Bytes, CallError> {
        self.core.check_size(&body)?;
        if *to == self.core.local {
            return self.call_local(lane, body, deadline).await;
        }
        match &self.kind {
            Kind::Tcp(node) => node.link(to, lane)?.call(body, deadline).await,
            Kind::Sim(endpoint) => endpoint.call(to, lane, body, deadline).await,
        }
    }

    /// Stops the transport: the listener and every connection close, calls
    /// in flight fail with [`CallError::Shutdown`]. In a simulation this
    /// crashes the node.
    pub fn shutdown(&self) {
        match &self.kind {
            Kind::Tcp(node) => node.shutdown(),
            Kind::Sim(endpoint) => endpoint.shutdown(),
        }
    }

    fn send_local(&self, lane: Lane, body: Bytes) -> Result<(), SendError> {
        if let Some(handler) = self.core.handler() {
            handler(Incoming {
                from: self.core.local.clone(),
                lane,
                body,
                responder: None,
            });
        }
        Ok(())
    }

    async fn call_local(
        &self,
        lane: Lane,
        body: Bytes,
        deadline: Instant,
    ) -> Result<Bytes, CallError> {
        let Some(handler) = self.core.handler() else {
            return Err(CallError::NoReply("no handler registered".into()));
        };
        let (tx, rx) = oneshot::channel();
        let max = self.core.config.frame_body_bytes_max;
        handler(Incoming {
            from: self.core.local.clone(),
            lane,
            body,
            responder: Some(Responder::new(Sink::Local(tx), max)),
        });
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(CallError::NoReply("responder vanished".into())),
            Err(_) => Err(CallError::Timeout),
        }
    }
}
