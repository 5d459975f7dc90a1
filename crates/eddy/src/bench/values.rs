//! Value generation: deterministic pseudo-random bytes with a chosen share
//! that compresses.
//!
//! All values are slices of one pool built up front, so producing a value
//! costs nothing inside the timed loop. The pool is made of 32-byte chunks;
//! each chunk is fresh random bytes or, with probability `compressibility`, a
//! repeat of the chunk before it. lz4 finds the repeats and cannot shrink the
//! rest, so compression gains are neither zero (random bytes) nor fantastic
//! (all zeros).

use super::keys::SplitMix64;

const CHUNK_BYTES: usize = 32;
/// Distinct starting offsets, so consecutive values differ.
const POOL_EXTRA_BYTES: usize = 1 << 20;

/// A source of values of one size.
#[derive(Clone, Debug)]
pub struct ValuePool {
    bytes: Vec<u8>,
    value_size: usize,
}

impl ValuePool {
    /// Values of `value_size` bytes, `compressibility` in `0.0..=1.0`.
    pub fn new(value_size: usize, compressibility: f64, seed: u64) -> Self {
        let len = value_size + POOL_EXTRA_BYTES;
        let mut rng = SplitMix64::new(seed);
        let repeat_below = (compressibility.clamp(0.0, 1.0) * u32::MAX as f64) as u64;
        let mut bytes = Vec::with_capacity(len + CHUNK_BYTES);
        while bytes.len() < len {
            let repeat = bytes.len() >= CHUNK_BYTES && (rng.next_u64() >> 32) < repeat_below;
            if repeat {
                let start = bytes.len() - CHUNK_BYTES;
                bytes.extend_from_within(start..start + CHUNK_BYTES);
            } else {
                for _ in 0..CHUNK_BYTES / 8 {
                    bytes.extend_from_slice(&rng.next_u64().to_le_bytes());
                }
            }
        }
        ValuePool { bytes, value_size }
    }

    /// The value written by op `i` (8-byte aligned offsets into the pool).
    pub fn value(&self, i: u64) -> &[u8] {
        let start = (i.wrapping_mul(8) % POOL_EXTRA_BYTES as u64) as usize;
        &self.bytes[start..start + self.value_size]
    }

    /// Bytes per value.
    pub fn value_size(&self) -> usize {
        self.value_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_the_asked_size_and_differ() {
        let pool = ValuePool::new(100, 0.5, 1);
        assert_eq!(pool.value(0).len(), 100);
        assert_eq!(pool.value(u64::MAX).len(), 100);
        assert_ne!(pool.value(0), pool.value(1));
    }

    #[test]
    fn values_are_not_constant() {
        let pool = ValuePool::new(4096, 0.5, 1);
        let v = pool.value(3);
        assert!(v.iter().any(|&b| b != v[0]));
    }

    #[test]
    fn compressibility_sets_the_share_of_repeated_chunks() {
        let repeated = |c: f64| {
            let pool = ValuePool::new(0, c, 9);
            let chunks: Vec<&[u8]> = pool.bytes.chunks(CHUNK_BYTES).collect();
            let n = chunks.windows(2).filter(|w| w[0] == w[1]).count();
            n as f64 / chunks.len() as f64
        };
        assert_eq!(repeated(0.0), 0.0);
        assert!((repeated(0.5) - 0.5).abs() < 0.02);
        assert!(repeated(1.0) > 0.99);
    }

    #[test]
    fn same_seed_same_values() {
        let a = ValuePool::new(64, 0.3, 5);
        let b = ValuePool::new(64, 0.3, 5);
        assert_eq!(a.value(77), b.value(77));
    }
}
