//! The add-wins set (riak_dt_orswot, "observed-remove set without
//! tombstones"; design note 019 §3): a version vector of every add the
//! state has seen, for each member the dots of the adds that made it (at
//! most one per actor), and the removes whose context this state has not
//! seen all of yet (deferred until a merge brings what they saw).
//!
//! - An add by `actor` takes the next dot of `actor` and gives the member
//!   exactly that dot: an add concurrent with a remove survives it.
//! - A remove without a context drops the member, or fails with
//!   [`Precondition::NotPresent`] when it is absent; with a context it
//!   drops the member's dots the context has seen, never fails, and is
//!   kept (deferred) while the set's clock does not descend the context.
//! - A merge keeps, of a member one side lacks, only the dots the other
//!   side's clock has not seen (that side removed the rest); of a member
//!   both hold, the common dots and each side's dots the other has not
//!   seen.
//!
//! The context a client reads and sends back is the set's clock.
//! [`delta`] runs a client's operation as a delta another replica can
//! join without the whole state; [`segmented`] stores a big set as a root
//! and segments so that an operation reads and writes only a few of them.

use std::collections::{BTreeMap, BTreeSet};

pub mod delta;
mod dots;
pub mod segmented;

use eddy_object::{Actor, Dot, VersionVector};

use crate::codec::{ActorTable, DecodeError, Reader, Writer};

use dots::Dots;

/// What one member usually takes encoded (its bytes, length and a dot),
/// to size the buffer of a big set once.
const MEMBER_BYTES_GUESS: usize = 24;

/// A set's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Orswot {
    clock: VersionVector,
    members: BTreeMap<Vec<u8>, Dots>,
    deferred: Deferred,
}

/// Removes waiting for the clock to descend their context, by context (its
/// sorted entries): the members each removes.
type Deferred = BTreeMap<Vec<(Actor, u64)>, BTreeSet<Vec<u8>>>;

/// Why a remove was refused (Riak's `{precondition, {not_present, E}}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// A remove without a context named a member the set does not hold.
    NotPresent(Vec<u8>),
}

impl std::fmt::Display for Precondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Precondition::NotPresent(m) => {
                write!(
                    f,
                    "precondition: {} is not present",
                    String::from_utf8_lossy(m)
                )
            }
        }
    }
}

impl std::error::Error for Precondition {}

impl Orswot {
    pub fn new() -> Orswot {
        Orswot::default()
    }

    /// The set's clock: the context a client reads with the value.
    pub fn clock(&self) -> &VersionVector {
        &self.clock
    }

    /// The members, in byte order.
    pub fn value(&self) -> impl Iterator<Item = &[u8]> {
        self.members.keys().map(Vec::as_slice)
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.members.contains_key(member)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The removes still deferred.
    pub fn deferred_len(&self) -> usize {
        self.deferred.values().map(BTreeSet::len).sum()
    }

    /// Adds `member` as `actor`: the actor's next dot becomes the member's
    /// only dot.
    pub fn add(&mut self, actor: Actor, member: &[u8]) {
        let counter = self.clock.get(actor) + 1;
        self.clock.raise(actor, counter);
        self.members
            .insert(member.to_vec(), Dots::one(actor, counter));
    }

    /// Removes `member`. Without a context it must be present; with one,
    /// only the adds the context has seen are removed, and the remove is
    /// deferred while this set has not seen everything the context has.
    pub fn remove(
        &mut self,
        member: &[u8],
        context: Option<&VersionVector>,
    ) -> Result<(), Precondition> {
        self.remove_all(&[member], context)
    }

    /// Removes every member of `members`, all or none: without a context
    /// one absent member refuses the whole operation.
    pub fn remove_all(
        &mut self,
        members: &[&[u8]],
        context: Option<&VersionVector>,
    ) -> Result<(), Precondition> {
        let Some(context) = context else {
            if let Some(absent) = members.iter().find(|m| !self.contains(m)) {
                return Err(Precondition::NotPresent(absent.to_vec()));
            }
            members.iter().for_each(|m| drop(self.members.remove(*m)));
            return Ok(());
        };
        for m in members {
            self.remove_seen(m, context);
        }
        if !self.clock.descends(context) {
            let deferred = self.deferred.entry(context.entries().to_vec()).or_default();
            deferred.extend(members.iter().map(|m| m.to_vec()));
        }
        Ok(())
    }

    /// Drops the dots of `member` that `context` has seen.
    fn remove_seen(&mut self, member: &[u8], context: &VersionVector) {
        let Some(dots) = self.members.get_mut(member) else {
            return;
        };
        dots.retain(|actor, counter| !context.covers(Dot { actor, counter }));
        if dots.is_empty() {
            self.members.remove(member);
        }
    }

    /// Takes in `other`'s state.
    pub fn merge(&mut self, other: &Orswot) {
        let names: BTreeSet<&Vec<u8>> = self.members.keys().chain(other.members.keys()).collect();
        let mut members = BTreeMap::new();
        for name in names {
            let dots = merge_dots(
                self.members.get(name),
                &self.clock,
                other.members.get(name),
                &other.clock,
            );
            if !dots.is_empty() {
                members.insert(name.clone(), dots);
            }
        }
        self.members = members;
        self.clock = self.clock.merge(&other.clock);
        for (context, names) in &other.deferred {
            self.deferred
                .entry(context.clone())
                .or_default()
                .extend(names.iter().cloned());
        }
        self.apply_deferred();
    }

    /// Runs the deferred removes whose context the clock now descends.
    fn apply_deferred(&mut self) {
        let deferred = std::mem::take(&mut self.deferred);
        for (entries, names) in deferred {
            let context = VersionVector::from_entries(entries.iter().copied());
            if self.clock.descends(&context) {
                names.iter().for_each(|m| self.remove_seen(m, &context));
            } else {
                self.deferred.insert(entries, names);
            }
        }
    }
}

/// The stored body (docs/formats/datatypes.md).
impl Orswot {
    /// Writes the state: the actor table, the clock, the members in byte
    /// order each with its dots, then the deferred removes by context.
    pub fn encode(&self, w: &mut Writer) {
        let actors = (self.clock.entries().iter().map(|&(a, _)| a))
            .chain(self.members.values().flat_map(Dots::actors))
            .chain(deferred_actors(&self.deferred));
        let table = w.actor_table(actors);
        w.clock(&table, &self.clock);
        write_members(w, &table, self.members.iter());
        write_deferred(w, &table, &self.deferred);
    }

