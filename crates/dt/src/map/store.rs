//! The embedded values of a map's fields, as dots interpreted against the
//! one map clock (design note 019 §3, riak_dt_map with emcntr, orswot,
//! lwwreg and od_flag inside).
//!
//! Invariants:
//! - a field's [`Store`] variant is the one its [`Field::kind`] names;
//! - a field kept in a map has non-empty presence dots, a set member kept
//!   in a set has non-empty dots;
//! - every dot a store holds is covered by the map's clock;
//! - a counter entry's dot is its own actor's.
//!
//! Riak's emcntr anomaly is kept on purpose: an actor's counter entry
//! carries its earlier totals under its latest dot, so an increment
//! concurrent with a remove of the field keeps the whole of that actor's
//! total, including what the remove had seen.

use std::collections::{BTreeMap, BTreeSet};

use eddy_object::{Actor, Dot, VersionVector};

use crate::op::{Field, FieldType, FieldValue};

/// A set of dots.
pub(crate) type Dots = BTreeSet<Dot>;

/// A map's fields (top-level or nested).
pub(crate) type Fields = BTreeMap<Field, Embedded>;

/// One actor's share of a counter field (Riak's emcntr `{event, P, N}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CounterEntry {
    /// The counter of the dot of the actor's latest update.
    pub counter: u64,
    /// Total of the actor's increments.
    pub inc: u64,
    /// Total of the actor's decrements (a magnitude).
    pub dec: u64,
}

/// The contents of one field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Store {
    /// Per actor its latest entry.
    Counter(BTreeMap<Actor, CounterEntry>),
    /// Member → the dots of the adds that made it.
    Set(BTreeMap<Vec<u8>, Dots>),
    /// Dot → (timestamp in microseconds, value).
    Register(BTreeMap<Dot, (u64, Vec<u8>)>),
    /// The dots of the enables not yet disabled.
    Flag(Dots),
    Map(Fields),
}

impl Store {
    /// The store of a field of `kind` that was never updated.
    pub fn empty(kind: FieldType) -> Store {
        match kind {
            FieldType::Counter => Store::Counter(BTreeMap::new()),
            FieldType::Set => Store::Set(BTreeMap::new()),
            FieldType::Register => Store::Register(BTreeMap::new()),
            FieldType::Flag => Store::Flag(Dots::new()),
            FieldType::Map => Store::Map(Fields::new()),
        }
    }

    /// What a client reads. A counter whose merged totals leave the i64
    /// range reads as the nearest bound.
    pub fn value(&self) -> FieldValue {
        match self {
            Store::Counter(entries) => {
                let v = counter_value(entries.values());
                FieldValue::Counter(v.clamp(i64::MIN.into(), i64::MAX.into()) as i64)
            }
            Store::Set(members) => FieldValue::Set(members.keys().cloned().collect()),
            Store::Register(entries) => {
                FieldValue::Register(newest(entries).map(|(_, v)| v.clone()).unwrap_or_default())
            }
            Store::Flag(dots) => FieldValue::Flag(!dots.is_empty()),
            Store::Map(fields) => FieldValue::Map(fields_value(fields)),
        }
    }

    /// Drops every dot `context` covers (recursively for a nested map).
    pub fn drop_covered(&mut self, context: &VersionVector) {
        match self {
            Store::Counter(entries) => entries.retain(|&actor, e| {
                !context.covers(Dot {
                    actor,
                    counter: e.counter,
                })
            }),
            Store::Set(members) => members.retain(|_, dots| {
                drop_covered_dots(dots, context);
                !dots.is_empty()
            }),
            Store::Register(entries) => entries.retain(|&dot, _| !context.covers(dot)),
            Store::Flag(dots) => drop_covered_dots(dots, context),
            Store::Map(fields) => drop_covered_fields(fields, context),
        }
    }
}

/// A field: the dots of its latest updates, and its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Embedded {
    /// The dots of the updates that made the field present.
    pub presence: Dots,
    pub store: Store,
}

impl Embedded {
    /// A field of `kind` that was never updated (not yet present).
    pub fn new(kind: FieldType) -> Embedded {
        Embedded {
            presence: Dots::new(),
            store: Store::empty(kind),
        }
    }

    /// Drops every dot `context` covers; returns whether the field is
    /// still present.
    pub fn drop_covered(&mut self, context: &VersionVector) -> bool {
        drop_covered_dots(&mut self.presence, context);
        self.store.drop_covered(context);
        !self.presence.is_empty()
    }
}

pub(crate) fn drop_covered_dots(dots: &mut Dots, context: &VersionVector) {
    dots.retain(|&d| !context.covers(d));
}

/// Drops the dots `context` covers from every field, and the fields that
/// are no longer present.
pub(crate) fn drop_covered_fields(fields: &mut Fields, context: &VersionVector) {
    fields.retain(|_, e| e.drop_covered(context));
}

/// The fields' values, in [`Field`] order.
pub(crate) fn fields_value(fields: &Fields) -> Vec<(Field, FieldValue)> {
    fields
        .iter()
        .map(|(f, e)| (f.clone(), e.store.value()))
        .collect()
}

/// Sum of increments minus sum of decrements, unbounded enough for any
/// number of u64 totals a state can hold.
pub(crate) fn counter_value<'a>(entries: impl Iterator<Item = &'a CounterEntry>) -> i128 {
    entries.map(|e| i128::from(e.inc) - i128::from(e.dec)).sum()
}

/// The register entry with the largest (timestamp, value).
pub(crate) fn newest(entries: &BTreeMap<Dot, (u64, Vec<u8>)>) -> Option<&(u64, Vec<u8>)> {
    entries.values().max()
}
