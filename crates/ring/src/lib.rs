//! The consistent-hash ring, as plain data and pure functions.
//!
//! The 64-bit hash space is cut into `size` equal partitions (a power of two,
//! Riak's `ring_size`). A key hashes to one point; its preflist is the
//! partition holding that point and the `n_val - 1` partitions after it,
//! each with its owning node.
//!
//! - [`ring`]: who owns each partition, and the ownership transfers planned
//!   but not yet done (Riak's `next` list).
//! - [`claim`]: which member should own which partition after nodes join,
//!   leave or are replaced: balanced, spaced, and moving little.
//! - [`preflist`]: the preflist of a key with fallbacks for nodes that are
//!   down (Riak's `get_apl_ann`).
//! - [`coverage`]: one replica per key range for listing and queries (Riak's
//!   coverage plans).
//!
//! Nothing here does I/O, reads a clock or draws a random number: the same
//! input gives the same output on every node.
//!
//! Invariants: every partition has exactly one owner; a preflist has
//! `min(n_val, size)` distinct partitions; [`key_hash`] never changes.

pub mod claim;
pub mod coverage;
pub mod preflist;
pub mod ring;

pub use claim::{ClaimError, ClaimMethod, ClaimParams, ClaimPlan, claim, replace};
pub use coverage::{CoverageError, CoveragePlan, CoverageVnode, coverage_plan};
pub use preflist::Annotation;
pub use ring::{Ring, Transfer, partition_of};

use std::fmt;

/// Smallest ring Riak allows.
pub const RING_SIZE_MIN: u32 = 8;
/// Largest ring accepted (Riak's practical maximum).
pub const RING_SIZE_MAX: u32 = 1024;

/// A node's name, `name@host` (Riak's nodename).
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct NodeName(pub String);

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A partition by its position on the ring, `0..size`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Partition(pub u32);

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why a ring could not be built or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// The size is not a power of two in the allowed range.
    #[error(
        "ring_size must be a power of two between {RING_SIZE_MIN} and {RING_SIZE_MAX}, got {0}"
    )]
    BadSize(u32),
    /// A list of owners or next owners does not have one entry per partition.
    #[error("expected {expected} entries, one per partition, got {got}")]
    WrongLength {
        /// The ring's size.
        expected: u32,
        /// The entries given.
        got: u32,
    },
    /// A partition outside `0..size`.
    #[error("partition {0} is not on a ring of {1} partitions")]
    NoSuchPartition(Partition, u32),
    /// A transfer was to be finished for a partition that has none pending.
    #[error("partition {0} has no pending ownership transfer")]
    NoPendingTransfer(Partition),
    /// A pending transfer names the partition's current owner as its next one.
    #[error("partition {0} is planned to move to its own owner")]
    TransferToSelf(Partition),
}

/// The hash of a `(bucket type, bucket, key)`: xxh3-64 of a length-prefixed
/// encoding, so that no two distinct triples share an input.
pub fn key_hash(bucket_type: &[u8], bucket: &[u8], key: &[u8]) -> u64 {
    // Streamed: the same hash as of the concatenation, without building it.
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    for part in [bucket_type, bucket, key] {
        h.update(&(part.len() as u32).to_be_bytes());
        h.update(part);
    }
    h.digest()
}

pub(crate) fn check_size(size: u32) -> Result<(), RingError> {
    if !size.is_power_of_two() || !(RING_SIZE_MIN..=RING_SIZE_MAX).contains(&size) {
        return Err(RingError::BadSize(size));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PINNED: [u64; 3] = [
        0xc571_3adb_fe54_2f32,
        0xc499_8f91_69c2_a4f0,
        0xa32c_118f_4d14_c9bc,
    ];

    #[test]
    fn key_hash_values_are_pinned() {
        // Placement is persistent: these must never change.
        let got = [
            key_hash(b"default", b"b", b"k"),
            key_hash(b"", b"", b""),
            key_hash(b"maps", b"coupons", &[0, 255, 7]),
        ];
        assert_eq!(got, PINNED);
    }

    #[test]
    fn key_hash_separates_parts() {
        assert_ne!(key_hash(b"a", b"bc", b""), key_hash(b"ab", b"c", b""));
        assert_ne!(key_hash(b"", b"b", b"k"), key_hash(b"b", b"", b"k"));
    }
}
