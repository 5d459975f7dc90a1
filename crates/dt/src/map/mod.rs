//! Riak's map (riak_dt_map; design note 019 §3) as a causal map: one
//! version vector for the whole map, and fields whose contents (counter,
//! set, register, flag, nested map) are dots interpreted against that one
//! clock ([`store`]).
//!
//! - An operation takes one new dot of its actor and uses it for
//!   everything it does; removes run before updates ([`apply`]).
//! - Every update of a field makes the op's dot the field's only presence
//!   dot; a field is present while it has presence dots.
//! - A remove with a context drops the dots the context covers, and is
//!   kept (deferred) while the clock does not descend the context; each
//!   merge runs the deferred removes again and forgets those whose context
//!   the clock now descends ([`merge`]).
//!
//! The context a client reads and sends back is the map's clock.
//! [`delta`] runs an operation as a delta another replica can join without
//! the whole state; [`segmented`] stores a big map as a root and segments
//! of top-level fields so that an operation reads and writes only a few.

mod apply;
mod codec;
pub mod delta;
mod merge;
pub mod segmented;
mod store;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use eddy_object::{Actor, VersionVector};

use crate::op::{Field, FieldType, FieldValue};
use store::{Fields, Store, drop_covered_dots};

/// A map's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Map {
    clock: VersionVector,
    fields: Fields,
    /// Removes waiting for the clock to descend their context, by context
    /// (its sorted entries).
    deferred: Deferred,
}

/// Deferred removes by context (its sorted entries).
pub(crate) type Deferred = BTreeMap<Vec<(Actor, u64)>, BTreeSet<Target>>;

/// What a deferred remove removes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Removal {
    /// A field of the map the path leads to.
    Field(Field),
    /// A member of that map's set field `set`.
    Member { set: Vec<u8>, member: Vec<u8> },
    /// That map's flag field `flag` (a disable).
    Disable { flag: Vec<u8> },
}

/// A deferred remove's target: the names of the map fields leading from
/// the top-level map to the nested map holding it (empty: the top-level
/// map), then what it removes there.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Target {
    pub path: Vec<Vec<u8>>,
    pub removal: Removal,
}

impl Target {
    /// The top-level field holding what the remove removes: the first map
    /// of its path, else the field it removes, the set field it removes a
    /// member of, or the flag field it disables. Running the remove
    /// ([`run_target`]) reads and changes that field only.
    pub(crate) fn top_field(&self) -> Field {
        match (self.path.first(), &self.removal) {
            (Some(map), _) => Field::new(map.clone(), FieldType::Map),
            (None, Removal::Field(field)) => field.clone(),
            (None, Removal::Member { set, .. }) => Field::new(set.clone(), FieldType::Set),
            (None, Removal::Disable { flag }) => Field::new(flag.clone(), FieldType::Flag),
        }
    }
}

impl Map {
    /// An empty map that has seen nothing.
    pub fn new() -> Map {
        Map::default()
    }

    /// The map's clock: the context a client reads with the value.
    pub fn clock(&self) -> &VersionVector {
        &self.clock
    }

    /// The present fields and their values, in [`Field`] order (nested maps
    /// likewise, set members in byte order).
    pub fn value(&self) -> Vec<(Field, FieldValue)> {
        store::fields_value(&self.fields)
    }

    /// The number of top-level fields present.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The removes still deferred.
    pub fn deferred_len(&self) -> usize {
        self.deferred.values().map(BTreeSet::len).sum()
    }
}

/// Drops from `fields` what `target` names that `context` covers.
pub(crate) fn run_target(fields: &mut Fields, target: &Target, context: &VersionVector) {
    let mut fields = fields;
    for name in &target.path {
        match fields.get_mut(&Field::new(name.clone(), FieldType::Map)) {
            Some(e) => match &mut e.store {
                Store::Map(nested) => fields = nested,
                _ => return,
            },
            None => return,
        }
    }
    match &target.removal {
        Removal::Field(field) => {
            if let Some(e) = fields.get_mut(field)
                && !e.drop_covered(context)
            {
                fields.remove(field);
            }
        }
        Removal::Member { set, member } => {
            if let Some(e) = fields.get_mut(&Field::new(set.clone(), FieldType::Set))
                && let Store::Set(members) = &mut e.store
                && let Some(dots) = members.get_mut(member)
            {
                drop_covered_dots(dots, context);
                if dots.is_empty() {
                    members.remove(member);
                }
            }
        }
        Removal::Disable { flag } => {
            if let Some(e) = fields.get_mut(&Field::new(flag.clone(), FieldType::Flag))
                && let Store::Flag(dots) = &mut e.store
            {
                drop_covered_dots(dots, context);
            }
        }
    }
}
