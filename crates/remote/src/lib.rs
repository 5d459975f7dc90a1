//! Eddy's node-to-node side, above eddy-kv: the only Eddy crate between
//! the coordinators and the transport (eddy-net) (design note 021).
//!
//! - this file and its modules: vnode requests and replies between nodes
//!   ([`NetRemote`], kv's `RemoteVnodes` over the transport's control lane);
//! - [`handoff`]: moving a partition's data to another node, resumably,
//!   over the bulk lane;
//! - [`codec`]: the one byte reader and writer both formats are made with.
//!
//! # Vnode messages over the network
//! [`NetRemote`] carries requests from
//! this node's coordinators to vnodes on other nodes, and other nodes'
//! requests to this node's vnodes, over an [`eddy_net::Transport`]'s
//! control lane (design note 010 §1).
//!
//! Every message is one-way ([`wire`] is its format). Sending a request
//! allocates a request id and registers the request's [`ReplyTo`] in a
//! table (`pending`, on eddy-net's [`Waiting`](eddy_net::Waiting), the one
//! matcher of replies to requests, which gives the ids too); the vnode's replies come back as one-way messages
//! naming that id and go to the registered channel. A request that cannot
//! be sent (peer unreachable or refusing, queue full, transport shut
//! down) is answered at once with [`KvError::Unreachable`]; one whose peer
//! is lost while it waits (a peer event, see [`NetRemote::watch_peers`])
//! or found down by the failure detector ([`NetRemote::watch_up`])
//! likewise. A request whose peer never answers and is not found down is
//! left to its coordinator's deadline; the entry goes once the coordinator
//! drops its receiver, at the next sweep.
//!
//! Threads: the transport runs [`NetRemote::handle`] on its connection
//! reader (TCP) or its driver (simulation), which must not block. Replies
//! are routed there; a request is decoded there and handed to an
//! [`Executor`] — a [`WorkerPool`] of a few std threads with a bounded
//! queue in production, [`Inline`] in a one-thread simulation — because a
//! vnode put may wait on a key lock or the disk. A full queue answers the
//! request with `Unreachable` naming this node as overloaded. Replies
//! leave from whichever thread the vnode answers on (a worker, or the
//! commit log's syncer for durable puts): they never wait for room in the
//! transport's queue (a full queue hands the send to a task).
//!
//! A reply the transport refuses because the link to its coordinator is
//! down (`Unreachable`, `Refused`) is sent again by a task, after waits
//! that double from [`RemoteConfig::reply_retry_wait`], for at most
//! [`RemoteConfig::reply_retry_for`] (a few attempts over about a second
//! by default, far less than a coordinator's deadline), then dropped. A
//! reply the transport accepted but lost with its connection is not seen
//! here: its coordinator hears of it as the peer's lost connection, or
//! waits for its deadline.
//!
//! Invariants: every request sent that expects a reply gets exactly one
//! final reply on its `ReplyTo` (from the vnode, or an error from here),
//! unless its coordinator stopped listening or the peer went silent; the
//! table of waiting requests is bounded ([`RemoteConfig::pending_max`]);
//! a reply is retried for a bounded time only.
//!
//! A batch (the gets or replicated puts of many keys for vnodes of one
//! node, design note 016) is one message with one request id; its entry
//! in the table holds each item's `ReplyTo`. The receiving node runs its
//! items one after another on one worker and sends their replies back in
//! batch replies of at most [`BATCH_REPLY_BYTES`] each, the first as soon
//! as it fills (`batch`); a message above the transport's frame limit is
//! split in halves, each sent as a batch (reply) of its own.
//!
//! Files: [`wire`] (the format), `pending` (the table), [`executor`]
//! (where inbound requests run), `inbound` (messages from the transport),
//! `batch` (batches sent, and their replies gathered), `resend` (replies
//! sent again), this file (the handle, sending requests and replies).

mod batch;
pub mod codec;
pub mod executor;
pub mod handoff;
mod inbound;
mod pending;
mod resend;
pub mod wire;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use eddy_net::{HandlerAlreadySet, Lane, NodeName, PeerState, SendError, Transport};
use eddy_ring::Partition;
use tokio::runtime::Handle;
use tokio::sync::watch;

