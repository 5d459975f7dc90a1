//! Applying a client's [`MapOp`] at the coordinating replica.
//!
//! Invariants: an operation takes exactly one new dot, `clock[actor] + 1`
//! of its actor, and uses it for everything it does; removes run before updates at
//! every level of nesting, a set's adds before its removes; an operation
//! that fails changes nothing (it runs on copies of the fields it touches,
//! which replace the originals only when it succeeds).

use std::collections::BTreeSet;

use eddy_object::{Actor, Dot, VersionVector};

use super::store::{CounterEntry, Dots, Embedded, Fields, Store, counter_value, newest};
use super::{Map, Removal, Target};
use crate::op::{DtError, Field, FieldOp, FlagOp, MAP_DEPTH_MAX, MapOp, MapUpdate, SetOp};

/// What every part of one operation shares.
struct Step<'a> {
    dot: Dot,
    context: Option<&'a VersionVector>,
    now_us: u64,
    /// Whether removes with the context are kept as deferred.
    defer: bool,
    deferred: Vec<Target>,
}

impl Step<'_> {
    fn record(&mut self, path: &[Vec<u8>], removal: Removal) {
        if self.defer {
            self.deferred.push(Target {
                path: path.to_vec(),
                removal,
            });
        }
    }
}

/// The field an update applies to: the operation's type decides the
/// field's type.
pub(super) fn target_field(u: &MapUpdate) -> Field {
    Field::new(u.field.name.clone(), u.op.kind())
}

impl Map {
    /// Applies `op` as `actor`, with the `context` the client read (if
    /// any), at server time `now_us` (microseconds since the epoch, the
    /// timestamp of register assigns). All or nothing: on error the map is
    /// unchanged.
    pub fn apply(
        &mut self,
        actor: Actor,
        op: &MapOp,
        context: Option<&VersionVector>,
        now_us: u64,
    ) -> Result<(), DtError> {
        self.apply_touching(actor, op, context, now_us).map(drop)
    }

    /// [`Map::apply`], returning the top-level fields the operation
    /// touched, its dot, and the removes it deferred.
    pub(super) fn apply_touching(
        &mut self,
        actor: Actor,
        op: &MapOp,
        context: Option<&VersionVector>,
        now_us: u64,
    ) -> Result<Applied, DtError> {
        let depth = op.depth();
        if depth > MAP_DEPTH_MAX {
            return Err(DtError::TooDeep { depth });
        }
        let dot = Dot {
            actor,
            counter: self.clock.get(actor) + 1,
        };
        let mut clock = self.clock.clone();
        clock.raise(actor, dot.counter);
        let defer = context.is_some_and(|c| !clock.descends(c));
        let touched: BTreeSet<Field> = op
            .removes
            .iter()
            .cloned()
            .chain(op.updates.iter().map(target_field))
            .collect();
        let mut scratch: Fields = touched
            .iter()
            .filter_map(|f| self.fields.get(f).map(|e| (f.clone(), e.clone())))
            .collect();
        let mut step = Step {
            dot,
            context,
            now_us,
            defer,
            deferred: Vec::new(),
        };
        apply_map_op(&mut scratch, &[], op, &mut step)?;
        for field in &touched {
            match scratch.remove(field) {
                Some(e) => self.fields.insert(field.clone(), e),
                None => self.fields.remove(field),
            };
        }
        self.clock = clock;
        if let Some(context) = context
            && !step.deferred.is_empty()
        {
            self.deferred
                .entry(context.entries().to_vec())
                .or_default()
                .extend(step.deferred.iter().cloned());
        }
        Ok(Applied {
            touched,
            dot,
            deferred: step.deferred,
        })
    }
}

/// What [`Map::apply_touching`] did.
pub(super) struct Applied {
    pub touched: BTreeSet<Field>,
    pub dot: Dot,
    pub deferred: Vec<Target>,
}

fn apply_map_op(
    fields: &mut Fields,
    path: &[Vec<u8>],
    op: &MapOp,
    step: &mut Step,
) -> Result<(), DtError> {
    for field in &op.removes {
        remove_field(fields, path, field, step)?;
    }
    for u in &op.updates {
        update_field(fields, path, u, step)?;
    }
    Ok(())
}

