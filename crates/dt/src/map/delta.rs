//! A map operation as a delta (design note 020 §6): the clock before it,
//! its one dot, the new contents of each top-level field it touched (or
//! their absence), and the removes it deferred. A replica whose clock
//! descends `before` joins each touched field with the full join's rule
//! and leaves the others alone: the operation changed nothing else, and
//! the replica already holds every effect the coordinating replica's other
//! fields had. Its cost is the touched fields' size, not the map's.
//!
//! Invariant (property-tested in `tests/deltas.rs`): for a ready replica,
//! joining the delta leaves the same state as a full merge of the
//! coordinating replica's state after the operation; a second join
//! changes nothing.
//!
//! [`MapDelta::encode`] and [`MapDelta::decode`] are its wire form
//! (docs/formats/datatype-map.md "Map delta"); a decoded delta is one
//! [`Map::apply_op`] could have made, as far as the delta alone tells.

use std::collections::BTreeSet;

use eddy_object::{Actor, Dot, VersionVector};

use super::codec::{Decoder, embedded_actors, target, write_dot, write_fields, write_target};
use super::merge::join_fields;
use super::store::{Embedded, Fields};
use super::{Map, Target};
use crate::codec::{DecodeError, Reader, Writer};
use crate::op::{DtError, Field, MapOp};
use crate::orswot::delta::NotReady;
use crate::segmented::table::Key;

/// The first byte of an encoded map delta (a set delta's is 0x83).
pub(crate) const DELTA_FORMAT: u8 = 0x86;

/// What one map operation changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapDelta {
    before: VersionVector,
    dot: Dot,
    /// Each touched top-level field's contents after the operation
    /// (`None`: the field is gone).
    fields: Vec<(Field, Option<Embedded>)>,
    /// The context and targets of the removes the operation deferred.
    deferred: Option<(VersionVector, Vec<Target>)>,
}

impl MapDelta {
    /// The coordinating replica's clock before the operation.
    pub fn before(&self) -> &VersionVector {
        &self.before
    }

    /// The operation's dot.
    pub fn dot(&self) -> Dot {
        self.dot
    }

    /// The top-level fields joining the delta reads and changes: those it
    /// carries, and those its deferred removes target.
    pub(super) fn top_fields(&self) -> Vec<Field> {
        let carried = self.fields.iter().map(|(f, _)| f.clone());
        let targets = self.deferred.iter().flat_map(|(_, ts)| ts);
        carried.chain(targets.map(Target::top_field)).collect()
    }
}

impl Map {
    /// [`Map::apply`], returning the operation's delta.
    pub fn apply_op(
        &mut self,
        actor: Actor,
        op: &MapOp,
        context: Option<&VersionVector>,
        now_us: u64,
    ) -> Result<MapDelta, DtError> {
        let before = self.clock.clone();
        let applied = self.apply_touching(actor, op, context, now_us)?;
        let fields = applied
            .touched
            .into_iter()
            .map(|f| {
                let now = self.fields.get(&f).cloned();
                (f, now)
            })
            .collect();
        let deferred = match (context, applied.deferred.is_empty()) {
            (Some(c), false) => Some((c.clone(), applied.deferred)),
            _ => None,
        };
        Ok(MapDelta {
            before,
            dot: applied.dot,
            fields,
            deferred,
        })
    }

    /// Takes in a delta another replica's operation produced, if this
    /// replica has seen everything that replica had.
    pub fn join_delta(&mut self, delta: &MapDelta) -> Result<(), NotReady> {
        if !self.clock.descends(&delta.before) {
            return Err(NotReady);
        }
        let mut after = delta.before.clone();
        after.raise(delta.dot.actor, delta.dot.counter);
        for (field, theirs) in &delta.fields {
            let mine: Fields = self
                .fields
                .get(field)
                .map(|e| Fields::from([(field.clone(), e.clone())]))
                .unwrap_or_default();
            let theirs: Fields = theirs
                .as_ref()
                .map(|e| Fields::from([(field.clone(), e.clone())]))
                .unwrap_or_default();
            let joined: Option<Embedded> =
                join_fields(&mine, &self.clock, &theirs, &after).remove(field);
            match joined {
                Some(e) => self.fields.insert(field.clone(), e),
                None => self.fields.remove(field),
            };
        }
        self.clock.raise(delta.dot.actor, delta.dot.counter);
        if let Some((context, targets)) = &delta.deferred {
            self.deferred
                .entry(context.entries().to_vec())
                .or_default()
                .extend(targets.iter().cloned());
        }
        self.run_deferred();
        Ok(())
    }
}