use eddy_kv::node::Node;
use eddy_kv::router::{RemoteVnodes, unanswerable};
use eddy_model::error::KvError;
use eddy_vnode::msg::{BatchItem, PutKind, VnodeId, VnodeReply, VnodeRequest};
use eddy_vnode::reply::{Reply, ReplyRoute, ReplyTo};
pub use executor::{Executor, Inline, Work, WorkerPool};
use pending::{Due, Entry, Pending, Slot};

/// The item replies of one batch reply message stop growing at this
/// many bytes (an item's reply larger than it travels alone).
pub const BATCH_REPLY_BYTES: usize = 4 << 20;

/// Hands a request from another node to this node's vnode `to`; its
/// replies go to the `ReplyTo` (which routes them back over the network).
pub type Inbound = Arc<dyn Fn(VnodeId, VnodeRequest, ReplyTo) + Send + Sync>;

/// The [`Inbound`] that hands requests to `node` ([`Node::receive`]) while
/// it lives, and answers them `ShuttingDown` once it is gone.
pub fn inbound_for(node: &Arc<Node>) -> Inbound {
    let weak: Weak<Node> = Arc::downgrade(node);
    Arc::new(move |to: VnodeId, req, reply| match weak.upgrade() {
        Some(n) => n.receive(to.partition, req, reply),
        None => unanswerable(to.partition, &req, &reply, KvError::ShuttingDown),
    })
}

/// Limits of a [`NetRemote`], and where its request ids start.
#[derive(Clone, Debug)]
pub struct RemoteConfig {
    /// Most requests awaiting replies; beyond it (after a sweep) new
    /// requests are answered `Unreachable` at once.
    pub pending_max: usize,
    /// Age after which a waiting request is answered with
    /// [`KvError::Timeout`] at a sweep, whether or not anyone listens.
    pub pending_age_max: Duration,
    /// The first request id. Random by default, so that a late reply to
    /// a request of this node's previous process (a peer's durable reply
    /// sent after a quick restart) names no request of this one; a
    /// simulation fixes it.
    pub request_id_start: u64,
    /// The first wait before a reply that could not be sent is tried
    /// again; each later wait doubles.
    pub reply_retry_wait: Duration,
    /// How long after its first attempt a reply that cannot be sent is
    /// still tried; then it is dropped.
    pub reply_retry_for: Duration,
}

impl Default for RemoteConfig {
    /// 65,536 waiting requests; five minutes (coordinators' deadlines are
    /// far shorter); a random first id in the lower half of the range, so
    /// ids never wrap to 0; replies retried after 50 ms (the transport's
    /// first reconnect backoff), 100, 200 and 400 ms, within one second.
    fn default() -> RemoteConfig {
        RemoteConfig {
            pending_max: 1 << 16,
            pending_age_max: Duration::from_secs(300),
            request_id_start: (rand::random::<u64>() >> 1).max(1),
            reply_retry_wait: Duration::from_millis(50),
            reply_retry_for: Duration::from_secs(1),
        }
    }
}

/// A node's vnode messaging over a transport.
pub struct NetRemote {
    transport: Transport,
    runtime: Option<Handle>,
    pending: Pending,
    serving: OnceLock<Serving>,
    resend: resend::Resend,
}

/// Where inbound requests go, once the node is ready for them.
struct Serving {
    inbound: Inbound,
    executor: Arc<dyn Executor>,
}

/// [`NetRemote::serve`] was called twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this node already serves vnode requests from other nodes")]
pub struct AlreadyServing;

impl NetRemote {
    /// Vnode messaging over `transport`. Called inside a tokio runtime,
    /// it keeps the runtime's handle for sends from other threads.
    pub fn new(transport: Transport, config: RemoteConfig) -> Arc<NetRemote> {
        Arc::new(NetRemote {
            transport,
            runtime: Handle::try_current().ok(),
            pending: Pending::new(
                config.request_id_start,
                config.pending_max.max(1),
                config.pending_age_max,
            ),
            serving: OnceLock::new(),
            resend: resend::Resend {
                wait: config.reply_retry_wait,
                retry_for: config.reply_retry_for,
            },
        })
    }

    /// Starts taking other nodes' requests: each goes to `inbound`, run by
    /// `executor`. Until then they are answered `Unreachable` ("not
    /// serving yet").
    pub fn serve(
        &self,
        inbound: Inbound,
        executor: Arc<dyn Executor>,
    ) -> Result<(), AlreadyServing> {
        self.serving
            .set(Serving { inbound, executor })
            .map_err(|_| AlreadyServing)
    }

