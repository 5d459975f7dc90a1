//! The TCP transport: a listener for peers' connections and one outgoing
//! link per (peer, lane).
//!
//! Each connection carries traffic one way: the dialer sends requests and
//! one-way messages, the listener sends replies and error frames. Two nodes
//! that talk both ways hold two connections per lane, which spares any
//! tie-breaking between simultaneous connects.
//!
//! Invariants: every connection starts with an accepted handshake (same
//! cluster name, a common protocol version, the listener is the node the
//! dialer meant); a peer has at most as many requests outstanding on an
//! inbound connection as the lane's queue holds, after which its reader
//! waits, pushing back through TCP.

mod conn;
mod inbound;
mod link;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) use conn::{Outbound, ReplyQueue};
use parking_lot::{Mutex, RwLock};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::AbortHandle;

use crate::handshake::{Hello, Welcome};
use crate::transport::Core;
use crate::{CallError, Lane, NodeName, PeerState, SendError};
use link::Link;

/// Peers' connections the kernel queues before they are accepted (what
/// `TcpListener::bind` asks for).
const LISTEN_BACKLOG: u32 = 1024;

/// The state behind a TCP [`crate::Transport`].
pub(crate) struct TcpNode {
    pub(crate) core: Arc<Core>,
    listen_addr: SocketAddr,
    addresses: RwLock<HashMap<NodeName, SocketAddr>>,
    links: Mutex<HashMap<(NodeName, Lane), Arc<Link>>>,
    tasks: Mutex<Vec<AbortHandle>>,
    shut_down: AtomicBool,
}

impl TcpNode {
    /// Binds `listen` without accepting yet: until [`TcpNode::listen`],
    /// a peer's connect is refused, as if nothing were bound.
    pub(crate) fn bind(
        core: Arc<Core>,
        listen: SocketAddr,
    ) -> std::io::Result<(Arc<TcpNode>, TcpSocket)> {
        let socket = match listen {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        // As `TcpListener::bind` does: a restarted node rebinds its port
        // while the last process's connections linger in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        socket.bind(listen)?;
        let node = Arc::new(TcpNode {
            core,
            listen_addr: socket.local_addr()?,
            addresses: RwLock::new(HashMap::new()),
            links: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Vec::new()),
            shut_down: AtomicBool::new(false),
        });
        Ok((node, socket))
    }

    /// Starts accepting peers' connections on the socket [`TcpNode::bind`]
    /// bound. Must be called inside a tokio runtime.
    pub(crate) fn listen(self: &Arc<Self>, socket: TcpSocket) -> std::io::Result<()> {
        let listener = socket.listen(LISTEN_BACKLOG)?;
        self.spawn(inbound::accept_loop(self.clone(), listener));
        Ok(())
    }

    pub(crate) fn listen_addr(&self) -> SocketAddr {
        self.listen_addr
    }

    /// Records a peer's address; a link kept down by failed connects to
    /// the old one may try the new one at once.
    pub(crate) fn set_peer_address(&self, node: NodeName, addr: SocketAddr) {
        let old = self.addresses.write().insert(node.clone(), addr);
        if old != Some(addr) {
            let links = self.links.lock();
            for lane in [Lane::Control, Lane::Bulk] {
                if let Some(link) = links.get(&(node.clone(), lane)) {
                    link.clear_backoff();
                }
            }
        }
    }

    /// Ends the connect backoff of every link to `node` (it just connected
    /// to this node, so it is up).
    pub(crate) fn peer_is_up(&self, node: &NodeName) {
        let links = self.links.lock();
        for lane in [Lane::Control, Lane::Bulk] {
            if let Some(link) = links.get(&(node.clone(), lane)) {
                link.clear_backoff();
            }
        }
    }

    /// The link to `peer` on `lane`, opened on first use.
    pub(crate) fn link(
        self: &Arc<Self>,
        peer: &NodeName,
        lane: Lane,
    ) -> Result<Arc<Link>, SendError> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(SendError::Shutdown);
        }
        let mut links = self.links.lock();
        if let Some(link) = links.get(&(peer.clone(), lane)) {
            return Ok(link.clone());
        }
        let link = Link::open(self, peer.clone(), lane);
        links.insert((peer.clone(), lane), link.clone());
        Ok(link)
    }

    pub(crate) fn shutdown(&self) {
        self.shut_down.store(true, Ordering::Release);
        for task in std::mem::take(&mut *self.tasks.lock()) {
            task.abort();
        }
        for (_, link) in std::mem::take(&mut *self.links.lock()) {
            link.fail_all(&CallError::Shutdown);
        }
    }

    /// Runs a task that [`TcpNode::shutdown`] aborts.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let handle = tokio::spawn(task).abort_handle();
        let mut tasks = self.tasks.lock();
        if self.shut_down.load(Ordering::Acquire) {
            handle.abort();
            return;
        }
        if tasks.len() >= 64 && tasks.len().is_power_of_two() {
            tasks.retain(|t| !t.is_finished());
        }
        tasks.push(handle);
    }
}

/// Opens a connection to `peer` and runs the dialer's side of the handshake.
async fn dial(
    node: &TcpNode,
    peer: &NodeName,
    lane: Lane,
) -> Result<TcpStream, (SendError, PeerState)> {
    let unreachable = |why: String| {
        let why: Arc<str> = why.into();
        (
            SendError::Unreachable(why.clone()),
            PeerState::Unreachable(why),
        )
    };
    let config = &node.core.config;
    let addr = node.addresses.read().get(peer).copied();
    let addr = addr.ok_or_else(|| unreachable(format!("no address known for {peer}")))?;
    let mut stream =
        match tokio::time::timeout(config.connect_timeout, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(unreachable(format!("connect to {peer} at {addr}: {e}"))),
            Err(_) => {
                return Err(unreachable(format!(
                    "connect to {peer} at {addr} timed out"
                )));
            }
        };
    let _ = stream.set_nodelay(true);
    let hello = Hello {
        versions: config.protocol_versions,
        lane,
        cluster: config.cluster_name.clone(),
        from: node.core.local.clone(),
        to: peer.clone(),
    };
    let exchange = async {
        stream.write_all(&hello.encode()).await?;
        Welcome::read(&mut stream).await
    };
    let welcome = match tokio::time::timeout(config.handshake_timeout, exchange).await {
        Ok(Ok(welcome)) => welcome,
        Ok(Err(e)) => return Err(unreachable(format!("handshake with {peer} at {addr}: {e}"))),
        Err(_) => {
            return Err(unreachable(format!(
                "handshake with {peer} at {addr} timed out"
            )));
        }
    };
    let reason = match welcome {
        Welcome::Accepted { version }
            if config
                .protocol_versions
                .negotiate(crate::handshake::Versions {
                    min: version,
                    max: version,
                })
                .is_some() =>
        {
            return Ok(stream);
        }
        Welcome::Accepted { version } => {
            format!("{peer} chose protocol version {version}, which this node does not speak")
        }
        Welcome::Refused { reason } => reason,
    };
    tracing::warn!(%peer, %addr, ?lane, "connection refused: {reason}");
    let reason: Arc<str> = reason.into();
    Err((
        SendError::Refused(reason.clone()),
        PeerState::Refused(reason),
    ))
}
