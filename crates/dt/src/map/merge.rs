//! Joining two replicas' maps.
//!
//! With clocks `c1`, `c2`, a dot set joins as the common dots plus each
//! side's dots the other clock has not seen (the other side removed or
//! superseded the rest); dot-tagged entries (register entries, counter
//! entries) likewise. A set member or field left without dots is dropped.
//!
//! Invariant (kept by apply and merge): no state holds a dot that one of
//! its deferred removes' contexts covers for that remove's target. So each
//! merge runs every deferred remove again (to drop what the other side
//! brought that the context had seen), and forgets those whose context the
//! merged clock descends: nothing they could remove can arrive later.

use std::collections::BTreeMap;

use eddy_object::{Actor, Dot, VersionVector};

use super::store::{CounterEntry, Dots, Embedded, Fields, Store};
use super::{Map, run_target};
use crate::op::Field;

impl Map {
    /// Takes in `other`'s state.
    pub fn merge(&mut self, other: &Map) {
        self.fields = join_fields(&self.fields, &self.clock, &other.fields, &other.clock);
        self.clock = self.clock.merge(&other.clock);
        for (context, targets) in &other.deferred {
            self.deferred
                .entry(context.clone())
                .or_default()
                .extend(targets.iter().cloned());
        }
        self.run_deferred();
    }

    /// Runs every deferred remove; forgets those whose context the clock
    /// descends.
    pub(super) fn run_deferred(&mut self) {
        let deferred = std::mem::take(&mut self.deferred);
        for (entries, targets) in deferred {
            let context = VersionVector::from_entries(entries.iter().copied());
            for target in &targets {
                run_target(&mut self.fields, target, &context);
            }
            if !self.clock.descends(&context) {
                self.deferred.insert(entries, targets);
            }
        }
    }
}

fn join_dots(a: &Dots, ca: &VersionVector, b: &Dots, cb: &VersionVector) -> Dots {
    let from_a = a.iter().filter(|&&d| b.contains(&d) || !cb.covers(d));
    let from_b = b.iter().filter(|&&d| !ca.covers(d));
    from_a.chain(from_b).copied().collect()
}

pub(crate) fn join_fields(
    a: &Fields,
    ca: &VersionVector,
    b: &Fields,
    cb: &VersionVector,
) -> Fields {
    let names: std::collections::BTreeSet<&Field> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|f| {
            let empty = Embedded::new(f.kind);
            let ea = a.get(f).unwrap_or(&empty);
            let eb = b.get(f).unwrap_or(&empty);
            let presence = join_dots(&ea.presence, ca, &eb.presence, cb);
            if presence.is_empty() {
                return None;
            }
            let store = join_store(&ea.store, ca, &eb.store, cb);
            Some((f.clone(), Embedded { presence, store }))
        })
        .collect()
}

fn join_store(a: &Store, ca: &VersionVector, b: &Store, cb: &VersionVector) -> Store {
    match (a, b) {
        (Store::Counter(x), Store::Counter(y)) => Store::Counter(join_counters(x, ca, y, cb)),
        (Store::Set(x), Store::Set(y)) => {
            let names: std::collections::BTreeSet<&Vec<u8>> = x.keys().chain(y.keys()).collect();
            let empty = Dots::new();
            let members = names
                .into_iter()
                .filter_map(|m| {
                    let dx = x.get(m).unwrap_or(&empty);
                    let dy = y.get(m).unwrap_or(&empty);
                    let dots = join_dots(dx, ca, dy, cb);
                    (!dots.is_empty()).then(|| (m.clone(), dots))
                })
                .collect();
            Store::Set(members)
        }
        (Store::Register(x), Store::Register(y)) => {
            let from_x = x
                .iter()
                .filter(|(d, _)| y.contains_key(d) || !cb.covers(**d));
            let from_y = y.iter().filter(|(d, _)| !ca.covers(**d));
            Store::Register(from_x.chain(from_y).map(|(d, v)| (*d, v.clone())).collect())
        }
        (Store::Flag(x), Store::Flag(y)) => Store::Flag(join_dots(x, ca, y, cb)),
        (Store::Map(x), Store::Map(y)) => Store::Map(join_fields(x, ca, y, cb)),
        _ => unreachable!("both sides of a field have the field's type"),
    }
}

/// Per actor: the entry both sides hold, or the one the other side has not
/// seen (of two, the later).
fn join_counters(
    x: &BTreeMap<Actor, CounterEntry>,
    ca: &VersionVector,
    y: &BTreeMap<Actor, CounterEntry>,
    cb: &VersionVector,
) -> BTreeMap<Actor, CounterEntry> {
    let actors: std::collections::BTreeSet<&Actor> = x.keys().chain(y.keys()).collect();
    let dot = |actor: Actor, e: &CounterEntry| Dot {
        actor,
        counter: e.counter,
    };
    actors
        .into_iter()
        .filter_map(|&actor| {
            let ex = x.get(&actor);
            let ey = y.get(&actor);
            let keep_x = ex.filter(|e| {
                ey.is_some_and(|o| o.counter == e.counter) || !cb.covers(dot(actor, e))
            });
            let keep_y = ey.filter(|e| !ca.covers(dot(actor, e)));
            let kept = match (keep_x, keep_y) {
                (Some(p), Some(q)) => Some(if p.counter >= q.counter { p } else { q }),
                (p, q) => p.or(q),
            };
            kept.map(|e| (actor, *e))
        })
        .collect()
}