    /// Registers [`NetRemote::handle`] as the transport's handler, for a
    /// node whose transport carries nothing else. A node with more
    /// services dispatches on the first byte ([`wire::SERVICE`]) itself.
    pub fn install(self: &Arc<Self>) -> Result<(), HandlerAlreadySet> {
        let me: Weak<NetRemote> = Arc::downgrade(self);
        self.transport.set_handler(Arc::new(move |incoming| {
            if let Some(me) = me.upgrade() {
                me.handle(incoming);
            }
        }))
    }

    /// Fails the waiting requests of every peer whose control connection
    /// is lost or cannot be opened, as the transport reports it, until
    /// the transport or this `NetRemote` goes. Spawn it on the runtime.
    pub fn watch_peers(self: &Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
        let mut events = self.transport.peer_events();
        let me = Arc::downgrade(self);
        async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let event = match events.recv().await {
                    Ok(event) => event,
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                let Some(me) = me.upgrade() else { return };
                let lost = matches!(
                    event.state,
                    PeerState::Lost(_) | PeerState::Unreachable(_) | PeerState::Refused(_)
                );
                if event.lane == Lane::Control && lost {
                    me.fail_peer(&event.peer);
                }
            }
        }
    }

    /// Fails the waiting requests of every peer that leaves `up` (a
    /// failure detector's view of the members up), until the view's sender
    /// or this `NetRemote` goes: a peer behind a silent partition is then
    /// given up on when it is found down, not at each request's deadline.
    /// Spawn it on the runtime.
    pub fn watch_up(
        self: &Arc<Self>,
        mut up: watch::Receiver<Arc<BTreeSet<NodeName>>>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let me = Arc::downgrade(self);
        async move {
            let mut before = up.borrow_and_update().clone();
            while up.changed().await.is_ok() {
                let now = up.borrow_and_update().clone();
                let Some(me) = me.upgrade() else { return };
                for gone in before.difference(&now) {
                    me.fail_peer(gone);
                }
                before = now;
            }
        }
    }

    /// Requests awaiting replies.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Drops waiting requests whose coordinators stopped listening and
    /// answers those past the age limit; returns how many left. Inserts
    /// sweep by themselves as the table grows; a node may also call this
    /// from a timer.
    pub fn sweep(&self) -> usize {
        self.pending.sweep()
    }

    /// The transport this runs over.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    fn fail_peer(&self, peer: &NodeName) {
        for entry in self.pending.take_peer(peer) {
            entry.fail(KvError::Unreachable(peer.to_string()));
        }
    }

    /// Encodes and sends one reply without waiting: a full queue or a link
    /// that is down hands the send to a task (see `resend`). A reply too
    /// large for the format or the frame is replaced by a `TooLarge` error
    /// of the same kind.
    fn send_reply(&self, to: &NodeName, request_id: u64, partition: Partition, reply: &VnodeReply) {
        let _entered = self.enter_runtime();
        let sent = wire::encode_reply(request_id, partition, reply)
            .map_err(too_large)
            .and_then(|body| self.try_send_reply(to, body));
        let Err(e) = sent else { return };
        let refusal = match reply {
            VnodeReply::Get(_) => VnodeReply::Get(Err(e)),
            VnodeReply::Fold(_) => VnodeReply::Fold(Err(e)),
            VnodeReply::Coordinated { .. } | VnodeReply::Put(_) => VnodeReply::Put(Err(e)),
        };
        if let Ok(body) = wire::encode_reply(request_id, partition, &refusal) {
            let _ = self.try_send_reply(to, body);
        }
    }

    /// Sends an encoded reply; only a body above the frame limit is an
    /// error (as `TooLarge`).
    fn try_send_reply(&self, to: &NodeName, body: Bytes) -> Result<(), KvError> {
        match self.transport.try_send(to, Lane::Control, body.clone()) {
            Ok(()) => Ok(()),
            Err(SendError::Overloaded) => {
                self.send_later(to.clone(), body, Duration::ZERO);
                Ok(())
            }
            Err(e @ SendError::TooLarge { .. }) => Err(send_error(e, to)),
            Err(e @ (SendError::Unreachable(_) | SendError::Refused(_))) => {
                tracing::debug!(%to, "reply not sent, will retry: {e}");
                self.send_later(to.clone(), body, self.resend.wait);
                Ok(())
            }
            Err(e) => {
                tracing::debug!(%to, "reply not sent: {e}");
                Ok(())
            }
        }
    }

    /// Sends `body` to `to` from a task, after `first_wait`.
    fn send_later(&self, to: NodeName, body: Bytes, first_wait: Duration) {
        let Some(runtime) = &self.runtime else {
            return tracing::debug!(%to, "reply dropped: cannot send now and no runtime");
        };
        let send = self
            .resend
            .send(self.transport.clone(), to, body, first_wait);
        runtime.spawn(send);
    }

    /// Enters the runtime on a thread outside it (a worker, the syncer):
    /// the transport may open a connection, which spawns tasks.
    fn enter_runtime(&self) -> Option<tokio::runtime::EnterGuard<'_>> {
        match Handle::try_current() {
            Ok(_) => None,
            Err(_) => self.runtime.as_ref().map(Handle::enter),
        }
    }

    /// What replies `req` expects, if any.
    fn due(req: &VnodeRequest, reply: &ReplyTo) -> Option<Due> {
        if matches!(reply, ReplyTo::Nobody) {
            return None;
        }
        match req {
            VnodeRequest::Put(put) => Some(match put.kind {
                PutKind::Coordinate(_) => Due::Coordinated {
                    coordinated: false,
                    put: false,
                },
                PutKind::Replicate { .. } | PutKind::DtDelta(_) => Due::Put,
            }),
            VnodeRequest::Get { .. } => Some(Due::Get),
            VnodeRequest::Fold(_) => Some(Due::Fold {
                received: 0,
                total: None,
            }),
            VnodeRequest::Reap { .. } => None,
        }
    }
}

