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
//! Invariant (property-tested in `tests/deltas.rs`): for a replica whose
//! clock descends `before`, joining the delta leaves the same state as a
//! full merge of the coordinating replica's state after the operation;
//! joining a delta twice changes nothing the second time.

use eddy_object::{Actor, Dot, VersionVector};

use super::{Dots, Orswot, Precondition};

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
        if !delta.deferred.is_empty() {
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

fn dots_of(dots: &Dots) -> Vec<Dot> {
    dots.iter()
        .map(|(actor, counter)| Dot { actor, counter })
        .collect()
}
