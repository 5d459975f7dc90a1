//! Preflists as coordinators use them: each vnode of a key's preflist with
//! its address, whether it is a primary, and whether it is on this node.
//!
//! A key's primary preflist depends only on the ring, the key's partition
//! and n_val, so a [`RingView`] computes each one once and hands out
//! shared copies: a request with every owner up allocates nothing for its
//! preflist. Only when an owner is down is a preflist with fallbacks built
//! for the request.
//!
//! Invariant: a view's cached preflists are those of its own ring; a new
//! ring comes with a new view.

use std::sync::{Arc, OnceLock};

use eddy_ring::{Annotation, NodeName, Partition, Ring};

use crate::node::{Liveness, Node};
use eddy_vnode::msg::VnodeId;

/// The largest n_val whose preflists are cached.
const CACHED_N_MAX: u32 = 8;

/// One vnode of a request's preflist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreflistEntry {
    pub id: VnodeId,
    /// The partition's owner (not a fallback standing in for it).
    pub primary: bool,
    /// On this node.
    pub local: bool,
}

/// A ring, and the primary preflists computed from it so far.
#[derive(Debug)]
pub struct RingView {
    ring: Ring,
    /// This node, to mark local entries.
    me: NodeName,
    /// By `partition * CACHED_N_MAX + n_val - 1`.
    primaries: Vec<OnceLock<Arc<[PreflistEntry]>>>,
}

impl RingView {
    pub fn new(ring: Ring, me: NodeName) -> RingView {
        let slots = ring.size() as usize * CACHED_N_MAX as usize;
        RingView {
            ring,
            me,
            primaries: (0..slots).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The ring.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// The primary preflist of a key in partition `first`.
    fn primaries(&self, hash: u64, n_val: u32) -> Arc<[PreflistEntry]> {
        let build = || -> Arc<[PreflistEntry]> {
            let list = self.ring.preflist(hash, n_val);
            list.into_iter()
                .map(|(p, node)| self.entry(p, node, true))
                .collect()
        };
        if n_val == 0 || n_val > CACHED_N_MAX {
            return build();
        }
        let first = self.ring.partition_of(hash).0 as usize;
        let slot = first * CACHED_N_MAX as usize + (n_val - 1) as usize;
        self.primaries[slot].get_or_init(build).clone()
    }

    fn entry(&self, partition: Partition, node: &NodeName, primary: bool) -> PreflistEntry {
        PreflistEntry {
            local: *node == self.me,
            id: VnodeId {
                partition,
                node: node.clone(),
            },
            primary,
        }
    }

    /// The preflist with fallbacks for owners `liveness` reports down.
    fn with_fallbacks(
        &self,
        hash: u64,
        n_val: u32,
        liveness: &dyn Liveness,
    ) -> Arc<[PreflistEntry]> {
        let up = |node: &NodeName| *node == self.me || liveness.is_up(node);
        self.ring
            .preflist_ann(hash, n_val, up)
            .into_iter()
            .map(|(p, node, ann)| self.entry(p, node, ann == Annotation::Primary))
            .collect()
    }
}

impl std::ops::Deref for RingView {
    type Target = Ring;

    fn deref(&self) -> &Ring {
        &self.ring
    }
}

impl Node {
    /// The vnodes a key's requests go to (Riak's `get_apl_ann`): its
    /// n_val partitions' owners that are up, then for each one that is
    /// down a fallback: the next up node along the ring, running a vnode
    /// for that partition (design note 010 §4). Fewer than n_val entries
    /// when too few nodes are up. Without a failure detector (a single
    /// node) every owner counts as up.
    pub(crate) fn preflist_entries(&self, hash: u64, n_val: u32) -> Arc<[PreflistEntry]> {
        let view = self.ring_now();
        let primaries = view.primaries(hash, n_val);
        match &self.liveness {
            Some(l) if !primaries.iter().all(|e| e.local || l.is_up(&e.id.node)) => {
                view.with_fallbacks(hash, n_val, &**l)
            }
            _ => primaries,
        }
    }
}
