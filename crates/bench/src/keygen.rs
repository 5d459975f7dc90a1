//! Key generators: which key each operation touches.
//!
//! A [`KeySpace`] is built once per run and shared; each worker draws from
//! it through its own [`KeyGen`]. Keys are numbers first, bytes last
//! ([`KeySpace::encode`]).
//!
//! - `sequential_int`: one counter shared by all workers, `0, 1, … max-1`,
//!   then again from 0.
//! - `partitioned_sequential_int`: worker `i` of `w` walks its own slice
//!   `[i·max/w, (i+1)·max/w)` in order, wrapping; the slices cover the key
//!   space exactly once.
//! - `uniform_int`: uniform over `0..max`.
//! - `pareto_int`: Pareto with shape 1.16 (the "80/20" shape), scaled so
//!   about 80 % of draws fall in the lowest 20 % of `0..max` (draws past
//!   `max` are drawn again).
//! - `eightytwenty_int`: 80 % of draws uniform over the lowest 20 % of keys,
//!   20 % uniform over the rest.
//! - `unique`: every put takes a fresh insertion number from a shared
//!   counter; reads pick uniformly among numbers already handed out (less
//!   the last `concurrent`, which may still be in flight). `key_order` keys
//!   are the insertion numbers; `skew_order` keys are a fixed bijection of
//!   them, so puts land in pseudo-random key order and never repeat.
//!
//! With `order = "skew_order"`, `sequential_int` and
//! `partitioned_sequential_int` hand out the same numbers, but each is
//! taken through a fixed permutation of `0..max` ([`Permutation`]) before
//! it becomes a key: every key once per pass, in pseudo-random order.
//!
//! With `once`, `sequential_int` and `partitioned_sequential_int` do not
//! wrap: each number is handed out once, then draws answer `None` (the
//! worker's keys are used up).
//!
//! Invariants: every number is below `max` (unique: below the claimed
//! count); unique puts never repeat a key; with `once`, no number is
//! handed out twice and every one is handed out before a draw answers
//! `None` (for `partitioned_sequential_int`: every one of the worker's
//! slice).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;

use crate::config::{KeyFormat, KeyGenerator, KeysConfig, UniqueOrder};

/// Pareto shape whose 20 % of keys get 80 % of draws.
const PARETO_SHAPE: f64 = 1.16;
/// Seed of `skew_order`'s permutation: fixed, so that a load and the
/// runs after it agree on the keys.
const PERMUTATION_SEED: u64 = 0x5EED_0F0D_E5A5;
/// Digits of decimal keys (zero-padded so byte order is number order).
const DECIMAL_WIDTH: usize = 12;

/// The key space of a run, shared by its workers.
#[derive(Debug)]
pub struct KeySpace {
    generator: KeyGenerator,
    max: u64,
    order: UniqueOrder,
    prefix: Vec<u8>,
    format: KeyFormat,
    workers: u64,
    /// Each number once, no wrapping.
    once: bool,
    /// Next number of `sequential_int`; numbers handed out by `unique`.
    counter: AtomicU64,
    /// `skew_order` of a sequential generator.
    permutation: Option<Permutation>,
}

impl KeySpace {
    /// The key space `config` describes, for `workers` workers.
    pub fn new(config: &KeysConfig, workers: usize) -> KeySpace {
        let max = config.max.unwrap_or(u64::MAX);
        let order = config.order.unwrap_or(UniqueOrder::KeyOrder);
        let sequential = matches!(
            config.generator,
            KeyGenerator::SequentialInt | KeyGenerator::PartitionedSequentialInt
        );
        let permutation = (sequential && order == UniqueOrder::SkewOrder)
            .then(|| Permutation::new(max, PERMUTATION_SEED));
        KeySpace {
            generator: config.generator,
            max,
            order,
            permutation,
            prefix: config.prefix.as_bytes().to_vec(),
            format: config.format,
            workers: workers.max(1) as u64,
            once: config.once,
            counter: AtomicU64::new(0),
        }
    }

    /// Marks `0..n` as inserted (after a preload of a `unique` space).
    pub fn mark_inserted(&self, n: u64) {
        if self.generator == KeyGenerator::Unique {
            self.counter.fetch_max(n, Ordering::Relaxed);
        }
    }

