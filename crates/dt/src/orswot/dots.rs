//! One set member's dots: the adds that made it, at most one per actor,
//! kept sorted by actor.
//!
//! A member almost always has one dot, so it is kept inline: a set of
//! 100,000 members then allocates once per member (its bytes), not twice,
//! and decodes, encodes and frees at the speed of its members' bytes.

use eddy_object::Actor;
use smallvec::SmallVec;

/// A member's dots, sorted by actor, one per actor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dots(SmallVec<[(Actor, u64); 1]>);

impl Dots {
    pub(crate) fn new() -> Dots {
        Dots::default()
    }

    /// The one dot `(actor, counter)`.
    pub(crate) fn one(actor: Actor, counter: u64) -> Dots {
        let mut dots = Dots::new();
        dots.0.push((actor, counter));
        dots
    }

    /// `actor`'s counter, if it has a dot here.
    pub(crate) fn get(&self, actor: Actor) -> Option<u64> {
        self.find(actor).ok().map(|i| self.0[i].1)
    }

    /// Sets `actor`'s dot to `counter`.
    pub(crate) fn insert(&mut self, actor: Actor, counter: u64) {
        match self.find(actor) {
            Ok(i) => self.0[i].1 = counter,
            Err(i) => self.0.insert(i, (actor, counter)),
        }
    }

    /// Gives `actor` a dot of at least `counter`.
    pub(crate) fn raise(&mut self, actor: Actor, counter: u64) {
        match self.find(actor) {
            Ok(i) => self.0[i].1 = self.0[i].1.max(counter),
            Err(i) => self.0.insert(i, (actor, counter)),
        }
    }

    /// Drops `actor`'s dot.
    pub(crate) fn remove(&mut self, actor: Actor) {
        if let Ok(i) = self.find(actor) {
            self.0.remove(i);
        }
    }

    /// Keeps the dots `keep` says to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(Actor, u64) -> bool) {
        self.0.retain(|&mut (actor, counter)| keep(actor, counter));
    }

    /// The actor of the last dot (the greatest).
    pub(crate) fn last_actor(&self) -> Option<Actor> {
        self.0.last().map(|&(actor, _)| actor)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The dots in actor order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Actor, u64)> + '_ {
        self.0.iter().copied()
    }

    /// The actors, in order.
    pub(crate) fn actors(&self) -> impl Iterator<Item = Actor> + '_ {
        self.0.iter().map(|&(actor, _)| actor)
    }

    fn find(&self, actor: Actor) -> Result<usize, usize> {
        self.0.binary_search_by_key(&actor, |&(a, _)| a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_stay_sorted_with_one_per_actor() {
        let mut dots = Dots::one(Actor(5), 1);
        dots.insert(Actor(2), 7);
        dots.raise(Actor(5), 3);
        dots.raise(Actor(2), 4);
        dots.insert(Actor(9), 1);
        let all: Vec<_> = dots.iter().collect();
        assert_eq!(all, [(Actor(2), 7), (Actor(5), 3), (Actor(9), 1)]);
        assert_eq!(dots.get(Actor(5)), Some(3));
        assert_eq!(dots.get(Actor(4)), None);
        dots.remove(Actor(5));
        dots.retain(|a, _| a != Actor(9));
        assert_eq!(dots.iter().collect::<Vec<_>>(), [(Actor(2), 7)]);
        assert_eq!((dots.len(), dots.last_actor()), (1, Some(Actor(2))));
    }
}