fn remove_field(
    fields: &mut Fields,
    path: &[Vec<u8>],
    field: &Field,
    step: &mut Step,
) -> Result<(), DtError> {
    let Some(context) = step.context else {
        return match fields.remove(field) {
            Some(_) => Ok(()),
            None => Err(DtError::FieldNotPresent(field.clone())),
        };
    };
    if let Some(e) = fields.get_mut(field)
        && !e.drop_covered(context)
    {
        fields.remove(field);
    }
    step.record(path, Removal::Field(field.clone()));
    Ok(())
}

fn update_field(
    fields: &mut Fields,
    path: &[Vec<u8>],
    u: &MapUpdate,
    step: &mut Step,
) -> Result<(), DtError> {
    let field = target_field(u);
    let e = fields
        .entry(field.clone())
        .or_insert_with(|| Embedded::new(field.kind));
    e.presence = Dots::from([step.dot]);
    match (&mut e.store, &u.op) {
        (Store::Counter(entries), &FieldOp::Counter(n)) => {
            let entry = counted(entries.get(&step.dot.actor), step.dot.counter, n)?;
            let others = entries
                .iter()
                .filter(|(a, _)| **a != step.dot.actor)
                .map(|(_, e)| e);
            let value = counter_value(others.chain([&entry]));
            if i64::try_from(value).is_err() {
                return Err(DtError::Overflow);
            }
            entries.insert(step.dot.actor, entry);
        }
        (Store::Set(members), FieldOp::Set(op)) => update_set(members, path, &field, op, step)?,
        (Store::Register(entries), FieldOp::Register(value)) => {
            let kept = newest(entries).filter(|(ts, _)| *ts > step.now_us).cloned();
            let entry = kept.unwrap_or_else(|| (step.now_us, value.clone()));
            entries.clear();
            entries.insert(step.dot, entry);
        }
        (Store::Flag(dots), FieldOp::Flag(FlagOp::Enable)) => *dots = Dots::from([step.dot]),
        (Store::Flag(dots), FieldOp::Flag(FlagOp::Disable)) => match step.context {
            None => dots.clear(),
            Some(context) => {
                dots.retain(|&d| !context.covers(d));
                let flag = field.name.clone();
                step.record(path, Removal::Disable { flag });
            }
        },
        (Store::Map(nested), FieldOp::Map(op)) => {
            let mut inner = path.to_vec();
            inner.push(field.name.clone());
            apply_map_op(nested, &inner, op, step)?;
        }
        _ => unreachable!("a field's store is of the field's type, the op's"),
    }
    Ok(())
}

/// The actor's counter entry after adding `n` under dot counter `counter`.
fn counted(old: Option<&CounterEntry>, counter: u64, n: i64) -> Result<CounterEntry, DtError> {
    let (inc, dec) = old.map_or((0, 0), |e| (e.inc, e.dec));
    let (inc, dec) = match u64::try_from(n) {
        Ok(up) => (inc.checked_add(up), Some(dec)),
        Err(_) => (Some(inc), dec.checked_add(n.unsigned_abs())),
    };
    match (inc, dec) {
        (Some(inc), Some(dec)) => Ok(CounterEntry { counter, inc, dec }),
        _ => Err(DtError::Overflow),
    }
}

fn update_set(
    members: &mut std::collections::BTreeMap<Vec<u8>, Dots>,
    path: &[Vec<u8>],
    field: &Field,
    op: &SetOp,
    step: &mut Step,
) -> Result<(), DtError> {
    for m in &op.adds {
        members.insert(m.clone(), Dots::from([step.dot]));
    }
    for m in &op.removes {
        let Some(context) = step.context else {
            members
                .remove(m)
                .ok_or_else(|| DtError::NotPresent(m.clone()))?;
            continue;
        };
        if let Some(dots) = members.get_mut(m) {
            dots.retain(|&d| !context.covers(d));
            if dots.is_empty() {
                members.remove(m);
            }
        }
        let removal = Removal::Member {
            set: field.name.clone(),
            member: m.clone(),
        };
        step.record(path, removal);
    }
    Ok(())
}