    /// Numbers `unique` has handed out.
    pub fn inserted(&self) -> u64 {
        self.counter.load(Ordering::Relaxed)
    }

    /// The generator's name.
    pub fn generator(&self) -> KeyGenerator {
        self.generator
    }

    /// Whether each key is handed out once.
    pub fn once(&self) -> bool {
        self.once
    }

    /// A copy at the same point whose draws leave this space's alone.
    pub fn detached(&self) -> KeySpace {
        KeySpace {
            prefix: self.prefix.clone(),
            counter: AtomicU64::new(self.counter.load(Ordering::Relaxed)),
            ..*self
        }
    }

    /// The key bytes of number `n`, written into `out` (cleared first).
    pub fn encode(&self, n: u64, out: &mut Vec<u8>) {
        let n = match (self.generator, self.order, &self.permutation) {
            (KeyGenerator::Unique, UniqueOrder::SkewOrder, _) => scramble(n),
            (_, _, Some(p)) => p.apply(n),
            _ => n,
        };
        use std::io::Write;
        out.clear();
        out.extend_from_slice(&self.prefix);
        // Writing into a Vec cannot fail.
        let _ = match self.format {
            KeyFormat::Binary => out.write_all(&n.to_be_bytes()),
            KeyFormat::Decimal => write!(out, "{n:0width$}", width = DECIMAL_WIDTH),
            KeyFormat::Plain => write!(out, "{n}"),
        };
    }

    /// The key bytes of number `n`.
    pub fn key(&self, n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(n, &mut out);
        out
    }
}