/// The wire form (docs/formats/datatype-map.md "Map delta").
impl MapDelta {
    /// The format byte, an actor table, `before`, the dot, the present
    /// fields (as a map's body writes fields), the fields gone (name and
    /// type), then the deferred removes, if any (their context and
    /// targets, in the operation's order).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(DELTA_FORMAT);
        let table = w.actor_table(self.actors());
        w.clock(&table, &self.before);
        write_dot(&mut w, &table, self.dot);
        let present: Vec<(&Field, &Embedded)> = (self.fields.iter())
            .filter_map(|(f, e)| e.as_ref().map(|e| (f, e)))
            .collect();
        write_fields(&mut w, &table, present.into_iter());
        let gone: Vec<&Field> = (self.fields.iter())
            .filter(|(_, e)| e.is_none())
            .map(|(f, _)| f)
            .collect();
        w.len(gone.len());
        gone.iter().for_each(|f| f.write(&mut w));
        match &self.deferred {
            None => w.u8(0),
            Some((context, targets)) => {
                w.u8(1);
                w.clock(&table, context);
                w.len(targets.len());
                targets.iter().for_each(|t| write_target(&mut w, t));
            }
        }
        w.buf
    }

    /// Reads what [`MapDelta::encode`] wrote, refusing what no operation
    /// makes: a dot not its actor's next after `before`, field contents
    /// with dots the clock after the operation does not cover (or anything
    /// a map's body refuses), fields out of order or both present and gone,
    /// a deferred context the clock after the operation descends or
    /// without targets, and truncated input or trailing bytes.
    pub fn decode(bytes: &[u8]) -> Result<MapDelta, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u8()? != DELTA_FORMAT {
            return Err(DecodeError("not a map delta"));
        }
        let table = r.actor_table()?;
        let before = r.clock(&table)?;
        let dot = Dot {
            actor: r.actor(&table)?,
            counter: r.varint()?,
        };
        if before.get(dot.actor).checked_add(1) != Some(dot.counter) {
            return Err(DecodeError("delta dot not its actor's next"));
        }
        let mut after = before.clone();
        after.raise(dot.actor, dot.counter);
        let present = Decoder::new(&table, &after).fields(&mut r, 1)?;
        let gone = read_gone(&mut r)?;
        let fields = merge_fields(present, gone)?;
        let deferred = read_deferred(&mut r, &table, &after)?;
        r.finish()?;
        Ok(MapDelta {
            before,
            dot,
            fields,
            deferred,
        })
    }

    /// Every actor the delta names.
    fn actors(&self) -> BTreeSet<Actor> {
        let mut actors = BTreeSet::new();
        actors.extend(self.before.entries().iter().map(|&(a, _)| a));
        actors.insert(self.dot.actor);
        embedded_actors(
            self.fields.iter().filter_map(|(_, e)| e.as_ref()),
            &mut actors,
        );
        if let Some((context, _)) = &self.deferred {
            actors.extend(context.entries().iter().map(|&(a, _)| a));
        }
        actors
    }
}

/// The fields a delta says are gone: strictly increasing.
fn read_gone(r: &mut Reader) -> Result<Vec<Field>, DecodeError> {
    let n = r.count(2)?;
    let mut gone: Vec<Field> = Vec::with_capacity(n);
    for _ in 0..n {
        let field = Field::read(r)?;
        if gone.last().is_some_and(|last| *last >= field) {
            return Err(DecodeError("gone fields not sorted"));
        }
        gone.push(field);
    }
    Ok(gone)
}

/// The present and gone fields as one list in field order; a field in
/// both is refused.
fn merge_fields(
    present: Fields,
    gone: Vec<Field>,
) -> Result<Vec<(Field, Option<Embedded>)>, DecodeError> {
    let mut fields: Vec<(Field, Option<Embedded>)> = (present.into_iter())
        .map(|(f, e)| (f, Some(e)))
        .chain(gone.into_iter().map(|f| (f, None)))
        .collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    match fields.windows(2).any(|w| w[0].0 == w[1].0) {
        true => Err(DecodeError("delta field both present and gone")),
        false => Ok(fields),
    }
}

/// A delta's deferred removes: a flag byte, then (if 1) the context, which
/// the clock after the operation must not descend, and at least one
/// target.
fn read_deferred(
    r: &mut Reader,
    table: &crate::codec::ActorTable,
    after: &VersionVector,
) -> Result<Option<(VersionVector, Vec<Target>)>, DecodeError> {
    match r.u8()? {
        0 => Ok(None),
        1 => {
            let context = r.clock(table)?;
            if after.descends(&context) {
                return Err(DecodeError("deferred remove already seen"));
            }
            let k = r.count(3)?;
            if k == 0 {
                return Err(DecodeError("deferred context without removes"));
            }
            let targets = (0..k).map(|_| target(r)).collect::<Result<Vec<_>, _>>()?;
            Ok(Some((context, targets)))
        }
        _ => Err(DecodeError("unknown deferred flag")),
    }
}
