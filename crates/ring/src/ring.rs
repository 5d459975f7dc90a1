//! The ring as data: the owner of every partition and, where the claimant
//! has planned an ownership change that handoff has not finished, the next
//! owner (Riak's `next` list).
//!
//! Invariants, checked by every constructor and by deserialisation: the size
//! is a power of two in `RING_SIZE_MIN..=RING_SIZE_MAX`; every partition has
//! exactly one owner; a next owner is never the partition's current owner.

use serde::{Deserialize, Serialize};

use crate::{NodeName, Partition, RingError, check_size};

/// Partitions, their owners and their pending ownership transfers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RingData", into = "RingData")]
pub struct Ring {
    owners: Vec<NodeName>,
    next: Vec<Option<NodeName>>,
}

/// A planned change of a partition's owner: handoff moves the partition's
/// data from `from` to `to`, then the ring records `to` as the owner.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Transfer {
    /// The partition that moves.
    pub partition: Partition,
    /// Its owner now.
    pub from: NodeName,
    /// Its owner once handoff is done.
    pub to: NodeName,
}

/// The serialised form, validated on the way in.
#[derive(Serialize, Deserialize)]
struct RingData {
    owners: Vec<NodeName>,
    next: Vec<Option<NodeName>>,
}

impl TryFrom<RingData> for Ring {
    type Error = RingError;

    fn try_from(data: RingData) -> Result<Ring, RingError> {
        Ring::from_owners(data.owners)?.with_next_owners(data.next)
    }
}

impl From<Ring> for RingData {
    fn from(ring: Ring) -> RingData {
        RingData {
            owners: ring.owners,
            next: ring.next,
        }
    }
}

impl Ring {
    /// A ring of `size` partitions all owned by `node` (a fresh single node).
    pub fn single(size: u32, node: NodeName) -> Result<Ring, RingError> {
        Ring::from_owners(vec![node; size as usize])
    }

    /// A ring whose partition `i` is owned by `owners[i]`, with nothing pending.
    pub fn from_owners(owners: Vec<NodeName>) -> Result<Ring, RingError> {
        check_size(u32::try_from(owners.len()).unwrap_or(u32::MAX))?;
        let next = vec![None; owners.len()];
        Ok(Ring { owners, next })
    }

    /// Number of partitions.
    pub fn size(&self) -> u32 {
        self.owners.len() as u32
    }

    /// Every partition.
    pub fn partitions(&self) -> impl Iterator<Item = Partition> + use<> {
        (0..self.size()).map(Partition)
    }

    /// The node owning `p`. Panics if `p` is not on the ring.
    pub fn owner(&self, p: Partition) -> &NodeName {
        &self.owners[p.0 as usize]
    }

    /// Every partition's owner, in partition order.
    pub fn owners(&self) -> &[NodeName] {
        &self.owners
    }

    /// The node `p` is being handed to, if a transfer is pending. Panics if
    /// `p` is not on the ring.
    pub fn next_owner(&self, p: Partition) -> Option<&NodeName> {
        self.next[p.0 as usize].as_ref()
    }

    /// The owner of `p` once every pending transfer is done.
    pub fn future_owner(&self, p: Partition) -> &NodeName {
        self.next_owner(p).unwrap_or_else(|| self.owner(p))
    }

    /// The pending transfers, in partition order.
    pub fn pending(&self) -> impl Iterator<Item = Transfer> + '_ {
        self.owners
            .iter()
            .zip(&self.next)
            .enumerate()
            .filter_map(|(i, (from, to))| {
                Some(Transfer {
                    partition: Partition(i as u32),
                    from: from.clone(),
                    to: to.clone()?,
                })
            })
    }

    /// Whether no transfer is pending (Riak's ring is "ready").
    pub fn is_settled(&self) -> bool {
        self.next.iter().all(Option::is_none)
    }

    /// The distinct owners, sorted by name.
    pub fn members(&self) -> Vec<&NodeName> {
        let mut members: Vec<&NodeName> = self.owners.iter().collect();
        members.sort();
        members.dedup();
        members
    }

    /// The partitions `node` owns, in order.
    pub fn owned_by(&self, node: &NodeName) -> Vec<Partition> {
        self.partitions()
            .filter(|p| self.owner(*p) == node)
            .collect()
    }

    /// This ring with the transfer of `p` done: its next owner becomes its
    /// owner.
    pub fn with_transfer_done(&self, p: Partition) -> Result<Ring, RingError> {
        let i = self.index(p)?;
        let mut ring = self.clone();
        let to = ring.next[i].take().ok_or(RingError::NoPendingTransfer(p))?;
        ring.owners[i] = to;
        Ok(ring)
    }

    /// This ring with the transfers that make `target` its owners: partition
    /// `i` gets next owner `target[i]` where that differs from its owner, and
    /// none where it is the same. Earlier pending transfers are replaced.
    pub fn with_target(&self, target: &[NodeName]) -> Result<Ring, RingError> {
        let next = self
            .owners
            .iter()
            .zip(target)
            .map(|(owner, to)| (owner != to).then(|| to.clone()))
            .collect();
        self.check_len(target.len())?;
        self.clone().with_next_owners(next)
    }

    /// The ring every pending transfer would leave: next owners become owners.
    pub fn future(&self) -> Ring {
        let owners = self.partitions().map(|p| self.future_owner(p).clone());
        Ring {
            owners: owners.collect(),
            next: vec![None; self.owners.len()],
        }
    }

    /// The partition whose range holds `hash`.
    pub fn partition_of(&self, hash: u64) -> Partition {
        partition_of(self.size(), hash)
    }

    /// The primary preflist of `hash`: `min(n_val, size)` partitions starting
    /// with the one holding `hash`, with their owners.
    pub fn preflist(&self, hash: u64, n_val: u32) -> Vec<(Partition, &NodeName)> {
        let first = self.partition_of(hash).0;
        let n = n_val.min(self.size());
        (0..n)
            .map(|i| Partition((first + i) % self.size()))
            .map(|p| (p, self.owner(p)))
            .collect()
    }

    fn with_next_owners(mut self, next: Vec<Option<NodeName>>) -> Result<Ring, RingError> {
        self.check_len(next.len())?;
        let to_self = self
            .owners
            .iter()
            .zip(&next)
            .position(|(o, n)| Some(o) == n.as_ref());
        if let Some(i) = to_self {
            return Err(RingError::TransferToSelf(Partition(i as u32)));
        }
        self.next = next;
        Ok(self)
    }

    fn check_len(&self, got: usize) -> Result<(), RingError> {
        if got != self.owners.len() {
            return Err(RingError::WrongLength {
                expected: self.size(),
                got: u32::try_from(got).unwrap_or(u32::MAX),
            });
        }
        Ok(())
    }

    fn index(&self, p: Partition) -> Result<usize, RingError> {
        if p.0 >= self.size() {
            return Err(RingError::NoSuchPartition(p, self.size()));
        }
        Ok(p.0 as usize)
    }
}

/// The partition whose range holds `hash` on a ring of `size` partitions
/// (a power of two).
pub fn partition_of(size: u32, hash: u64) -> Partition {
    let shift = 64 - size.trailing_zeros();
    Partition((hash >> shift) as u32)
}