/// A bijection of `u64` (the splitmix64 finaliser: xor-shifts and odd
/// multipliers, each invertible), used as `skew_order`.
pub fn scramble(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A pseudo-random permutation of `0..len`, computed without a table: a
/// bijection on the next power of two (rounds of odd multiplications and
/// xor-shifts, each invertible modulo 2^bits), walked until it lands below
/// `len` (cycle walking).
#[derive(Clone, Copy, Debug)]
pub struct Permutation {
    len: u64,
    mask: u64,
    bits: u32,
    seed: u64,
}

impl Permutation {
    /// The permutation of `0..len` chosen by `seed`.
    pub fn new(len: u64, seed: u64) -> Self {
        let bits = (64 - len.saturating_sub(1).leading_zeros()).max(1);
        let mask = match bits {
            64 => u64::MAX,
            _ => (1 << bits) - 1,
        };
        Permutation {
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

/// One worker's view of the key space.
#[derive(Debug)]
pub struct KeyGen {
    space: Arc<KeySpace>,
    /// `partitioned_sequential_int`: this worker's slice and position.
    lo: u64,
    hi: u64,
    cursor: u64,
}

impl KeyGen {
    /// Worker `worker`'s generator.
    pub fn new(space: Arc<KeySpace>, worker: usize) -> KeyGen {
        let w = worker as u64 % space.workers;
        let slice =
            |i: u64| (u128::from(space.max) * u128::from(i) / u128::from(space.workers)) as u64;
        let (mut lo, mut hi) = (slice(w), slice(w + 1));
        if lo == hi && !space.once && space.max > 0 {
            // More workers than keys: this worker's slice is empty, so it
            // shares one key with another instead of finding none.
            lo = w % space.max;
            hi = lo + 1;
        }
        KeyGen {
            space,
            lo,
            hi,
            cursor: lo,
        }
    }

    /// The shared key space.
    pub fn space(&self) -> &KeySpace {
        &self.space
    }

    /// The number a put touches: fresh for `unique`, else as a read;
    /// `None` once the keys are used up (`once`).
    pub fn next_write(&mut self, rng: &mut impl Rng) -> Option<u64> {
        match self.space.generator {
            KeyGenerator::Unique => Some(self.space.counter.fetch_add(1, Ordering::Relaxed)),
            _ => self.next_read(rng),
        }
    }

    /// The number a get, update or delete touches (0 for a `unique` space
    /// with nothing inserted yet); `None` once the keys are used up
    /// (`once`).
    pub fn next_read(&mut self, rng: &mut impl Rng) -> Option<u64> {
        let max = self.space.max;
        let n = match self.space.generator {
            KeyGenerator::SequentialInt => {
                let n = self.space.counter.fetch_add(1, Ordering::Relaxed);
                match self.space.once {
                    true if n >= max => return None,
                    true => n,
                    false => n % max,
                }
            }
            KeyGenerator::PartitionedSequentialInt => return self.next_in_slice(),
            KeyGenerator::UniformInt => rng.random_range(0..max),
            KeyGenerator::ParetoInt => pareto(rng, max),
            KeyGenerator::EightytwentyInt => eighty_twenty(rng, max),
            KeyGenerator::Unique => {
                let done = self.space.inserted();
                let settled = done.saturating_sub(self.space.workers).max(done.min(1));
                rng.random_range(0..settled.max(1))
            }
        };
        Some(n)
    }

    fn next_in_slice(&mut self) -> Option<u64> {
        let n = self.cursor;
        if n >= self.hi {
            return None; // only with `once`: the slice is used up
        }
        self.cursor = match n + 1 >= self.hi && !self.space.once {
            true => self.lo,
            false => n + 1,
        };
        Some(n)
    }
}

/// A Pareto draw in `0..max`, 80 % of them in the lowest fifth.
pub fn pareto(rng: &mut impl Rng, max: u64) -> u64 {
    // With key = (X - 1)·max/15 for X ~ Pareto(1, 1.16):
    // P(key < max/5) = 1 - (1 + 3)^-1.16 ≈ 0.80, before keys past max
    // (≈ 4 % of draws) are drawn again.
    let scale = max as f64 / 15.0;
    loop {
        let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
        let x = u.powf(-1.0 / PARETO_SHAPE) - 1.0;
        let k = (x * scale) as u64;
        if k < max {
            return k;
        }
    }
}

/// 80 % of draws in the lowest fifth of `0..max`, 20 % in the rest.
pub fn eighty_twenty(rng: &mut impl Rng, max: u64) -> u64 {
    let hot = (max / 5).max(1);
    if hot >= max || rng.random_bool(0.8) {
        rng.random_range(0..hot)
    } else {
        rng.random_range(hot..max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashSet;

    fn config(generator: KeyGenerator, max: Option<u64>) -> KeysConfig {
        KeysConfig {
            generator,
            max,
            order: None,
            prefix: String::new(),
            format: KeyFormat::Decimal,
            once: false,
        }
    }

    fn space(generator: KeyGenerator, max: Option<u64>, workers: usize) -> Arc<KeySpace> {
        Arc::new(KeySpace::new(&config(generator, max), workers))
    }

    fn once(generator: KeyGenerator, max: u64, workers: usize) -> Arc<KeySpace> {
        let config = KeysConfig {
            once: true,
            ..config(generator, Some(max))
        };
        Arc::new(KeySpace::new(&config, workers))
    }

    fn share_below(draws: &[u64], bound: u64) -> f64 {
        draws.iter().filter(|&&k| k < bound).count() as f64 / draws.len() as f64
    }

    #[test]
    fn partitioned_sequential_covers_the_space_once() {
        for (max, workers) in [(100, 7), (10, 10), (1000, 3), (5, 1)] {
            let s = space(KeyGenerator::PartitionedSequentialInt, Some(max), workers);
            let mut gens: Vec<_> = (0..workers).map(|w| KeyGen::new(s.clone(), w)).collect();
            let mut seen = Vec::new();
            for g in &mut gens {
                let len = g.hi - g.lo;
                seen.extend((0..len).filter_map(|_| g.next_in_slice()));
                assert_eq!(g.next_in_slice(), Some(g.lo), "wraps to its slice's start");
            }
            seen.sort_unstable();
            assert_eq!(
                seen,
                (0..max).collect::<Vec<_>>(),
                "max {max}, {workers} workers"
            );
        }
    }

    #[test]
    fn sequential_is_shared_and_wraps() {
        let s = space(KeyGenerator::SequentialInt, Some(5), 2);
        let (mut a, mut b) = (KeyGen::new(s.clone(), 0), KeyGen::new(s, 1));
        let mut rng = SmallRng::seed_from_u64(0);
        let got: Vec<_> = (0..6)
            .filter_map(|i| {
                if i % 2 == 0 {
                    a.next_read(&mut rng)
                } else {
                    b.next_read(&mut rng)
                }
            })
            .collect();
        assert_eq!(got, [0, 1, 2, 3, 4, 0]);
    }

    #[test]
    fn once_hands_out_every_number_exactly_once_then_none() {
        let mut rng = SmallRng::seed_from_u64(0);
        for (max, workers) in [(100, 7), (10, 10), (1000, 3), (5, 1)] {
            let s = once(KeyGenerator::PartitionedSequentialInt, max, workers);
            let mut gens: Vec<_> = (0..workers).map(|w| KeyGen::new(s.clone(), w)).collect();
            let mut seen = Vec::new();
            // Workers take turns, as they would at different speeds.
            for round in 0..=max {
                for (w, g) in gens.iter_mut().enumerate() {
                    if !(round + w as u64).is_multiple_of(3) {
                        seen.extend(g.next_write(&mut rng));
                    }
                }
            }
            for g in &mut gens {
                while let Some(n) = g.next_read(&mut rng) {
                    seen.push(n);
                }
                assert_eq!(g.next_write(&mut rng), None, "stays used up");
            }
            seen.sort_unstable();
            assert_eq!(
                seen,
                (0..max).collect::<Vec<_>>(),
                "max {max}, {workers} workers"
            );
        }
        let s = once(KeyGenerator::SequentialInt, 5, 2);
        let (mut a, mut b) = (KeyGen::new(s.clone(), 0), KeyGen::new(s, 1));
        let got: Vec<_> = (0..8)
            .map(|i| match i % 2 {
                0 => a.next_read(&mut rng),
                _ => b.next_write(&mut rng),
            })
            .collect();
        let five = [Some(0), Some(1), Some(2), Some(3), Some(4)];
        assert_eq!(got[..5], five);
        assert_eq!(got[5..], [None, None, None]);
    }

    #[test]
    fn pareto_and_eighty_twenty_are_skewed() {
        let mut rng = SmallRng::seed_from_u64(7);
        let max = 10_000;
        let p: Vec<_> = (0..100_000).map(|_| pareto(&mut rng, max)).collect();
        let e: Vec<_> = (0..100_000).map(|_| eighty_twenty(&mut rng, max)).collect();
        let u: Vec<_> = (0..100_000).map(|_| rng.random_range(0..max)).collect();
        let (ps, es, us) = (
            share_below(&p, 2000),
            share_below(&e, 2000),
            share_below(&u, 2000),
        );
        assert!(
            (0.75..0.88).contains(&ps),
            "pareto share of the lowest fifth {ps}"
        );
        assert!(
            (0.78..0.82).contains(&es),
            "80/20 share of the lowest fifth {es}"
        );
        assert!((0.18..0.22).contains(&us), "uniform share {us}");
        // Pareto: each decile is drawn less than the one before it.
        let deciles: Vec<_> = (0..10)
            .map(|d| p.iter().filter(|&&k| k / 1000 == d).count())
            .collect();
        assert!(deciles.windows(2).all(|w| w[0] > w[1]), "{deciles:?}");
    }

    #[test]
    fn unique_puts_never_repeat_and_reads_stay_inserted() {
        for order in [UniqueOrder::KeyOrder, UniqueOrder::SkewOrder] {
            let config = KeysConfig {
                order: Some(order),
                prefix: "k".into(),
                format: KeyFormat::Binary,
                ..config(KeyGenerator::Unique, None)
            };
            let s = Arc::new(KeySpace::new(&config, 4));
            let mut rng = SmallRng::seed_from_u64(3);
            let mut gens: Vec<_> = (0..4).map(|w| KeyGen::new(s.clone(), w)).collect();
            let mut keys = HashSet::new();
            for i in 0..20_000 {
                let n = gens[i % 4].next_write(&mut rng).unwrap();
                assert!(keys.insert(s.key(n)), "{order:?}: key {n} repeated");
                let r = gens[(i + 1) % 4].next_read(&mut rng).unwrap();
                assert!(r < s.inserted(), "read {r} not inserted yet");
            }
            let in_order = (0..100).map(|n| s.key(n)).collect::<Vec<_>>().is_sorted();
            assert_eq!(in_order, order == UniqueOrder::KeyOrder);
        }
    }

    #[test]
    fn keys_encode_with_prefix_and_format() {
        let mut config = KeysConfig {
            prefix: "c-".into(),
            ..config(KeyGenerator::UniformInt, Some(10))
        };
        assert_eq!(KeySpace::new(&config, 1).key(42), b"c-000000000042");
        config.format = KeyFormat::Binary;
        assert_eq!(KeySpace::new(&config, 1).key(1), b"c-\0\0\0\0\0\0\0\x01");
    }

    #[test]
    fn permutations_are_bijections_for_awkward_sizes() {
        for len in [1u64, 2, 3, 7, 8, 9, 1000, 4097] {
            let p = Permutation::new(len, 42);
            let seen: HashSet<u64> = (0..len).map(|i| p.apply(i)).collect();
            assert_eq!(seen.len() as u64, len, "len {len}");
            assert!(seen.iter().all(|&k| k < len));
        }
        let p = Permutation::new(1000, 42);
        let fixed = (0..1000).filter(|&i| p.apply(i) == i).count();
        assert!(fixed < 50, "{fixed} fixed points");
    }

    #[test]
    fn skew_ordered_sequential_keys_cover_the_space_once_per_pass() {
        let config = KeysConfig {
            order: Some(UniqueOrder::SkewOrder),
            format: KeyFormat::Binary,
            ..config(KeyGenerator::PartitionedSequentialInt, Some(100))
        };
        let space = Arc::new(KeySpace::new(&config, 3));
        let mut rng = SmallRng::seed_from_u64(1);
        let mut keys = Vec::new();
        for w in 0..3 {
            let mut g = KeyGen::new(space.clone(), w);
            let slice = 100 * (w + 1) / 3 - 100 * w / 3;
            for _ in 0..slice {
                keys.push(space.key(g.next_write(&mut rng).unwrap()));
            }
        }
        let distinct: HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), 100);
        assert!(
            keys.iter()
                .all(|k| u64::from_be_bytes(k[..].try_into().unwrap()) < 100)
        );
        let ascending = keys.windows(2).filter(|w| w[0] < w[1]).count();
        assert!(ascending < 80, "{ascending} of 99 steps ascend");
    }

    #[test]
    fn plain_keys_are_the_numbers_as_written() {
        let config = KeysConfig {
            format: KeyFormat::Plain,
            ..config(KeyGenerator::UniformInt, Some(100_000))
        };
        let space = KeySpace::new(&config, 1);
        for n in [0, 7, 4711, 99_999, u64::MAX] {
            assert_eq!(space.key(n), n.to_string().into_bytes());
        }
        let mut out = b"stale".to_vec();
        space.encode(42, &mut out);
        assert_eq!(out, b"42", "encode clears the buffer first");
    }

    #[test]
    fn a_partitioned_worker_beyond_the_keys_shares_one() {
        let s = space(KeyGenerator::PartitionedSequentialInt, Some(3), 16);
        let mut g = KeyGen::new(s, 10);
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..5 {
            assert_eq!(
                g.next_read(&mut rng),
                Some(1),
                "worker 10 of 16 over 3 keys"
            );
        }
    }

    proptest! {
        #[test]
        fn bounded_generators_stay_below_max(seed: u64, max in 1u64..1_000_000, worker in 0usize..16) {
            let mut rng = SmallRng::seed_from_u64(seed);
            for generator in [
                KeyGenerator::SequentialInt,
                KeyGenerator::PartitionedSequentialInt,
                KeyGenerator::UniformInt,
                KeyGenerator::ParetoInt,
                KeyGenerator::EightytwentyInt,
            ] {
                let mut g = KeyGen::new(space(generator, Some(max), 16), worker);
                for _ in 0..50 {
                    let n = g.next_read(&mut rng).unwrap();
                    prop_assert!(n < max, "{:?} drew {} >= {}", generator, n, max);
                }
            }
        }

        #[test]
        fn scramble_is_injective(a: u64, b: u64) {
            prop_assume!(a != b);
            prop_assert_ne!(scramble(a), scramble(b));
        }
    }
}
