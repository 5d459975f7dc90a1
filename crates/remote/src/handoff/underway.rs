//! The transfers under way on a node: the outbound ones by partition and
//! the inbound ones being received. Made before the node, which asks it
//! whether a partition is being handed off (kv's `Transfers`: the reaper
//! waits while one is), and given to the node's [`Handoffs`], which
//! starts and ends the transfers it records.
//!
//! [`Handoffs`]: super::Handoffs

use std::collections::BTreeMap;
use std::sync::Arc;

use eddy_ring::Partition;
use parking_lot::Mutex;

use super::progress::TransferState;
use super::receiver::Inbound;
use super::sender::Outgoing;

/// A node's transfers under way, shared by its node and its handoffs.
#[derive(Default)]
pub struct Underway {
    /// The last outbound transfer of each partition.
    pub(crate) outgoing: Mutex<BTreeMap<u32, Arc<Outgoing>>>,
    /// The inbound transfers, and the ownership transfers lately received.
    pub(crate) inbound: Inbound,
}

impl Underway {
    /// No transfer yet.
    pub fn new() -> Arc<Underway> {
        Arc::default()
    }

    /// True while a transfer of `p` from or to this node is not over:
    /// a tombstone of `p` must not be reaped meanwhile.
    pub fn is_pending(&self, p: Partition) -> bool {
        let out = self
            .outgoing
            .lock()
            .get(&p.0)
            .is_some_and(|t| t.status.state() != TransferState::Dropped);
        out || self.inbound.is_active(p.0)
    }
}

impl eddy_kv::Transfers for Underway {
    fn is_pending(&self, p: Partition) -> bool {
        Underway::is_pending(self, p)
    }
}

impl std::fmt::Debug for Underway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let outgoing = self.outgoing.lock().len();
        f.debug_struct("Underway")
            .field("outgoing", &outgoing)
            .finish_non_exhaustive()
    }
}
