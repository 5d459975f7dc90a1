//! The HyperLogLog data type (riak_kv_hll on basho/hyper): an estimate of
//! how many distinct elements were added, in 2^p one-byte registers
//! whatever that number is.
//!
//! - An add hashes the element with XXH3-64; the top p bits of the hash
//!   choose a register, and the register keeps the largest rank seen, the
//!   rank being the number of leading zeros of the other 64 − p bits plus
//!   one (so at most 64 − p + 1).
//! - A merge is the register-wise maximum. States of different precisions
//!   merge at the smaller one: the finer state is first [`Hll::reduce`]d,
//!   which gives exactly the registers adding its elements at the smaller
//!   precision would have.
//! - The estimate: while a register is still zero and linear counting
//!   m·ln(m/V) (V the zero registers) reads at most 3·m, that; otherwise
//!   the raw HyperLogLog estimate α_m·m²/Σ2^−r, but never less than 3·m.
//!   Rounded to the nearest integer.
//!
//! Fidelity: Riak hashes with SHA-1, subtracts HyperLogLog++'s empirical
//! bias (Heule et al.) from raw estimates below 5·m, and keeps linear
//! counting only up to HyperLogLog++'s thresholds (about 0.7·m). Eddy has
//! no bias table, so it counts linearly further, to 3·m, where the
//! uncorrected raw estimate's bias has fallen within its error. Eddy's
//! estimates are therefore not Riak's, only within HyperLogLog's error
//! (3·1.04/√m, tested); small counts are exact in practice (5 distinct
//! elements read 5, as Riak's clients test).
//!
//! Invariants: `registers.len() == 2^precision`; every register is at most
//! `64 − precision + 1`; at a fixed precision an add or a merge never
//! lowers the estimate: registers only grow, so the linear count and the
//! raw estimate only grow, and once the linear count passes 3·m the
//! estimate is at least 3·m.

use std::fmt;

use xxhash_rust::xxh3::xxh3_64;

use crate::codec::{DecodeError, Reader, Writer};

/// The precision a bucket type's `hll_precision` defaults to.
pub const HLL_PRECISION_DEFAULT: u8 = 14;
/// The smallest precision (16 registers).
pub const HLL_PRECISION_MIN: u8 = 4;
/// The largest precision (65,536 registers).
pub const HLL_PRECISION_MAX: u8 = 16;

/// Linear counting is used while it reads at most this many elements per
/// register. HyperLogLog++'s thresholds (Riak's; 11,500 at p = 14, about
/// 0.7·m) assume the bias table: without it the raw estimate reads 55%
/// high at 0.75·m and still 7% at 1.8·m, while linear counting's error at
/// 3·m is 1.34/√m, below the raw estimate's 1.04/√m·3 bound.
const LINEAR_COUNTING_MAX_PER_REGISTER: f64 = 3.0;

/// Dense form: every register as one byte.
const FORM_DENSE: u8 = 0;
/// Sparse form: the non-zero registers as (index delta, value) pairs.
const FORM_SPARSE: u8 = 1;

/// A HyperLogLog's state.
#[derive(Clone, PartialEq, Eq)]
pub struct Hll {
    precision: u8,
    registers: Vec<u8>,
}

/// Why an HLL could not be made at a precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HllError {
    /// The precision is outside 4..=16.
    Precision(u8),
}

impl fmt::Display for HllError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HllError::Precision(_) => {
                f.write_str("Precision for HLL datatype must be between 4 and 16, inclusive")
            }
        }
    }
}

impl std::error::Error for HllError {}

impl fmt::Debug for Hll {
    /// The precision and the non-zero registers only: a dense dump of
    /// 16,384 bytes helps nobody.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set: Vec<(usize, u8)> = self.nonzero().collect();
        f.debug_struct("Hll")
            .field("precision", &self.precision)
            .field("registers", &set)
            .finish()
    }
}

impl Default for Hll {
    /// An empty HLL at [`HLL_PRECISION_DEFAULT`].
    fn default() -> Hll {
        Hll::empty(HLL_PRECISION_DEFAULT)
    }
}

impl Hll {
    /// An empty HLL of 2^`precision` registers.
    pub fn new(precision: u8) -> Result<Hll, HllError> {
        check_precision(precision)?;
        Ok(Hll::empty(precision))
    }

    fn empty(precision: u8) -> Hll {
        Hll {
            precision,
            registers: vec![0; 1 << precision],
        }
    }

    pub fn precision(&self) -> u8 {
        self.precision
    }

    /// The registers, 2^precision of them.
    pub fn registers(&self) -> &[u8] {
        &self.registers
    }

    /// The largest value a register holds at this precision.
    fn rank_max(&self) -> u8 {
        rank_max(self.precision)
    }

    /// Adds `element`.
    pub fn add(&mut self, element: &[u8]) {
        let hash = xxh3_64(element);
        let p = u32::from(self.precision);
        let index = (hash >> (64 - p)) as usize;
        let rest = hash << p;
        // `rest` has p low zero bits, so only an all-zero rest needs the cap.
        let rank = (rest.leading_zeros() + 1).min(u32::from(self.rank_max())) as u8;
        let register = &mut self.registers[index];
        *register = (*register).max(rank);
    }

