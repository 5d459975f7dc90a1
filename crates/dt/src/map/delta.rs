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

use eddy_object::{Actor, Dot, VersionVector};

use super::merge::join_fields;
use super::store::{Embedded, Fields};
use super::{Map, Target};
use crate::op::{DtError, Field, MapOp};
use crate::orswot::delta::NotReady;

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
