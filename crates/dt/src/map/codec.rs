//! The stored encoding of a map (docs/formats/datatype-map.md): one actor
//! table for everything the map names, the clock, the fields in order
//! (each a length-prefixed body), then the deferred removes.
//!
//! Invariants the decoder checks, so that a decoded map keeps every
//! invariant of [`super::store`]: fields sorted without repeats, each with
//! presence dots; known type tags; nesting at most [`MAP_DEPTH_MAX`] deep
//! (so corrupt input cannot exhaust the stack); dots and entries sorted
//! without repeats and covered by the clock; set members with dots;
//! deferred removes whose context the clock does not descend; nothing left
//! over inside a length-prefixed body. It never panics.
//!
//! The pieces (fields, deferred removes, targets) are shared with the
//! records of a segmented map ([`super::segmented`]) and a delta's wire
//! form ([`super::delta`]), which check the same rules.

use std::collections::BTreeSet;

use eddy_object::{Actor, Dot, VersionVector};

use super::store::{CounterEntry, Dots, Embedded, Fields, Store};
use super::{Deferred, Map, Removal, Target};
use crate::codec::{ActorTable, DecodeError, Reader, Writer};
use crate::op::{Field, FieldType, MAP_DEPTH_MAX};

pub(super) fn kind_of(tag: u8) -> Result<FieldType, DecodeError> {
    FieldType::from_tag(tag).ok_or(DecodeError("unknown map field type"))
}

const REMOVE_FIELD: u8 = 0;
const REMOVE_MEMBER: u8 = 1;
const DISABLE_FLAG: u8 = 2;

impl Map {
    /// Appends the map's state to `w`.
    pub fn encode(&self, w: &mut Writer) {
        let mut actors = BTreeSet::new();
        actors.extend(self.clock.entries().iter().map(|e| e.0));
        embedded_actors(self.fields.values(), &mut actors);
        deferred_actors(&self.deferred, &mut actors);
        let table = w.actor_table(actors);
        w.clock(&table, &self.clock);
        write_fields(w, &table, self.fields.iter());
        write_deferred(w, &table, &self.deferred);
    }

    /// Reads a map [`Map::encode`] wrote (the caller checks that nothing
    /// follows).
    pub fn decode(r: &mut Reader) -> Result<Map, DecodeError> {
        let table = r.actor_table()?;
        let clock = r.clock(&table)?;
        let dec = Decoder::new(&table, &clock);
        let fields = dec.fields(r, 1)?;
        let deferred = dec.deferred(r)?;
        Ok(Map {
            clock,
            fields,
            deferred,
        })
    }
}

/// Adds the actors the deferred removes' contexts name to `out`.
pub(super) fn deferred_actors(deferred: &Deferred, out: &mut BTreeSet<Actor>) {
    out.extend(deferred.keys().flatten().map(|e| e.0));
}

/// Adds every actor the fields' dots and counter entries name (nested
/// maps' too) to `out`.
pub(super) fn embedded_actors<'a>(
    fields: impl IntoIterator<Item = &'a Embedded>,
    out: &mut BTreeSet<Actor>,
) {
    for e in fields {
        out.extend(e.presence.iter().map(|d| d.actor));
        match &e.store {
            Store::Counter(entries) => out.extend(entries.keys().copied()),
            Store::Set(members) => out.extend(members.values().flatten().map(|d| d.actor)),
            Store::Register(entries) => out.extend(entries.keys().map(|d| d.actor)),
            Store::Flag(dots) => out.extend(dots.iter().map(|d| d.actor)),
            Store::Map(nested) => embedded_actors(nested.values(), out),
        }
    }
}

pub(super) fn write_dot(w: &mut Writer, table: &ActorTable, dot: Dot) {
    w.actor(table, dot.actor);
    w.varint(dot.counter);
}

fn write_dots(w: &mut Writer, table: &ActorTable, dots: &Dots) {
    w.len(dots.len());
    dots.iter().for_each(|&d| write_dot(w, table, d));
}

