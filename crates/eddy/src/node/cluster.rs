//! The node in its cluster (design note 010): the cluster state it starts
//! from, the transport, kv's vnode requests over it, the membership
//! service (gossip, failure detection, the claimant's duties), and what a
//! ring change does to the node.
//!
//! Two steps, around the node's start (design note 021): [`Links::bind`]
//! makes what the node is built with (the transport, bound but refusing
//! peers until the node can serve; kv's remote vnodes over it; the
//! members up, which the membership feeds later; the transfers under way,
//! which handoff records), then [`start`] serves the started node, listens
//! and starts the membership and handoff.
//!
//! One transport handler serves every service: membership's messages
//! first (`b'M'`), then kv's vnode requests and replies (`b'K'`); the rest
//! is dropped with a debug line.
//!
//! Invariants: the node's ring is the membership service's, replaced as
//! the service's changes; a partition the ring gives the node gets a vnode
//! (started off the runtime's threads, as opening a backend reads the
//! disk); the kv layer routes around the nodes the service reports down.
//! A node the service finds removed from its cluster (it left, or was
//! force-removed) never serves the cluster of one the service resets it
//! to: it keeps its last ring, on which it owns nothing (with no member
//! its service watches up, it refuses requests: no vnode is up for them),
//! and reports [`Cluster::removed`] so the node stops, as Riak's
//! node stops once its removal completes. Otherwise a client still talking
//! to it would have writes acknowledged by a cluster nobody reads.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use eddy_cluster::{ClusterState, Membership, MembershipConfig};
use eddy_kv::{Liveness, Node, NodeLinks, VnodeFactory};
use eddy_net::{Lane, Listener, NetConfig, Transport};
use eddy_remote::handoff::{HandoffConfig, Handoffs, Underway, Watch};
use eddy_remote::{NetRemote, RemoteConfig, WorkerPool, inbound_for};
use eddy_ring::{NodeName, Ring};

use super::handoff;
use super::storage::Storage;
use crate::config::Settings;

/// Threads running vnode requests from other nodes, and their queue.
const INBOUND_THREADS: usize = 2;
const INBOUND_QUEUE: usize = 4096;
/// Frame room beyond the largest object: the message around it.
const FRAME_SLACK: usize = 1 << 20;

/// Why the node could not join its cluster's services.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cluster state {path}: {reason}")]
    State { path: String, reason: String },
    #[error("cannot listen on {addr} (listener.cluster.internal): {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("membership: {0}")]
    Membership(String),
    #[error("inbound workers: {0}")]
    Workers(std::io::Error),
}

/// The path of the node's cluster state.
pub fn state_path(root: &Path) -> std::path::PathBuf {
    root.join("meta").join("cluster.json")
}

/// The cluster state the node starts from: its saved one, or a cluster of
/// one (itself) on a fresh data directory.
pub fn load_state(settings: &Settings, root: &Path) -> Result<ClusterState, ClusterError> {
    let path = state_path(root);
    let failed = |reason: String| ClusterError::State {
        path: path.display().to_string(),
        reason,
    };
    if let Some(state) = ClusterState::load(&path).map_err(|e| failed(e.to_string()))? {
        if state.ring().size() != settings.node.ring_size {
            tracing::warn!(
                ring_size = state.ring().size(),
                configured = settings.node.ring_size,
                "the cluster's ring size wins over ring_size"
            );
        }
        return Ok(state);
    }
    ClusterState::new(
        settings.cluster.cookie.clone(),
        settings.node.nodename.clone(),
        rand::random(),
        settings.listeners.cluster.to_string(),
        settings.node.ring_size,
    )
    .map_err(|e| failed(e.to_string()))
}

/// The running cluster services of a node.
pub struct Cluster {
    pub membership: Membership,
    pub handoffs: Arc<Handoffs>,
    transport: Transport,
    removed: tokio::sync::watch::Receiver<bool>,
}

