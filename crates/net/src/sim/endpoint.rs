//! One node's side of a simulated network: what its [`crate::Transport`]
//! does for sends and calls to other nodes.
//!
//! Invariant: a node that is crashed, or an endpoint of an older
//! incarnation, sends nothing, and a node sends nothing to a peer while
//! its connections to that peer are down; a call ends with its answer,
//! `Disconnected` (crash, lost connection), or `Timeout` at its deadline,
//! whichever comes first.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::deliver::{Kind, Message};
use super::{Pending, Shared, State};
use crate::{CallError, Lane, NodeName, SendError};

/// A node's handle on the network.
#[derive(Clone)]
pub(crate) struct Endpoint {
    shared: Arc<Shared>,
    name: NodeName,
    incarnation: u64,
}

impl Endpoint {
    pub(crate) fn new(shared: Arc<Shared>, name: NodeName, incarnation: u64) -> Endpoint {
        Endpoint {
            shared,
            name,
            incarnation,
        }
    }

    pub(crate) fn send(&self, to: &NodeName, lane: Lane, body: Bytes) -> Result<(), SendError> {
        let mut state = self.shared.state.lock();
        self.check(&state, to)?;
        let msg = Message::new(self.name.clone(), to.clone(), lane, Kind::OneWay, body);
        state.route(msg);
        drop(state);
        self.shared.wake.notify_one();
        Ok(())
    }

    pub(crate) async fn call(
        &self,
        to: &NodeName,
        lane: Lane,
        body: Bytes,
        deadline: Instant,
    ) -> Result<Bytes, CallError> {
        let (id, rx) = {
            let mut state = self.shared.state.lock();
            self.check(&state, to)?;
            let id = state.next_call;
            state.next_call += 1;
            let (tx, rx) = oneshot::channel();
            let pending = Pending {
                caller: self.name.clone(),
                callee: to.clone(),
                tx,
            };
            state.calls.insert(id, pending);
            let msg = Message::new(self.name.clone(), to.clone(), lane, Kind::Request(id), body);
            state.route(msg);
            (id, rx)
        };
        self.shared.wake.notify_one();
        let _forget = ForgetOnDrop {
            shared: &self.shared,
            id,
        };
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(CallError::Disconnected),
            Err(_) => Err(CallError::Timeout),
        }
    }

    pub(crate) fn shutdown(&self) {
        let _ = self.shared.crash(&self.name);
    }

    /// Refuses at once what a real node would fail to connect for.
    fn check(&self, state: &State, to: &NodeName) -> Result<(), SendError> {
        let me = state.nodes.get(&self.name);
        if me.is_none_or(|n| n.crashed || n.incarnation != self.incarnation) {
            return Err(SendError::Shutdown);
        }
        match state.nodes.get(to) {
            None => Err(SendError::Unreachable(
                format!("no node {to} on the network").into(),
            )),
            Some(n) if n.crashed => Err(SendError::Unreachable(format!("{to} is down").into())),
            Some(_) if state.link_down(&self.name, to) => Err(SendError::Unreachable(
                format!("the connection to {to} is down").into(),
            )),
            Some(_) => Ok(()),
        }
    }
}

/// Forgets a call's waiter when the call ends, however it ends.
struct ForgetOnDrop<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        self.shared.state.lock().calls.remove(&self.id);
    }
}
