//! The top-level counter (riak_dt_pncounter): per actor the total of its
//! increments and of its decrements, each only growing; a merge takes each
//! actor's larger totals; the value is the sum of increments minus the
//! sum of decrements.
//!
//! Riak's integers are unbounded; Eddy's are 64-bit: an operation whose
//! totals or resulting value would leave that range is refused
//! ([`CounterError::Overflow`]) and changes nothing.

use std::collections::BTreeMap;

use eddy_object::Actor;

use crate::codec::{DecodeError, Reader, Writer};

/// A counter's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PnCounter {
    /// Per actor: (increments, decrements), both magnitudes.
    totals: BTreeMap<Actor, (u64, u64)>,
}

/// Why a counter operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterError {
    /// The counter would leave the signed 64-bit range.
    Overflow,
}

impl std::fmt::Display for CounterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("counter overflow: the value must stay within a signed 64-bit integer")
    }
}

impl std::error::Error for CounterError {}

impl PnCounter {
    /// A counter at zero.
    pub fn new() -> PnCounter {
        PnCounter::default()
    }

    /// Adds `delta` (negative: a decrement) as `actor`.
    pub fn increment(&mut self, actor: Actor, delta: i64) -> Result<(), CounterError> {
        let (inc, dec) = self.totals.get(&actor).copied().unwrap_or_default();
        let magnitude = delta.unsigned_abs();
        let next = match delta >= 0 {
            true => (inc.checked_add(magnitude), Some(dec)),
            false => (Some(inc), dec.checked_add(magnitude)),
        };
        let (Some(inc), Some(dec)) = next else {
            return Err(CounterError::Overflow);
        };
        let mut trial = self.clone();
        trial.totals.insert(actor, (inc, dec));
        trial.checked_value().ok_or(CounterError::Overflow)?;
        *self = trial;
        Ok(())
    }

    /// The counter's value. A merge of replicas that each stayed in range
    /// can leave it (two actors near the top); the value then saturates.
    pub fn value(&self) -> i64 {
        let (inc, dec) = self.sums();
        let diff = inc - dec;
        diff.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    fn checked_value(&self) -> Option<i64> {
        let (inc, dec) = self.sums();
        i64::try_from(inc - dec).ok()
    }

    fn sums(&self) -> (i128, i128) {
        self.totals.values().fold((0, 0), |(i, d), &(inc, dec)| {
            (i + i128::from(inc), d + i128::from(dec))
        })
    }

    /// Takes in `other`'s state: each actor's larger totals.
    pub fn merge(&mut self, other: &PnCounter) {
        for (&actor, &(inc, dec)) in &other.totals {
            let mine = self.totals.entry(actor).or_default();
            *mine = (mine.0.max(inc), mine.1.max(dec));
        }
    }

    /// Each actor's (increments, decrements), by actor.
    pub fn totals(&self) -> impl Iterator<Item = (Actor, u64, u64)> + '_ {
        self.totals.iter().map(|(&a, &(i, d))| (a, i, d))
    }

    /// Writes the state (docs/formats/datatypes.md): the actor table, then
    /// for each actor in its order the increments and the decrements.
    pub fn encode(&self, w: &mut Writer) {
        w.actor_table(self.totals.keys().copied());
        for &(inc, dec) in self.totals.values() {
            w.varint(inc);
            w.varint(dec);
        }
    }

    /// Reads a state [`PnCounter::encode`] wrote.
    pub fn decode(r: &mut Reader) -> Result<PnCounter, DecodeError> {
        let table = r.actor_table()?;
        let mut totals = BTreeMap::new();
        for actor in table.0 {
            let inc = r.varint()?;
            let dec = r.varint()?;
            totals.insert(actor, (inc, dec));
        }
        Ok(PnCounter { totals })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increments_and_decrements_sum_per_actor() {
        let mut c = PnCounter::new();
        c.increment(Actor(1), 5).unwrap();
        c.increment(Actor(2), -2).unwrap();
        c.increment(Actor(1), -1).unwrap();
        assert_eq!(c.value(), 2);
        assert_eq!(
            c.totals().collect::<Vec<_>>(),
            vec![(Actor(1), 5, 1), (Actor(2), 0, 2)]
        );
    }

    #[test]
    fn an_increment_past_64_bits_is_refused_and_changes_nothing() {
        let mut c = PnCounter::new();
        c.increment(Actor(1), i64::MAX).unwrap();
        let before = c.clone();
        assert_eq!(c.increment(Actor(2), 1), Err(CounterError::Overflow));
        assert_eq!(c, before);
        c.increment(Actor(2), i64::MIN).unwrap();
        assert_eq!(c.value(), -1);
        assert_eq!(c.increment(Actor(3), i64::MIN), Err(CounterError::Overflow));
    }
}
