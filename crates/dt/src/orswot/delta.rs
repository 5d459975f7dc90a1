//! A set operation as a delta (design note 020 §6): what the operation
//! changed, so a replica that has seen everything the coordinating replica
//! had seen can take the operation in without the whole state.
//!
//! - [`Orswot::apply_op`] runs a client's operation (adds, then removes)
//!   and returns its [`OrswotDelta`]: the clock before it, the dots it
//!   minted, each added member's new dot, the dots it dropped, and the
//!   removes it deferred. Every operation mints at least one dot (a
//!   remove-only operation mints one that tags no member), so a replica
//!   that missed an operation can tell: its clock does not descend the
//!   next operation's `before`.
//! - [`Orswot::join_delta`] takes a delta in, in time proportional to the
//!   delta, when the replica's clock descends `before`; otherwise it
//!   refuses ([`NotReady`]) and the replica needs the full state.
//!
//! - [`OrswotDelta::encode`] and [`OrswotDelta::decode`] are its wire form
//!   (docs/formats/datatypes.md "Set delta"), which the coordinating
//!   replica sends the others.
//!
//! Invariant (property-tested in `tests/deltas.rs`): for a replica whose
//! clock descends `before`, joining the delta leaves the same state as a
//! full merge of the coordinating replica's state after the operation;
//! joining a delta twice changes nothing the second time. A decoded delta
//! is one [`Orswot::apply_op`] could have made, as far as the delta alone
//! tells (`tests/segmented.rs` round-trips real ones).

use eddy_object::{Actor, Dot, VersionVector};

use crate::codec::{ActorTable, DecodeError, Reader, Writer};

use super::{Dots, Orswot, Precondition};

/// The first byte of an encoded delta: its format (distinct from a stored
/// state's version, a set root's and a segment's first byte).
pub(crate) const DELTA_FORMAT: u8 = 0x83;

/// What one set operation changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrswotDelta {
    /// The coordinating replica's clock before the operation.
    pub before: VersionVector,
    /// The dots the operation minted (all of its actor).
    pub minted: Vec<Dot>,
    /// Each added member and its one new dot.
    pub adds: Vec<(Vec<u8>, Dot)>,
    /// Dots the operation dropped, by member.
    pub drops: Vec<(Vec<u8>, Vec<Dot>)>,
    /// Removes the operation deferred: the context and its members.
    pub deferred: Vec<(VersionVector, Vec<Vec<u8>>)>,
}

/// The dots an operation dropped, by member ([`OrswotDelta::drops`]).
type Drops = Vec<(Vec<u8>, Vec<Dot>)>;

/// The removes an operation deferred ([`OrswotDelta::deferred`]).
type DeferredRemoves = Vec<(VersionVector, Vec<Vec<u8>>)>;

/// A replica's clock does not descend a delta's `before`: it missed an
/// operation the delta builds on, and needs the full state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotReady;

impl Orswot {
    /// Runs a client's operation as `actor`: `adds`, then `removes` (all
    /// or nothing: without a context every removed member must be present,
    /// or added by this operation). Returns what it changed.
    pub fn apply_op(
        &mut self,
        actor: Actor,
        adds: &[&[u8]],
        removes: &[&[u8]],
        context: Option<&VersionVector>,
    ) -> Result<OrswotDelta, Precondition> {
        if context.is_none()
            && let Some(absent) = removes
                .iter()
                .find(|m| !self.contains(m) && !adds.contains(m))
        {
            return Err(Precondition::NotPresent(absent.to_vec()));
        }
        let mut delta = OrswotDelta {
            before: self.clock.clone(),
            ..OrswotDelta::default()
        };
        for m in adds {
            let old = self.members.get(*m).map(dots_of).unwrap_or_default();
            self.add(actor, m);
            let dot = Dot {
                actor,
                counter: self.clock.get(actor),
            };
            delta.minted.push(dot);
            delta.adds.push((m.to_vec(), dot));
            if !old.is_empty() {
                delta.drops.push((m.to_vec(), old));
            }
        }
        if !removes.is_empty() {
            self.remove_with_delta(removes, context, &mut delta);
        }
        if delta.minted.is_empty() {
            let dot = Dot {
                actor,
                counter: self.clock.get(actor) + 1,
            };
            self.clock.raise(actor, dot.counter);
            delta.minted.push(dot);
        }
        Ok(delta)
    }