impl Cluster {
    /// Returns once the node has been removed from its cluster.
    pub async fn removed(&self) {
        let mut removed = self.removed.clone();
        if removed.wait_for(|r| *r).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Stops handoffs, gossip and failure detection, and closes the
    /// transport.
    pub fn shutdown(&self) {
        self.handoffs.shutdown();
        self.membership.shutdown();
        self.transport.shutdown();
    }
}

/// What the node's vnodes are opened with, for handoff.
pub struct Partitions {
    pub storage: Arc<Storage>,
    pub watch: Arc<Watch>,
}

/// What the node reaches its cluster through, made before the node.
pub struct Links {
    transport: Transport,
    /// The transport's socket, bound; it listens once the node serves.
    listener: Listener,
    remote: Arc<NetRemote>,
    services: Arc<Services>,
    /// The members up, as the membership publishes them once it runs.
    up: tokio::sync::watch::Sender<Arc<BTreeSet<NodeName>>>,
    underway: Arc<Underway>,
}

impl Links {
    /// Binds the cluster listener (a peer's connect is refused until
    /// [`start`] listens) and builds kv's remote vnodes over it. Until the
    /// membership runs, the members of `state` count as up, as its
    /// failure detector starts by counting them. Inside the runtime.
    pub fn bind(settings: &Settings, state: &ClusterState) -> Result<Links, ClusterError> {
        let me = settings.node.nodename.clone();
        let addr = settings.listeners.cluster;
        let net = NetConfig {
            cluster_name: settings.cluster.cookie.clone(),
            frame_body_bytes_max: settings.objects.size_max_bytes + FRAME_SLACK,
            ..NetConfig::default()
        };
        let (transport, listener) = Transport::tcp_bound(me, addr, net)
            .map_err(|source| ClusterError::Listen { addr, source })?;
        let remote = NetRemote::new(transport.clone(), RemoteConfig::default());
        let services = route_inbound(&transport, &remote);
        let members = state.members().keys().cloned().collect();
        let (up, _) = tokio::sync::watch::channel(Arc::new(members));
        Ok(Links {
            transport,
            listener,
            remote,
            services,
            up,
            underway: Underway::new(),
        })
    }

