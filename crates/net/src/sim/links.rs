//! One node's connections to one peer lost and not reopened: what a TCP
//! node sees when its connection to a peer resets and every re-dial fails
//! (a firewall, a peer's full accept queue), while the peer itself runs
//! and its own connections back still work.
//!
//! While `from`'s link to `to` is down: messages in flight from `from` to
//! `to` are lost, `from`'s sends and calls to `to` fail `Unreachable` at
//! once, its calls waiting on `to` fail `Disconnected`, and `from` sees
//! [`PeerState::Lost`] for `to` on both lanes (then `Connected` when the
//! link comes back). Messages from `to` to `from` are untouched: in TCP
//! they travel on `to`'s own connection.

use super::{SimError, SimNetwork, State};
use crate::{CallError, Lane, NodeName, PeerState};

impl SimNetwork {
    /// Takes down `from`'s connections to `to` until [`SimNetwork::reconnect`].
    pub fn disconnect(&self, from: &NodeName, to: &NodeName) -> Result<(), SimError> {
        let mut state = self.shared.state.lock();
        state.known(from)?;
        state.known(to)?;
        if !state.down_links.insert((from.clone(), to.clone())) {
            return Ok(());
        }
        let ended: Vec<u64> = state
            .calls
            .iter()
            .filter(|(_, p)| p.caller == *from && p.callee == *to)
            .map(|(id, _)| *id)
            .collect();
        for id in ended {
            if let Some(p) = state.calls.remove(&id) {
                let _ = p.tx.send(Err(CallError::Disconnected));
            }
        }
        state.tell(
            from,
            to,
            &PeerState::Lost("the connection was reset".into()),
        );
        Ok(())
    }

    /// Lets `from` connect to `to` again; it sees `Connected`.
    pub fn reconnect(&self, from: &NodeName, to: &NodeName) -> Result<(), SimError> {
        let mut state = self.shared.state.lock();
        state.known(from)?;
        state.known(to)?;
        if state.down_links.remove(&(from.clone(), to.clone())) {
            state.tell(from, to, &PeerState::Connected);
        }
        Ok(())
    }
}

impl State {
    /// Whether `from`'s connections to `to` are down.
    pub(super) fn link_down(&self, from: &NodeName, to: &NodeName) -> bool {
        !self.down_links.is_empty() && self.down_links.contains(&(from.clone(), to.clone()))
    }

    fn known(&self, name: &NodeName) -> Result<(), SimError> {
        match self.nodes.contains_key(name) {
            true => Ok(()),
            false => Err(SimError::UnknownNode(name.clone())),
        }
    }

    /// Tells `node`, if it runs, that its connections to `peer` changed.
    fn tell(&self, node: &NodeName, peer: &NodeName, peer_state: &PeerState) {
        let Some(n) = self.nodes.get(node).filter(|n| !n.crashed) else {
            return;
        };
        for lane in [Lane::Control, Lane::Bulk] {
            n.core.emit(peer, lane, peer_state.clone());
        }
    }
}