    /// The removes of [`Orswot::apply_op`], recording what they drop.
    fn remove_with_delta(
        &mut self,
        removes: &[&[u8]],
        context: Option<&VersionVector>,
        delta: &mut OrswotDelta,
    ) {
        for m in removes {
            let before = self.members.get(*m).map(dots_of).unwrap_or_default();
            match context {
                None => drop(self.members.remove(*m)),
                Some(c) => self.remove_seen(m, c),
            }
            let after = self.members.get(*m).map(dots_of).unwrap_or_default();
            let dropped: Vec<Dot> = before.into_iter().filter(|d| !after.contains(d)).collect();
            if !dropped.is_empty() {
                delta.drops.push((m.to_vec(), dropped));
            }
        }
        if let Some(c) = context
            && !self.clock.descends(c)
        {
            let entry = self.deferred.entry(c.entries().to_vec()).or_default();
            entry.extend(removes.iter().map(|m| m.to_vec()));
            let members = removes.iter().map(|m| m.to_vec()).collect();
            delta.deferred.push((c.clone(), members));
        }
    }

    /// Takes in a delta another replica's operation produced, if this
    /// replica has seen everything that replica had.
    pub fn join_delta(&mut self, delta: &OrswotDelta) -> Result<(), NotReady> {
        if !self.clock.descends(&delta.before) {
            return Err(NotReady);
        }
        // Adds first: the operation's removes may drop what it added.
        for (m, dot) in &delta.adds {
            if !self.clock.covers(*dot) {
                let dots = self.members.entry(m.clone()).or_default();
                dots.raise(dot.actor, dot.counter);
            }
        }
        for (m, dots) in &delta.drops {
            self.drop_dots(m, dots);
        }
        for dot in &delta.minted {
            self.clock.raise(dot.actor, dot.counter);
        }
        for (context, members) in &delta.deferred {
            let entry = self.deferred.entry(context.entries().to_vec()).or_default();
            entry.extend(members.iter().cloned());
        }
        // A deferred remove runs once the clock descends its context: one
        // the delta brings, or one this replica deferred earlier whose
        // missing dots the delta's minted ones supply (a client read the
        // coordinator after its operation and removed here before the
        // delta arrived). A full merge runs them all too.
        if !self.deferred.is_empty() {
            self.apply_deferred();
        }
        Ok(())
    }

    /// Drops exactly `dots` from `member` (those it has).
    fn drop_dots(&mut self, member: &[u8], dots: &[Dot]) {
        let Some(held) = self.members.get_mut(member) else {
            return;
        };
        for d in dots {
            if held.get(d.actor) == Some(d.counter) {
                held.remove(d.actor);
            }
        }
        if held.is_empty() {
            self.members.remove(member);
        }
    }
}

/// The wire form (docs/formats/datatypes.md "Set delta").
impl OrswotDelta {
    /// The format byte, an actor table, `before`, then the minted dots,
    /// the adds, the drops and the deferred removes, each list in the
    /// delta's order.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(DELTA_FORMAT);
        let table = w.actor_table(self.actors());
        w.clock(&table, &self.before);
        write_dots(&mut w, &table, &self.minted);
        w.len(self.adds.len());
        for (member, dot) in &self.adds {
            w.bytes(member);
            write_dot(&mut w, &table, *dot);
        }
        w.len(self.drops.len());
        for (member, dots) in &self.drops {
            w.bytes(member);
            write_dots(&mut w, &table, dots);
        }
        w.len(self.deferred.len());
        for (context, members) in &self.deferred {
            w.clock(&table, context);
            w.len(members.len());
            members.iter().for_each(|m| w.bytes(m));
        }
        w.buf
    }

    /// Reads what [`OrswotDelta::encode`] wrote, refusing what no
    /// operation makes: a zero counter, no minted dot, a minted dot
    /// `before` has seen, an add whose dot was not minted, a drop of no
    /// dots, a deferred remove of no members or with an empty context,
    /// and trailing bytes.
    pub fn decode(bytes: &[u8]) -> Result<OrswotDelta, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u8()? != DELTA_FORMAT {
            return Err(DecodeError("not a set delta"));
        }
        let table = r.actor_table()?;
        let before = r.clock(&table)?;
        let minted = read_dots(&mut r, &table)?;
        if minted.is_empty() {
            return Err(DecodeError("delta without a minted dot"));
        }
        if minted.iter().any(|&d| before.covers(d)) {
            return Err(DecodeError("minted dot seen before the operation"));
        }
        let adds = read_adds(&mut r, &table, &minted)?;
        let drops = read_drops(&mut r, &table)?;
        let deferred = read_delta_deferred(&mut r, &table)?;
        r.finish()?;
        Ok(OrswotDelta {
            before,
            minted,
            adds,
            drops,
            deferred,
        })
    }

    /// Every actor the delta names.
    fn actors(&self) -> impl Iterator<Item = Actor> + '_ {
        clock_actors(&self.before)
            .chain(self.minted.iter().map(|d| d.actor))
            .chain(self.adds.iter().map(|(_, d)| d.actor))
            .chain(
                self.drops
                    .iter()
                    .flat_map(|(_, ds)| ds.iter().map(|d| d.actor)),
            )
            .chain(self.deferred.iter().flat_map(|(c, _)| clock_actors(c)))
    }
}