    /// The node's links: remote vnodes, the members up, the transfers
    /// under way, and `vnode_factory` for vnodes started later.
    pub fn for_node(&self, vnode_factory: Arc<dyn VnodeFactory>) -> NodeLinks {
        NodeLinks {
            remote: Some(self.remote.clone()),
            vnode_factory: Some(vnode_factory),
            liveness: Some(Arc::new(Alive(self.up.subscribe()))),
            transfers: Some(self.underway.clone()),
        }
    }
}

/// Serves `node` (built with `links`) to the cluster: other nodes'
/// vnode requests, then the listener, the membership service from
/// `state`, and handoff.
pub async fn start(
    settings: &Settings,
    root: &Path,
    node: &Arc<Node>,
    state: ClusterState,
    partitions: Partitions,
    links: Links,
) -> Result<Cluster, ClusterError> {
    let Links {
        transport,
        listener,
        remote,
        services,
        up,
        underway,
    } = links;
    let workers = WorkerPool::new(INBOUND_THREADS, INBOUND_QUEUE).map_err(ClusterError::Workers)?;
    let _ = remote.serve(inbound_for(node), Arc::new(workers));
    let addr = settings.listeners.cluster;
    listener
        .listen()
        .map_err(|source| ClusterError::Listen { addr, source })?;
    let mut config = MembershipConfig::new(state_path(root));
    config.transfer_limit = settings.cluster.transfer_limit;
    let membership = Membership::start(config, transport.clone(), state)
        .await
        .map_err(|e| ClusterError::Membership(e.to_string()))?;
    let config = HandoffConfig {
        transfer_limit: settings.cluster.transfer_limit as usize,
        checkpoint_dir: Some(root.join("handoff")),
        ..HandoffConfig::default()
    };
    let handoffs = handoff::start(
        node,
        underway,
        &transport,
        &membership,
        partitions.storage,
        partitions.watch,
        config,
    );
    super::metadata::share(node, &membership);
    let _ = services.membership.set(membership.clone());
    let _ = services.handoffs.set(Arc::downgrade(&handoffs));
    tokio::spawn(remote.watch_peers());
    tokio::spawn(remote.watch_up(membership.up_watch()));
    feed_up(&membership, up);
    let removed = follow_ring(node, &membership);
    Ok(Cluster {
        membership,
        handoffs,
        transport,
        removed,
    })
}

/// One handler for the transport, set before it listens: handoff's bulk
/// calls; on the control lane, membership's messages, then kv's.
fn route_inbound(transport: &Transport, remote: &Arc<NetRemote>) -> Arc<Services> {
    let services = Arc::new(Services::default());
    let (remote, routes) = (remote.clone(), services.clone());
    let handler = Arc::new(move |incoming: eddy_net::Incoming| {
        if incoming.lane == Lane::Bulk {
            match routes.handoffs.get().and_then(std::sync::Weak::upgrade) {
                Some(h) => h.handle_bulk(incoming),
                None => tracing::debug!(from = %incoming.from, "handoff not started yet"),
            }
            return;
        }
        let rest = match routes.membership.get() {
            Some(membership) => membership.handle(incoming),
            None => Some(incoming),
        };
        let Some(rest) = rest else {
            return;
        };
        match rest.body.first() {
            Some(&eddy_remote::wire::SERVICE) => remote.handle(rest),
            other => tracing::debug!(from = %rest.from, tag = ?other, "no service for a message"),
        }
    });
    if transport.set_handler(handler).is_err() {
        tracing::error!("the cluster transport already had a handler");
    }
    services
}

/// The services the transport's handler routes to once they run: kv's
/// requests are answered from the start (refused until the node serves),
/// so that no peer's request is dropped unanswered while the node's other
/// services start.
#[derive(Default)]
struct Services {
    membership: std::sync::OnceLock<Membership>,
    handoffs: std::sync::OnceLock<std::sync::Weak<Handoffs>>,
}

/// Hands every ring the service adopts to the node, and starts the vnodes
/// of partitions the node now owns, until the service finds the node
/// removed from its cluster: that ring is not handed on, and the watch
/// returned turns true.
fn follow_ring(node: &Arc<Node>, membership: &Membership) -> tokio::sync::watch::Receiver<bool> {
    let (removed_tx, removed) = tokio::sync::watch::channel(false);
    let mut rings = membership.ring_watch();
    let weak = Arc::downgrade(node);
    let (membership, me) = (membership.clone(), node.config().node_name.clone());
    let incarnation = incarnation(&membership, &me);
    adopt(node, &membership.ring());
    tokio::spawn(async move {
        while rings.changed().await.is_ok() {
            let ring = rings.borrow_and_update().clone();
            if self::incarnation(&membership, &me) != incarnation {
                tracing::warn!(node = %me, "removed from the cluster: stopping");
                let _ = removed_tx.send(true);
                return;
            }
            let Some(node) = weak.upgrade() else { return };
            adopt(&node, &ring);
        }
    });
    removed
}

/// The incarnation of `me` in the service's state: it changes only when
/// the service resets a node removed from its cluster to a cluster of one.
fn incarnation(membership: &Membership, me: &NodeName) -> Option<u64> {
    membership.state().members().get(me).map(|m| m.incarnation)
}

/// Gives `node` the ring and starts vnodes for the partitions it owns or
/// will own once their transfers finish.
fn adopt(node: &Arc<Node>, ring: &Ring) {
    node.set_ring(ring.clone());
    let me: &NodeName = &node.config().node_name;
    let future = ring.future();
    let wanted: Vec<_> = ring
        .owned_by(me)
        .into_iter()
        .chain(future.owned_by(me))
        .collect();
    let node = node.clone();
    tokio::task::spawn_blocking(move || {
        for p in wanted {
            if let Err(e) = node.start_vnode(p) {
                tracing::error!(partition = p.0, "starting an owned vnode: {e}");
            }
        }
    });
}

/// Publishes the membership's members up to the node's liveness (`up`)
/// now and at every change, until either side goes.
fn feed_up(membership: &Membership, up: tokio::sync::watch::Sender<Arc<BTreeSet<NodeName>>>) {
    let mut ups = membership.up_watch();
    up.send_replace(ups.borrow_and_update().clone());
    tokio::spawn(async move {
        while ups.changed().await.is_ok() {
            let now = ups.borrow_and_update().clone();
            if up.send(now).is_err() {
                return;
            }
        }
    });
}

/// The members up as the membership publishes them, for kv's preflists
/// and coverage plans: a read of the watch, no lock of the membership's.
struct Alive(tokio::sync::watch::Receiver<Arc<BTreeSet<NodeName>>>);

impl Liveness for Alive {
    fn is_up(&self, node: &NodeName) -> bool {
        self.0.borrow().contains(node)
    }
}