    /// Reads a state [`Orswot::encode`] wrote, refusing what no set could
    /// hold: members out of order, a member without dots or with a dot its
    /// clock has not seen, a deferred remove whose context the clock
    /// already descends.
    pub fn decode(r: &mut Reader) -> Result<Orswot, DecodeError> {
        let table = r.actor_table()?;
        let clock = r.clock(&table)?;
        // Collected in order, then built in one pass (a tree built from a
        // sorted list costs no search per member).
        let members = BTreeMap::from_iter(read_members(r, &table, &clock)?);
        let deferred = read_deferred(r, &table, &clock)?;
        Ok(Orswot {
            clock,
            members,
            deferred,
        })
    }
}

/// Writes members (in byte order) with their dots: their count, then each
/// name and its dots. The set's body and a segment of a big set
/// ([`segmented`]) share it.
fn write_members<'a>(
    w: &mut Writer,
    table: &ActorTable,
    members: impl ExactSizeIterator<Item = (&'a Vec<u8>, &'a Dots)>,
) {
    w.len(members.len());
    w.reserve(members.len() * MEMBER_BYTES_GUESS);
    for (member, dots) in members {
        w.bytes(member);
        w.len(dots.len());
        for (actor, counter) in dots.iter() {
            w.actor(table, actor);
            w.varint(counter);
        }
    }
}

/// Reads what [`write_members`] wrote, in order: members strictly
/// increasing, each with dots `clock` covers ([`decode_dots`]).
fn read_members(
    r: &mut Reader,
    table: &ActorTable,
    clock: &VersionVector,
) -> Result<Vec<(Vec<u8>, Dots)>, DecodeError> {
    let count = r.count(2)?;
    let mut sorted: Vec<(Vec<u8>, Dots)> = Vec::with_capacity(count);
    for _ in 0..count {
        let member = r.bytes()?;
        if sorted
            .last()
            .is_some_and(|(last, _)| last.as_slice() >= member)
        {
            return Err(DecodeError("set members not sorted"));
        }
        sorted.push((member.to_vec(), decode_dots(r, table, clock)?));
    }
    Ok(sorted)
}

/// The actors the deferred removes' contexts name.
fn deferred_actors(deferred: &Deferred) -> impl Iterator<Item = Actor> + '_ {
    deferred.keys().flat_map(|c| c.iter().map(|&(a, _)| a))
}

