//! The vnodes a node runs, by partition: primaries, fallbacks and handoff
//! receivers alike (a node runs at most one vnode per partition).
//!
//! Every request looks its vnodes up here, so reads take a snapshot of the
//! table without a lock; adding or removing a vnode publishes a new table
//! (rare: a membership change, a fallback, a finished handoff).
//!
//! Invariant: a slot holds the vnode of its own partition.

use std::sync::Arc;

use arc_swap::ArcSwap;
use eddy_ring::Partition;
use parking_lot::Mutex;

use super::VnodeHandle;

/// The node's vnodes.
pub struct VnodeTable {
    slots: ArcSwap<Vec<Option<VnodeHandle>>>,
    /// Serialises writers (readers never wait).
    writer: Mutex<()>,
}

impl VnodeTable {
    /// An empty table for a ring of `size` partitions.
    pub fn new(size: u32) -> Self {
        VnodeTable {
            slots: ArcSwap::from_pointee(vec![None; size as usize]),
            writer: Mutex::new(()),
        }
    }

    /// The vnode of partition `p`, if this node runs one.
    pub fn get(&self, p: Partition) -> Option<VnodeHandle> {
        self.slots.load().get(p.0 as usize).cloned().flatten()
    }

    /// The table as it is now, indexed by partition (request paths: no
    /// reference counts taken).
    pub fn snapshot(&self) -> arc_swap::Guard<Arc<Vec<Option<VnodeHandle>>>> {
        self.slots.load()
    }

    /// Every vnode, in partition order.
    pub fn all(&self) -> Vec<VnodeHandle> {
        self.slots.load().iter().flatten().cloned().collect()
    }

    /// Adds `vnode`, returning the one it replaces.
    pub fn insert(&self, vnode: VnodeHandle) -> Option<VnodeHandle> {
        let at = vnode.partition.0 as usize;
        self.update(|slots| slots.get_mut(at).and_then(|s| s.replace(vnode)))
    }

    /// Removes partition `p`'s vnode, returning it.
    pub fn remove(&self, p: Partition) -> Option<VnodeHandle> {
        self.update(|slots| slots.get_mut(p.0 as usize).and_then(Option::take))
    }

    fn update<R>(&self, change: impl FnOnce(&mut Vec<Option<VnodeHandle>>) -> R) -> R {
        let _writing = self.writer.lock();
        let mut slots = Vec::clone(&self.slots.load());
        let out = change(&mut slots);
        self.slots.store(Arc::new(slots));
        out
    }
}

impl std::fmt::Debug for VnodeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let partitions: Vec<u32> = self.all().iter().map(|v| v.partition.0).collect();
        f.debug_struct("VnodeTable")
            .field("partitions", &partitions)
            .finish()
    }
}
