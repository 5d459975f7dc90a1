//! Preflists with fallbacks (Riak's `get_apl_ann`).
//!
//! The primary preflist of a key is the `n_val` partitions from the one
//! holding its hash, with their owners. When owners are down, a sloppy
//! quorum still needs `n_val` places to write: for each down primary, in
//! order, the owner of the next partition after the preflist (walking the
//! ring partition by partition, never wrapping back into the preflist)
//! whose owner is up takes its place, as a fallback vnode for the down
//! primary's partition. Only down nodes are skipped, as in Riak: a node
//! already in the answer may stand in again, so with two of three nodes up
//! a write still finds three vnodes, two of them on one node.
//!
//! Invariants: the up primaries come first, in ring order; each partition
//! appears at most once, so a node is never named twice for one partition;
//! a fallback is never the owner of the partition it stands in for (that
//! owner is down); with every owner up the answer is the primary preflist;
//! fewer than `n_val` entries only when the walk runs out of partitions
//! with up owners.

use crate::{NodeName, Partition, Ring};

/// Whether an entry of an annotated preflist is the partition's owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Annotation<'a> {
    /// The owner, up.
    Primary,
    /// An up node standing in for the partition's owner, which is down.
    Fallback {
        /// The owner it stands in for (where hinted handoff sends the data
        /// back).
        for_owner: &'a NodeName,
    },
}

impl Ring {
    /// The annotated preflist of `hash` (Riak's `get_apl_ann`): the up
    /// primaries of [`Ring::preflist`], then a fallback for each down one.
    /// A fallback entry names the down primary's partition: the fallback
    /// vnode for that partition lives on the fallback node, which may also
    /// hold another entry of the answer.
    pub fn preflist_ann(
        &self,
        hash: u64,
        n_val: u32,
        is_up: impl Fn(&NodeName) -> bool,
    ) -> Vec<(Partition, &NodeName, Annotation<'_>)> {
        let primaries = self.preflist(hash, n_val);
        let (up, down): (Vec<_>, Vec<_>) =
            primaries.iter().copied().partition(|(_, node)| is_up(node));
        let first = self.partition_of(hash).0;
        let after = primaries.len() as u32;
        let mut walk = (after..self.size())
            .map(|i| self.owner(Partition((first + i) % self.size())))
            .filter(|node| is_up(node));
        let fallbacks = down.into_iter().map_while(|(p, owner)| {
            let fallback = walk.next()?;
            Some((p, fallback, Annotation::Fallback { for_owner: owner }))
        });
        up.into_iter()
            .map(|(p, node)| (p, node, Annotation::Primary))
            .chain(fallbacks)
            .collect()
    }
}
