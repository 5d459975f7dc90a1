//! The membership service: one per node, it owns the node's
//! [`ClusterState`] and runs it over an [`eddy_net::Transport`].
//!
//! - gossip (`gossip`): digests to random members, full states where they
//!   differ, merged, saved, passed on;
//! - failure detection (`detector`, `probe`): pings with indirect probes
//!   and the transport's connection events; liveness feeds the claimant
//!   choice, `ring-status` and the kv layer's preflists, never the ring;
//! - the claimant's duties (`duties`): take-over, applying reported
//!   transfers, clearing down marks of members back up, re-reporting
//!   finished transfers;
//! - the admin operations (`admin`, `exec`), forwarded to the claimant
//!   where Riak does so, and bucket metadata writes pushed to every
//!   reachable member (`metadata`);
//! - the wire format (`wire`) and the incoming side (`handler`).
//!
//! Invariants: the state is saved before anything acts on it (every
//! change goes through one update path, one at a time); states are
//! exchanged only with members of this node's own state; the ring changes
//! only through the claimant's decisions, never through liveness.

mod admin;
mod config;
mod core;
mod detector;
mod duties;
mod error;
mod exec;
mod gossip;
mod handler;
mod metadata;
mod probe;
mod rpc;
pub mod wire;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use eddy_net::{HandlerAlreadySet, Incoming, Transport};
use eddy_ring::{NodeName, Ring};
use tokio::sync::watch;

pub use self::config::{MembershipConfig, TRANSFER_LIMIT_DEFAULT, system_clock_ms};
use self::core::Inner;
pub use self::core::MetadataApplier;
pub use self::error::MembershipError;
pub use self::metadata::PushReport;
use crate::state::ClusterState;
use eddy_model::metadata::register::BucketMetadata;

/// A node's membership service; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Membership {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Membership({})", self.inner.me)
    }
}

impl Membership {
    /// Starts the service for the transport's node with `state` (loaded
    /// from `config.state_path` or new), saving it first. Must be called
    /// inside a tokio runtime. Incoming messages reach the service only
    /// through [`Membership::handle`] (or [`Membership::install_handler`]).
    pub async fn start(
        config: MembershipConfig,
        transport: Transport,
        state: ClusterState,
    ) -> Result<Membership, MembershipError> {
        self::core::save(&config, Arc::new(state.clone())).await?;
        let inner = Arc::new(Inner::new(config, transport, state));
        inner.learn_members(&inner.current());
        let tasks = [
            tokio::spawn(gossip::gossip_loop(inner.clone())),
            tokio::spawn(probe::probe_loop(inner.clone())),
            tokio::spawn(probe::watch_peers(inner.clone())),
            tokio::spawn(duties::duties_loop(inner.clone())),
        ];
        inner
            .tasks
            .lock()
            .extend(tasks.iter().map(tokio::task::JoinHandle::abort_handle));
        Ok(Membership { inner })
    }

    /// Takes `incoming` if it is a membership message (its first byte is
    /// [`wire::SERVICE`]); gives it back otherwise, for the next handler.
    pub fn handle(&self, incoming: Incoming) -> Option<Incoming> {
        self.inner.dispatch(incoming)
    }

    /// Registers a transport handler that gives the service its messages
    /// and drops the rest: for a node that runs nothing else (tests).
    pub fn install_handler(&self) -> Result<(), HandlerAlreadySet> {
        let service = self.clone();
        self.inner.transport.set_handler(Arc::new(move |incoming| {
            if let Some(other) = service.handle(incoming) {
                tracing::debug!(peer = %other.from, "dropped a message no service takes");
            }
        }))
    }

    /// Stops the service's tasks; later operations fail with
    /// [`MembershipError::Shutdown`]. The transport is left alone.
    pub fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::Release);
        for task in std::mem::take(&mut *self.inner.tasks.lock()) {
            task.abort();
        }
    }

    /// This node's name.
    pub fn node(&self) -> &NodeName {
        &self.inner.me
    }

    /// Whether the failure detector believes `node` up (this node always
    /// is; a node that is not a member never is).
    pub fn is_up(&self, node: &NodeName) -> bool {
        self.inner.is_up(node)
    }

    /// A snapshot of the node's (saved) cluster state.
    pub fn state(&self) -> ClusterState {
        (*self.inner.current()).clone()
    }

    /// The ring as this node knows it.
    pub fn ring(&self) -> Arc<Ring> {
        self.inner.ring_watch().borrow().clone()
    }

    /// The ring, updated on every change (kv and handoff react to it).
    pub fn ring_watch(&self) -> watch::Receiver<Arc<Ring>> {
        self.inner.ring_watch()
    }

    /// The bucket types and props, updated on every change.
    pub fn metadata_watch(&self) -> watch::Receiver<Arc<BucketMetadata>> {
        self.inner.metadata_watch()
    }

    /// Sets the applier told of every saved change to the bucket
    /// metadata (once), then hands it the current metadata. A change a
    /// member acknowledges (a push, a sync) was applied on that member
    /// first.
    pub fn on_metadata(&self, applier: MetadataApplier) {
        let _ = self.inner.metadata_applier.set(applier.clone());
        applier(self.inner.current().metadata());
    }

    /// The members up, this node included, updated on every change.
    pub fn up_watch(&self) -> watch::Receiver<Arc<BTreeSet<NodeName>>> {
        self.inner.up_tx.subscribe()
    }

    /// This node's transfer limit (concurrent handoffs), as an operator
    /// last set it; kept in memory, like Riak's.
    pub fn transfer_limit_watch(&self) -> watch::Receiver<u32> {
        self.inner.limit_tx.subscribe()
    }
}