fn clock_actors(clock: &VersionVector) -> impl Iterator<Item = Actor> + '_ {
    clock.entries().iter().map(|&(a, _)| a)
}

/// A dot: its actor's index, then its counter.
fn write_dot(w: &mut Writer, table: &ActorTable, dot: Dot) {
    w.actor(table, dot.actor);
    w.varint(dot.counter);
}

/// A list of dots: its length, then each dot.
fn write_dots(w: &mut Writer, table: &ActorTable, dots: &[Dot]) {
    w.len(dots.len());
    dots.iter().for_each(|&d| write_dot(w, table, d));
}

/// A dot as [`write_dot`] wrote it; a zero counter is refused.
fn read_dot(r: &mut Reader, table: &ActorTable) -> Result<Dot, DecodeError> {
    let actor = r.actor(table)?;
    match r.varint()? {
        0 => Err(DecodeError("dot of counter zero")),
        counter => Ok(Dot { actor, counter }),
    }
}

/// A list of dots as [`write_dots`] wrote it.
fn read_dots(r: &mut Reader, table: &ActorTable) -> Result<Vec<Dot>, DecodeError> {
    let n = r.count(2)?;
    (0..n).map(|_| read_dot(r, table)).collect()
}

/// The adds of a delta: each member's dot must be one of `minted`.
fn read_adds(
    r: &mut Reader,
    table: &ActorTable,
    minted: &[Dot],
) -> Result<Vec<(Vec<u8>, Dot)>, DecodeError> {
    let mut sorted = minted.to_vec();
    sorted.sort_unstable();
    let n = r.count(3)?;
    let mut adds = Vec::with_capacity(n);
    for _ in 0..n {
        let member = r.bytes()?.to_vec();
        let dot = read_dot(r, table)?;
        if sorted.binary_search(&dot).is_err() {
            return Err(DecodeError("delta add of a dot not minted"));
        }
        adds.push((member, dot));
    }
    Ok(adds)
}

/// The drops of a delta: at least one dot each.
fn read_drops(r: &mut Reader, table: &ActorTable) -> Result<Drops, DecodeError> {
    let n = r.count(3)?;
    let mut drops = Vec::with_capacity(n);
    for _ in 0..n {
        let member = r.bytes()?.to_vec();
        let dots = read_dots(r, table)?;
        if dots.is_empty() {
            return Err(DecodeError("delta drop of no dots"));
        }
        drops.push((member, dots));
    }
    Ok(drops)
}

/// The deferred removes of a delta: a non-empty context and at least one
/// member each.
fn read_delta_deferred(r: &mut Reader, table: &ActorTable) -> Result<DeferredRemoves, DecodeError> {
    let n = r.count(3)?;
    let mut deferred = Vec::with_capacity(n);
    for _ in 0..n {
        let context = r.clock(table)?;
        if context.is_empty() {
            return Err(DecodeError("deferred remove with an empty context"));
        }
        let members = (0..r.count(1)?)
            .map(|_| r.bytes().map(<[u8]>::to_vec))
            .collect::<Result<Vec<_>, _>>()?;
        if members.is_empty() {
            return Err(DecodeError("deferred remove of no members"));
        }
        deferred.push((context, members));
    }
    Ok(deferred)
}

fn dots_of(dots: &Dots) -> Vec<Dot> {
    dots.iter()
        .map(|(actor, counter)| Dot { actor, counter })
        .collect()
}