    /// The estimated number of distinct elements added: linear counting
    /// while it reads at most `LINEAR_COUNTING_MAX_PER_REGISTER`·m, then
    /// the raw estimate, never below that cutoff.
    pub fn estimate(&self) -> u64 {
        let m = self.registers.len() as f64;
        let cutoff = LINEAR_COUNTING_MAX_PER_REGISTER * m;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if zeros > 0 {
            let linear = m * (m / zeros as f64).ln();
            if linear <= cutoff {
                return linear.round() as u64;
            }
        }
        // Σ 2^−r, exactly: each term as 2^(64 − r) in a u128 (r ≤ 61), so
        // growing a register always lowers the sum.
        let sum: u128 = self.registers.iter().map(|&r| 1u128 << (64 - r)).sum();
        let sum = sum as f64 / (1u128 << 64) as f64;
        let raw = alpha(self.registers.len()) * m * m / sum;
        raw.max(cutoff).round() as u64
    }

    /// Takes in `other`'s registers. Of two precisions the smaller wins:
    /// this state is reduced first when `other`'s is smaller.
    pub fn merge(&mut self, other: &Hll) {
        if other.precision > self.precision {
            let mut coarse = other.clone();
            coarse.reduce(self.precision);
            self.max_registers(&coarse);
        } else {
            self.reduce(other.precision);
            self.max_registers(other);
        }
    }

    fn max_registers(&mut self, other: &Hll) {
        for (mine, &theirs) in self.registers.iter_mut().zip(&other.registers) {
            *mine = (*mine).max(theirs);
        }
    }

    /// Lowers the precision to `precision`, keeping what was counted: the
    /// registers become those the same elements would have set at
    /// `precision`. A precision at or above the current one, or below
    /// [`HLL_PRECISION_MIN`], changes nothing.
    pub fn reduce(&mut self, precision: u8) {
        if precision >= self.precision || precision < HLL_PRECISION_MIN {
            return;
        }
        let shift = u32::from(self.precision - precision);
        let low_mask = (1usize << shift) - 1;
        let mut registers = vec![0u8; 1 << precision];
        for (j, &r) in self.registers.iter().enumerate() {
            if r == 0 {
                continue;
            }
            // The low `shift` bits of the old index are the first bits of
            // the new rest: a one among them ends the run of zeros there.
            let low = j & low_mask;
            let rank = match low {
                0 => shift + u32::from(r),
                _ => shift - (usize::BITS - low.leading_zeros()) + 1,
            };
            let register = &mut registers[j >> shift];
            *register = (*register).max(rank as u8);
        }
        self.precision = precision;
        self.registers = registers;
    }

    /// The non-zero registers as (index, value), by index.
    fn nonzero(&self) -> impl Iterator<Item = (usize, u8)> + '_ {
        self.registers
            .iter()
            .enumerate()
            .filter(|&(_, &r)| r != 0)
            .map(|(i, &r)| (i, r))
    }

    /// Writes the state (docs/formats/datatypes.md): the precision, then
    /// the dense or the sparse form, whichever is smaller.
    pub fn encode(&self, w: &mut Writer) {
        w.u8(self.precision);
        let mut sparse = Writer::new();
        let set: Vec<(usize, u8)> = self.nonzero().collect();
        sparse.len(set.len());
        let mut previous = 0;
        for &(i, r) in &set {
            sparse.len(i - previous);
            sparse.u8(r);
            previous = i;
        }
        if sparse.buf.len() < self.registers.len() {
            w.u8(FORM_SPARSE);
            w.buf.extend_from_slice(&sparse.buf);
        } else {
            w.u8(FORM_DENSE);
            w.buf.extend_from_slice(&self.registers);
        }
    }

    /// Reads a state [`Hll::encode`] wrote: a precision in range, registers
    /// no larger than the precision allows, sparse indexes increasing and
    /// in range with non-zero values.
    pub fn decode(r: &mut Reader) -> Result<Hll, DecodeError> {
        let precision = r.u8()?;
        check_precision(precision).map_err(|_| DecodeError("hll precision out of range"))?;
        let mut hll = Hll::empty(precision);
        let max = hll.rank_max();
        match r.u8()? {
            FORM_DENSE => {
                let raw = r.take(hll.registers.len())?;
                if raw.iter().any(|&v| v > max) {
                    return Err(DecodeError("hll register above its maximum"));
                }
                hll.registers.copy_from_slice(raw);
            }
            FORM_SPARSE => {
                let n = r.count(2)?;
                let mut index: Option<usize> = None;
                for _ in 0..n {
                    let delta = r.varint()?;
                    let at = match index {
                        None => Some(delta),
                        Some(_) if delta == 0 => None,
                        Some(i) => (i as u64).checked_add(delta),
                    };
                    let at = at
                        .and_then(|i| usize::try_from(i).ok())
                        .filter(|&i| i < hll.registers.len())
                        .ok_or(DecodeError("hll sparse index out of order or range"))?;
                    let value = r.u8()?;
                    if value == 0 || value > max {
                        return Err(DecodeError("hll sparse register zero or above its maximum"));
                    }
                    hll.registers[at] = value;
                    index = Some(at);
                }
            }
            _ => return Err(DecodeError("unknown hll form")),
        }
        Ok(hll)
    }
}