/// Writes fields (in order): their count, then each field's name, type
/// tag and length-prefixed body (presence, contents). A map's fields, a
/// nested map's, a segment's and a delta's present fields share it.
pub(super) fn write_fields<'a>(
    w: &mut Writer,
    table: &ActorTable,
    fields: impl ExactSizeIterator<Item = (&'a Field, &'a Embedded)>,
) {
    w.len(fields.len());
    for (field, e) in fields {
        w.bytes(&field.name);
        w.u8(field.kind.tag());
        let mut body = Writer::new();
        write_dots(&mut body, table, &e.presence);
        write_store(&mut body, table, &e.store);
        w.bytes(&body.buf);
    }
}

fn write_store(w: &mut Writer, table: &ActorTable, store: &Store) {
    match store {
        Store::Counter(entries) => {
            w.len(entries.len());
            for (&actor, e) in entries {
                w.actor(table, actor);
                w.varint(e.counter);
                w.varint(e.inc);
                w.varint(e.dec);
            }
        }
        Store::Set(members) => {
            w.len(members.len());
            for (m, dots) in members {
                w.bytes(m);
                write_dots(w, table, dots);
            }
        }
        Store::Register(entries) => {
            w.len(entries.len());
            for (&dot, (ts, value)) in entries {
                write_dot(w, table, dot);
                w.varint(*ts);
                w.bytes(value);
            }
        }
        Store::Flag(dots) => write_dots(w, table, dots),
        Store::Map(nested) => write_fields(w, table, nested.iter()),
    }
}

/// Writes the deferred removes: their count, then by context (in order)
/// the context and its targets.
pub(super) fn write_deferred(w: &mut Writer, table: &ActorTable, deferred: &Deferred) {
    w.len(deferred.len());
    for (context, targets) in deferred {
        let context = VersionVector::from_entries(context.iter().copied());
        w.clock(table, &context);
        w.len(targets.len());
        targets.iter().for_each(|t| write_target(w, t));
    }
}

pub(super) fn write_target(w: &mut Writer, target: &Target) {
    w.len(target.path.len());
    target.path.iter().for_each(|name| w.bytes(name));
    match &target.removal {
        Removal::Field(field) => {
            w.u8(REMOVE_FIELD);
            w.bytes(&field.name);
            w.u8(field.kind.tag());
        }
        Removal::Member { set, member } => {
            w.u8(REMOVE_MEMBER);
            w.bytes(set);
            w.bytes(member);
        }
        Removal::Disable { flag } => {
            w.u8(DISABLE_FLAG);
            w.bytes(flag);
        }
    }
}

/// Fails with `what` unless `items` is strictly increasing.
fn sorted<T: Ord>(
    items: impl IntoIterator<Item = T>,
    what: &'static str,
) -> Result<(), DecodeError> {
    let mut last = None;
    for item in items {
        if last.as_ref().is_some_and(|l| *l >= item) {
            return Err(DecodeError(what));
        }
        last = Some(item);
    }
    Ok(())
}

/// Reads what the writers above wrote, with the actor table of the record
/// and the clock every dot must be covered by.
pub(super) struct Decoder<'a> {
    table: &'a ActorTable,
    clock: &'a VersionVector,
}