impl RemoteVnodes for NetRemote {
    fn send(&self, to: &VnodeId, req: VnodeRequest, reply: ReplyTo) {
        let due = NetRemote::due(&req, &reply);
        let id = match due {
            Some(_) => self.pending.next_id(),
            None => 0,
        };
        let body = match wire::encode_request(id, to.partition, &req) {
            Ok(body) => body,
            Err(e) => return unanswerable(to.partition, &req, &reply, too_large(e)),
        };
        if let Some(due) = due {
            let entry = Entry::new(to.node.clone(), to.partition, reply, due);
            match self.pending.insert(id, entry) {
                Ok(aged) => aged.into_iter().for_each(|e| e.fail(KvError::Timeout)),
                Err(full) => {
                    let why = format!("{} (too many requests in flight)", to.node);
                    return full.0.fail(KvError::Unreachable(why));
                }
            }
        }
        let sent = {
            let _entered = self.enter_runtime();
            self.transport.try_send(&to.node, Lane::Control, body)
        };
        if let Err(e) = sent {
            tracing::debug!(to = %to.node, partition = to.partition.0, "request not sent: {e}");
            if let Some(entry) = self.pending.remove(id) {
                entry.fail(send_error(e, &to.node));
            }
        }
    }

    fn send_batch(&self, node: &NodeName, items: Vec<(BatchItem, ReplyTo)>) {
        let mut requests = Vec::with_capacity(items.len());
        let mut slots = Vec::with_capacity(items.len());
        for (item, reply) in items {
            let due = match item.request {
                VnodeRequest::Get { .. } => Due::Get,
                _ => Due::Put,
            };
            slots.push(Slot {
                partition: item.partition,
                reply,
                due,
            });
            requests.push(item);
        }
        self.send_one_batch(node, requests, slots);
    }
}

impl ReplyRoute for NetRemote {
    fn reply(&self, node: &NodeName, request_id: u64, reply: Reply) {
        self.send_reply(node, request_id, reply.partition, &reply.reply);
    }
}

impl fmt::Debug for NetRemote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetRemote")
            .field("node", self.transport.local())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

/// The error a request that could not be sent is answered with.
fn send_error(e: SendError, peer: &NodeName) -> KvError {
    match e {
        SendError::TooLarge { size, max } => KvError::TooLarge {
            what: "object",
            size,
            max,
        },
        _ => KvError::Unreachable(peer.to_string()),
    }
}

/// A message with a field above the format's limits.
fn too_large(e: wire::WireError) -> KvError {
    match e {
        wire::WireError::TooLong { what, len, max } => KvError::TooLarge {
            what,
            size: len,
            max,
        },
        other => KvError::Storage(eddy_storage::StorageError::Engine {
            engine: wire::OTHER_ENGINE,
            source: other.to_string().into(),
        }),
    }
}