fn check_precision(precision: u8) -> Result<(), HllError> {
    match (HLL_PRECISION_MIN..=HLL_PRECISION_MAX).contains(&precision) {
        true => Ok(()),
        false => Err(HllError::Precision(precision)),
    }
}

/// The largest rank at precision `p`: an all-zero rest of 64 − p bits.
fn rank_max(precision: u8) -> u8 {
    64 - precision + 1
}

/// The bias constant α_m of the raw estimate.
fn alpha(m: usize) -> f64 {
    match m {
        16 => 0.673,
        32 => 0.697,
        64 => 0.709,
        _ => 0.7213 / (1.0 + 1.079 / m as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(precision: u8, n: u64) -> Hll {
        let mut h = Hll::new(precision).unwrap();
        (0..n).for_each(|i| h.add(&i.to_le_bytes()));
        h
    }

    fn relative_error(precision: u8, n: u64) -> f64 {
        let e = filled(precision, n).estimate() as f64;
        (e - n as f64).abs() / n as f64
    }

    fn bound(precision: u8) -> f64 {
        3.0 * 1.04 / f64::from(1u32 << precision).sqrt()
    }

    #[test]
    fn small_counts_are_exact() {
        let mut h = Hll::new(HLL_PRECISION_DEFAULT).unwrap();
        assert_eq!(h.estimate(), 0);
        for e in ["Z", "X", "Y", "W", "Z", "V"] {
            h.add(e.as_bytes());
        }
        assert_eq!(h.estimate(), 5, "riak-python-client test_dt_hll");
    }

    #[test]
    fn large_counts_are_within_three_standard_errors() {
        for precision in [10, 14] {
            for n in [10_000, 100_000] {
                let err = relative_error(precision, n);
                assert!(err <= bound(precision), "p={precision} n={n}: {err}");
            }
        }
    }

    #[test]
    fn counts_across_the_switch_to_the_raw_estimate_keep_the_bound() {
        for precision in [10, 14] {
            let mut h = Hll::new(precision).unwrap();
            let mut n = 0u64;
            for target in [1_000, 5_000, 12_000, 20_000, 30_000, 45_000, 60_000] {
                while n < target {
                    h.add(&n.to_le_bytes());
                    n += 1;
                }
                let err = (h.estimate() as f64 - n as f64).abs() / n as f64;
                assert!(err <= bound(precision), "p={precision} n={n}: {err}");
            }
        }
    }

    #[test]
    fn precisions_outside_4_to_16_are_refused() {
        for p in [0, 3, 17, 255] {
            let err = Hll::new(p).unwrap_err();
            assert_eq!(err, HllError::Precision(p));
            assert_eq!(
                err.to_string(),
                "Precision for HLL datatype must be between 4 and 16, inclusive"
            );
        }
        assert_eq!(Hll::new(4).unwrap().registers().len(), 16);
        assert_eq!(Hll::new(16).unwrap().registers().len(), 65536);
        assert_eq!(Hll::default().precision(), 14);
    }

    #[test]
    fn reducing_equals_adding_at_the_lower_precision() {
        for (from, to) in [(14, 10), (16, 4), (5, 4)] {
            let mut high = filled(from, 3000);
            high.reduce(to);
            assert_eq!(high, filled(to, 3000), "{from} → {to}");
        }
    }

    #[test]
    fn reducing_moves_ranks_by_the_dropped_bits() {
        let mut h = Hll::new(6).unwrap();
        h.registers[0b000100] = 3; // low bits 00: rank 2 + 3
        h.registers[0b000101] = 9; // low bits 01: one leading zero, rank 2
        h.registers[0b001010] = 1; // low bits 10: rank 1
        h.registers[0b001011] = 0; // empty stays empty
        h.reduce(4);
        assert_eq!(h.precision(), 4);
        assert_eq!(&h.registers()[..3], &[0, 5, 1]);
        let same = h.clone();
        h.reduce(8);
        h.reduce(2);
        assert_eq!(h, same, "raising or going below 4 changes nothing");
    }

    #[test]
    fn merging_precisions_reduces_to_the_smaller() {
        let (mut a, b) = (filled(12, 500), filled(8, 10));
        a.merge(&b);
        assert_eq!(a.precision(), 8);
        let mut c = filled(8, 10);
        c.merge(&filled(12, 500));
        assert_eq!(a, c);
        assert_eq!(a, filled(8, 500));
    }

    #[test]
    fn the_encoder_picks_the_smaller_form() {
        for n in [0, 3, 20_000] {
            let h = filled(14, n);
            let mut w = Writer::new();
            h.encode(&mut w);
            assert_eq!(w.buf[1], if n < 20_000 { FORM_SPARSE } else { FORM_DENSE });
            let mut r = Reader::new(&w.buf);
            assert_eq!(Hll::decode(&mut r).unwrap(), h);
            r.finish().unwrap();
        }
    }
}
