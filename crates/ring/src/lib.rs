//! The consistent-hash ring, as plain data and pure functions.
//!
//! The 64-bit hash space is cut into `size` equal partitions (a power of two,
//! Riak's `ring_size`). A key hashes to one point; its preflist is the
//! partition holding that point and the `n_val - 1` partitions after it,
//! each with its owning node.
//!
//! Invariants: every partition has exactly one owner; a preflist has
//! `min(n_val, size)` distinct partitions.

use std::fmt;

/// Smallest ring Riak allows.
pub const RING_SIZE_MIN: u32 = 8;
/// Largest ring accepted (Riak's practical maximum).
pub const RING_SIZE_MAX: u32 = 1024;

/// A node's name, `name@host` (Riak's nodename).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeName(pub String);

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A partition by its position on the ring, `0..size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition(pub u32);

/// Why a ring could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// The size is not a power of two in the allowed range.
    #[error(
        "ring_size must be a power of two between {RING_SIZE_MIN} and {RING_SIZE_MAX}, got {0}"
    )]
    BadSize(u32),
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

/// Partitions and their owners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    owners: Vec<NodeName>,
}

impl Ring {
    /// A ring of `size` partitions all owned by `node` (a fresh single node).
    pub fn single(size: u32, node: NodeName) -> Result<Ring, RingError> {
        check_size(size)?;
        Ok(Ring {
            owners: vec![node; size as usize],
        })
    }

    /// Number of partitions.
    pub fn size(&self) -> u32 {
        self.owners.len() as u32
    }

    /// Every partition.
    pub fn partitions(&self) -> impl Iterator<Item = Partition> + use<> {
        (0..self.size()).map(Partition)
    }

    /// The node owning `p`.
    pub fn owner(&self, p: Partition) -> &NodeName {
        &self.owners[p.0 as usize]
    }

    /// The partition whose range holds `hash`.
    pub fn partition_of(&self, hash: u64) -> Partition {
        let shift = 64 - self.size().trailing_zeros();
        Partition((hash >> shift) as u32)
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
}

fn check_size(size: u32) -> Result<(), RingError> {
    if !size.is_power_of_two() || !(RING_SIZE_MIN..=RING_SIZE_MAX).contains(&size) {
        return Err(RingError::BadSize(size));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn node() -> NodeName {
        NodeName("eddy@127.0.0.1".into())
    }

    const PINNED: [u64; 3] = [
        0xc571_3adb_fe54_2f32,
        0xc499_8f91_69c2_a4f0,
        0xa32c_118f_4d14_c9bc,
    ];

    #[test]
    fn rejects_bad_sizes() {
        for size in [0, 7, 12, 2048] {
            assert_eq!(Ring::single(size, node()), Err(RingError::BadSize(size)));
        }
    }

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

    proptest! {
        #[test]
        fn preflists_have_distinct_partitions(hash: u64, n_val in 1u32..10, exp in 3u32..11) {
            let ring = Ring::single(1 << exp, node()).unwrap();
            let pl = ring.preflist(hash, n_val);
            prop_assert_eq!(pl.len() as u32, n_val.min(ring.size()));
            let mut parts: Vec<_> = pl.iter().map(|(p, _)| *p).collect();
            prop_assert_eq!(parts[0], ring.partition_of(hash));
            parts.sort();
            parts.dedup();
            prop_assert_eq!(parts.len() as u32, n_val.min(ring.size()));
        }

        #[test]
        fn partitions_split_the_hash_space_evenly(hash: u64) {
            let ring = Ring::single(64, node()).unwrap();
            let p = ring.partition_of(hash).0 as u64;
            let width = 1u64 << 58;
            prop_assert!(hash >= p * width && (p == 63 || hash < (p + 1) * width));
        }
    }
}
