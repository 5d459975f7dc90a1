//! Actors, dots and version vectors.
//!
//! An actor is a vnode id: each vnode that coordinates a write counts its own
//! events. A [`Dot`] names one event; a [`VersionVector`] names a downward-
//! closed set of events (for each actor, events `1..=n`).

use std::fmt;

/// The id of a vnode that coordinates writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Actor(pub u64);

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// One write: the `counter`th event of `actor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dot {
    pub actor: Actor,
    pub counter: u64,
}

/// For each actor, the highest counter seen. Entries are sorted by actor and
/// never hold a zero counter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct VersionVector {
    entries: Vec<(Actor, u64)>,
}

impl VersionVector {
    /// The empty vector (has seen nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a vector from `(actor, counter)` pairs in any order; repeated
    /// actors keep their highest counter and zero counters are dropped.
    pub fn from_entries(pairs: impl IntoIterator<Item = (Actor, u64)>) -> Self {
        let mut vv = Self::new();
        for (actor, counter) in pairs {
            vv.raise(actor, counter);
        }
        vv
    }

    /// The `(actor, counter)` pairs, sorted by actor.
    pub fn entries(&self) -> &[(Actor, u64)] {
        &self.entries
    }

    /// True when the vector has seen nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The highest counter seen from `actor` (0 if none).
    pub fn get(&self, actor: Actor) -> u64 {
        match self.entries.binary_search_by_key(&actor, |e| e.0) {
            Ok(i) => self.entries[i].1,
            Err(_) => 0,
        }
    }

    /// Raises `actor`'s counter to at least `counter`.
    pub fn raise(&mut self, actor: Actor, counter: u64) {
        if counter == 0 {
            return;
        }
        match self.entries.binary_search_by_key(&actor, |e| e.0) {
            Ok(i) => self.entries[i].1 = self.entries[i].1.max(counter),
            Err(i) => self.entries.insert(i, (actor, counter)),
        }
    }

    /// True when the event `dot` is in this vector's history.
    pub fn covers(&self, dot: Dot) -> bool {
        self.get(dot.actor) >= dot.counter
    }

    /// True when this vector has seen everything `other` has.
    pub fn descends(&self, other: &VersionVector) -> bool {
        other.entries.iter().all(|&(a, n)| self.get(a) >= n)
    }

    /// The pointwise maximum of two vectors.
    pub fn merge(&self, other: &VersionVector) -> VersionVector {
        let mut out = self.clone();
        for &(actor, counter) in &other.entries {
            out.raise(actor, counter);
        }
        out
    }
}