impl<'a> Decoder<'a> {
    pub(super) fn new(table: &'a ActorTable, clock: &'a VersionVector) -> Decoder<'a> {
        Decoder { table, clock }
    }

    fn dot(&self, r: &mut Reader) -> Result<Dot, DecodeError> {
        let actor = r.actor(self.table)?;
        let counter = r.varint()?;
        let dot = Dot { actor, counter };
        if counter == 0 || !self.clock.covers(dot) {
            return Err(DecodeError("dot not covered by the map's clock"));
        }
        Ok(dot)
    }

    fn dots(&self, r: &mut Reader) -> Result<Dots, DecodeError> {
        let n = r.count(2)?;
        let list = (0..n).map(|_| self.dot(r)).collect::<Result<Vec<_>, _>>()?;
        sorted(&list, "dots not sorted")?;
        Ok(list.into_iter().collect())
    }

    /// Fields as [`write_fields`] wrote them, at nesting `depth` (1: a
    /// top-level map's).
    pub(super) fn fields(&self, r: &mut Reader, depth: usize) -> Result<Fields, DecodeError> {
        if depth > MAP_DEPTH_MAX {
            return Err(DecodeError("maps nested too deep"));
        }
        let n = r.count(3)?;
        let mut list = Vec::with_capacity(n);
        for _ in 0..n {
            let name = r.bytes()?.to_vec();
            let field = Field::new(name, kind_of(r.u8()?)?);
            let mut body = Reader::new(r.bytes()?);
            let presence = self.dots(&mut body)?;
            if presence.is_empty() {
                return Err(DecodeError("map field without presence"));
            }
            let store = self.store(&mut body, field.kind, depth)?;
            body.finish()?;
            list.push((field, Embedded { presence, store }));
        }
        sorted(list.iter().map(|(f, _)| f), "map fields not sorted")?;
        Ok(list.into_iter().collect())
    }

    fn store(&self, r: &mut Reader, kind: FieldType, depth: usize) -> Result<Store, DecodeError> {
        Ok(match kind {
            FieldType::Counter => {
                let n = r.count(4)?;
                let mut list = Vec::with_capacity(n);
                for _ in 0..n {
                    let dot = self.dot(r)?;
                    let (inc, dec) = (r.varint()?, r.varint()?);
                    let counter = dot.counter;
                    list.push((dot.actor, CounterEntry { counter, inc, dec }));
                }
                sorted(list.iter().map(|e| e.0), "counter entries not sorted")?;
                Store::Counter(list.into_iter().collect())
            }
            FieldType::Set => {
                let n = r.count(2)?;
                let mut list = Vec::with_capacity(n);
                for _ in 0..n {
                    let member = r.bytes()?.to_vec();
                    let dots = self.dots(r)?;
                    if dots.is_empty() {
                        return Err(DecodeError("set member without dots"));
                    }
                    list.push((member, dots));
                }
                sorted(list.iter().map(|e| &e.0), "set members not sorted")?;
                Store::Set(list.into_iter().collect())
            }
            FieldType::Register => {
                let n = r.count(4)?;
                let mut list = Vec::with_capacity(n);
                for _ in 0..n {
                    let dot = self.dot(r)?;
                    let ts = r.varint()?;
                    list.push((dot, (ts, r.bytes()?.to_vec())));
                }
                sorted(list.iter().map(|e| e.0), "register entries not sorted")?;
                Store::Register(list.into_iter().collect())
            }
            FieldType::Flag => Store::Flag(self.dots(r)?),
            FieldType::Map => Store::Map(self.fields(r, depth + 1)?),
        })
    }

    pub(super) fn deferred(&self, r: &mut Reader) -> Result<Deferred, DecodeError> {
        let n = r.count(2)?;
        let mut list = Vec::with_capacity(n);
        for _ in 0..n {
            let context = r.clock(self.table)?;
            if self.clock.descends(&context) {
                return Err(DecodeError("deferred remove already seen"));
            }
            let k = r.count(3)?;
            if k == 0 {
                return Err(DecodeError("deferred context without removes"));
            }
            let targets = (0..k).map(|_| target(r)).collect::<Result<Vec<_>, _>>()?;
            sorted(&targets, "deferred removes not sorted")?;
            list.push((context.entries().to_vec(), targets.into_iter().collect()));
        }
        sorted(list.iter().map(|e| &e.0), "deferred contexts not sorted")?;
        Ok(list.into_iter().collect())
    }
}

pub(super) fn target(r: &mut Reader) -> Result<Target, DecodeError> {
    let depth = r.count(1)?;
    if depth >= MAP_DEPTH_MAX {
        return Err(DecodeError("deferred remove nested too deep"));
    }
    let path = (0..depth)
        .map(|_| r.bytes().map(<[u8]>::to_vec))
        .collect::<Result<Vec<_>, _>>()?;
    let removal = match r.u8()? {
        REMOVE_FIELD => {
            let name = r.bytes()?.to_vec();
            Removal::Field(Field::new(name, kind_of(r.u8()?)?))
        }
        REMOVE_MEMBER => {
            let set = r.bytes()?.to_vec();
            let member = r.bytes()?.to_vec();
            Removal::Member { set, member }
        }
        DISABLE_FLAG => Removal::Disable {
            flag: r.bytes()?.to_vec(),
        },
        _ => return Err(DecodeError("unknown deferred remove kind")),
    };
    Ok(Target { path, removal })
}