/// Writes the deferred removes: their count, then by context (in order)
/// the context and the members it removes.
fn write_deferred(w: &mut Writer, table: &ActorTable, deferred: &Deferred) {
    w.len(deferred.len());
    for (context, members) in deferred {
        w.clock(table, &VersionVector::from_entries(context.iter().copied()));
        w.len(members.len());
        members.iter().for_each(|m| w.bytes(m));
    }
}

/// Reads what [`write_deferred`] wrote, refusing contexts out of order or
/// that `clock` already descends (such a remove would have run), and
/// members out of order.
fn read_deferred(
    r: &mut Reader,
    table: &ActorTable,
    clock: &VersionVector,
) -> Result<Deferred, DecodeError> {
    let mut deferred = Deferred::new();
    for _ in 0..r.count(2)? {
        let context = r.clock(table)?;
        if clock.descends(&context) {
            return Err(DecodeError(
                "deferred remove of a context the clock has seen",
            ));
        }
        let context = context.entries().to_vec();
        if deferred
            .last_key_value()
            .is_some_and(|(last, _)| *last >= context)
        {
            return Err(DecodeError("deferred contexts not sorted"));
        }
        let mut names = BTreeSet::new();
        for _ in 0..r.count(1)? {
            let name = r.bytes()?;
            if names
                .last()
                .is_some_and(|last: &Vec<u8>| last.as_slice() >= name)
            {
                return Err(DecodeError("deferred members not sorted"));
            }
            names.insert(name.to_vec());
        }
        deferred.insert(context, names);
    }
    Ok(deferred)
}

/// One member's dots: at least one, actors increasing, each seen by `clock`.
fn decode_dots(
    r: &mut Reader,
    table: &ActorTable,
    clock: &VersionVector,
) -> Result<Dots, DecodeError> {
    let n = r.count(2)?;
    if n == 0 {
        return Err(DecodeError("set member without dots"));
    }
    let mut dots = Dots::new();
    for _ in 0..n {
        let actor = r.actor(table)?;
        let counter = r.varint()?;
        if dots.last_actor().is_some_and(|last| last >= actor) {
            return Err(DecodeError("dots not sorted"));
        }
        if counter == 0 || !clock.covers(Dot { actor, counter }) {
            return Err(DecodeError("dot not covered by the set's clock"));
        }
        dots.insert(actor, counter);
    }
    Ok(dots)
}

/// One member's dots after a merge of its two sides (either may lack it).
fn merge_dots(
    mine: Option<&Dots>,
    my_clock: &VersionVector,
    theirs: Option<&Dots>,
    their_clock: &VersionVector,
) -> Dots {
    let empty = Dots::new();
    let (mine, theirs) = (mine.unwrap_or(&empty), theirs.unwrap_or(&empty));
    let unseen_by =
        |clock: &VersionVector, actor: Actor, counter: u64| !clock.covers(Dot { actor, counter });
    let mut out = Dots::new();
    for (actor, counter) in mine.iter() {
        let common = theirs.get(actor) == Some(counter);
        if common || unseen_by(their_clock, actor, counter) {
            out.insert(actor, counter);
        }
    }
    for (actor, counter) in theirs.iter() {
        if unseen_by(my_clock, actor, counter) {
            out.raise(actor, counter);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(s: &Orswot) -> Vec<&[u8]> {
        s.value().collect()
    }

    #[test]
    fn a_remove_without_context_needs_the_member() {
        let mut s = Orswot::new();
        s.add(Actor(1), b"a");
        assert_eq!(
            s.remove_all(&[b"a", b"zz"], None),
            Err(Precondition::NotPresent(b"zz".to_vec()))
        );
        assert_eq!(members(&s), vec![b"a"], "all or none");
        s.remove(b"a", None).unwrap();
        assert!(s.is_empty());
    }

    #[test]
    fn an_add_concurrent_with_a_remove_wins() {
        let mut a = Orswot::new();
        a.add(Actor(1), b"x");
        let mut b = a.clone();
        let seen = a.clock().clone();
        a.remove(b"x", Some(&seen)).unwrap();
        b.add(Actor(2), b"x");
        a.merge(&b);
        assert_eq!(members(&a), vec![b"x"]);
    }

    #[test]
    fn a_remove_from_a_context_not_yet_seen_waits_for_it() {
        let mut a = Orswot::new();
        a.add(Actor(1), b"x");
        let mut stale = Orswot::new();
        stale.remove(b"x", Some(a.clock())).unwrap();
        assert_eq!(stale.deferred_len(), 1);
        stale.merge(&a);
        assert!(stale.is_empty(), "the deferred remove ran once x arrived");
        assert_eq!(stale.deferred_len(), 0);
    }
}
