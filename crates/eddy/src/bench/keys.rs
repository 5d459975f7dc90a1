//! Key generation: which key number each operation touches, and its bytes.
//!
//! Keys are numbers `0..key_count` encoded as 8-byte big-endian integers, so
//! byte order is numeric order and "sequential" means appends in key order.
//! Everything here is deterministic given a seed, so two runs with the same
//! options touch the same keys.

use crate::cli::KeyOrder;

/// The bytes of key number `n`.
pub fn key_bytes(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

/// The splitmix64 generator: tiny, fast, and good enough for choosing keys.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.state)
    }

    /// A number in `0..bound` (`bound` > 0); the slight modulo bias is
    /// irrelevant for choosing keys.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}

/// splitmix64's output function: a bijection on `u64` that scrambles bits.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A pseudo-random permutation of `0..len`, computed without a table: a
/// bijection on the next power of two, walked until it lands below `len`.
#[derive(Clone, Debug)]
pub struct KeyPermutation {
    len: u64,
    mask: u64,
    bits: u32,
    seed: u64,
}

impl KeyPermutation {
    /// The permutation of `0..len` chosen by `seed`.
    pub fn new(len: u64, seed: u64) -> Self {
        let bits = (64 - len.saturating_sub(1).leading_zeros()).max(1);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        KeyPermutation {
            len,
            mask,
            bits,
            seed: seed | 1,
        }
    }

    /// The image of `i` (`i < len`).
    pub fn apply(&self, i: u64) -> u64 {
        let mut x = i;
        loop {
            x = self.scramble(x);
            if x < self.len {
                return x;
            }
        }
    }

    /// Rounds of odd multiply and xorshift, each a bijection modulo 2^bits.
    fn scramble(&self, mut x: u64) -> u64 {
        let shift = (self.bits / 2).max(1);
        for round in 0..3u64 {
            let odd = (self.seed.wrapping_mul(round * 2 + 1) ^ 0x9E37_79B9) | 1;
            x = x.wrapping_mul(odd) & self.mask;
            x ^= x >> shift;
            x = x.wrapping_add(self.seed >> round) & self.mask;
        }
        x
    }
}

/// Chooses the key number of each write of a phase.
///
/// Op `i` of a write phase writes key `i mod key_count`, taken through a
/// permutation in random order: every key is written once per pass.
#[derive(Clone, Debug)]
pub struct WriteKeys {
    key_count: u64,
    permutation: Option<KeyPermutation>,
}

impl WriteKeys {
    /// Key choice for writes over `0..key_count` (`key_count` > 0).
    pub fn new(order: KeyOrder, key_count: u64, seed: u64) -> Self {
        let permutation = match order {
            KeyOrder::Sequential => None,
            KeyOrder::Random => Some(KeyPermutation::new(key_count, seed)),
        };
        WriteKeys {
            key_count,
            permutation,
        }
    }

    /// The key number op `i` writes.
    pub fn key_for_op(&self, i: u64) -> u64 {
        let n = i % self.key_count;
        match &self.permutation {
            Some(p) => p.apply(n),
            None => n,
        }
    }
}

/// Chooses the key number of each read of one thread: a stride through the
/// key space in sequential order, uniform picks in random order.
#[derive(Clone, Debug)]
pub struct ReadKeys {
    key_count: u64,
    next: u64,
    random: Option<SplitMix64>,
}

impl ReadKeys {
    /// Reads for thread `thread` over `0..key_count` (`key_count` > 0).
    pub fn new(order: KeyOrder, key_count: u64, seed: u64, thread: usize) -> Self {
        let random = match order {
            KeyOrder::Sequential => None,
            KeyOrder::Random => Some(SplitMix64::new(mix64(seed ^ thread as u64))),
        };
        ReadKeys {
            key_count,
            next: thread as u64 * 7919 % key_count,
            random,
        }
    }

    /// The next key number to read.
    pub fn next_key(&mut self) -> u64 {
        if let Some(rng) = &mut self.random {
            return rng.below(self.key_count);
        }
        let n = self.next;
        self.next = (n + 1) % self.key_count;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn keys_sort_numerically() {
        assert!(key_bytes(255) < key_bytes(256));
        assert_eq!(key_bytes(1), [0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn permutation_is_a_bijection_for_awkward_sizes() {
        for len in [1u64, 2, 3, 7, 8, 9, 1000, 4097] {
            let p = KeyPermutation::new(len, 42);
            let seen: HashSet<u64> = (0..len).map(|i| p.apply(i)).collect();
            assert_eq!(seen.len() as u64, len, "len {len}");
            assert!(seen.iter().all(|&k| k < len));
        }
    }

    #[test]
    fn permutation_is_not_the_identity() {
        let p = KeyPermutation::new(1000, 42);
        let fixed = (0..1000).filter(|&i| p.apply(i) == i).count();
        assert!(fixed < 50, "{fixed} fixed points");
    }

    #[test]
    fn writes_cover_every_key_once_per_pass() {
        for order in [KeyOrder::Sequential, KeyOrder::Random] {
            let w = WriteKeys::new(order, 100, 7);
            let first: HashSet<u64> = (0..100).map(|i| w.key_for_op(i)).collect();
            assert_eq!(first.len(), 100);
            assert_eq!(w.key_for_op(3), w.key_for_op(103));
        }
    }

    #[test]
    fn sequential_reads_wrap_around() {
        let mut r = ReadKeys::new(KeyOrder::Sequential, 3, 0, 0);
        let got: Vec<u64> = (0..5).map(|_| r.next_key()).collect();
        assert_eq!(got, [0, 1, 2, 0, 1]);
    }

    #[test]
    fn random_reads_stay_in_range_and_are_deterministic() {
        let mut a = ReadKeys::new(KeyOrder::Random, 10, 5, 1);
        let mut b = ReadKeys::new(KeyOrder::Random, 10, 5, 1);
        for _ in 0..100 {
            let k = a.next_key();
            assert!(k < 10);
            assert_eq!(k, b.next_key());
        }
    }
}
