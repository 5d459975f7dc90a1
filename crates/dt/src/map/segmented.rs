//! A big map stored in pieces, as a big set is (design note 020 §6;
//! docs/formats/datatype-map.md "Segmented map"): a small **root** record
//! and **segment** records over the map's top-level fields, so that one
//! operation reads and writes the root and the segments of the top-level
//! fields it touches, never the whole map. A top-level field lives whole in
//! one segment, with everything it embeds (a nested map, a set's members).
//!
//! - The root ([`MapRoot`]) holds the map's one clock, its deferred
//!   removes, the next segment id, the fields per segment and a table of
//!   segments ([`SegmentRef<Field>`]): each a contiguous range of top-level
//!   fields in [`Field`] order (name, then type), named by the least field it
//!   may hold (for the first segment the least field of all, the counter
//!   named ""), with its record's id, field count and an XXH3-64 digest of
//!   its bytes. Splitting, fresh and dead ids, splits and emptied segments
//!   follow the set's rules (`crate::segmented::table`).
//! - A segment ([`MapSegment`]) holds its fields as a map's body writes
//!   them; their dots are covered by the root's clock.
//! - An operation runs on a [`MapRoot::partial`] map (the root's clock and
//!   deferred removes, the fields of the segments it touches) and
//!   [`MapRoot::write_back`] turns the result into new segment records.
//!
//! Why a partial map behaves as the whole for what it touches:
//! [`Map::apply_op`] (and `apply`) copies, changes and puts back only the
//! top-level fields the operation names (its removes, and its updates'
//! fields of the update's type), besides the clock and the deferred
//! removes, which the root holds; it never runs deferred removes.
//! [`Map::join_delta`] checks readiness against the clock, joins only the
//! delta's fields, then runs every deferred remove (the root's and the
//! delta's), each of which reads and changes only its target's top-level
//! field ([`super::Target::top_field`]). So [`MapRoot::touched`] always
//! includes the top-level fields of the root's deferred removes, and
//! [`MapRoot::touched_by_delta`] those of the delta's too.

use eddy_object::VersionVector;

use crate::codec::{DecodeError, Reader, Writer};
use crate::op::{Field, FieldType, FieldValue, MapOp};
use crate::segmented::table::{
    Key, SEGMENT_MEMBERS, SegmentRef, SegmentWrite, Table, sorted_unique,
};

use super::apply::target_field;
use super::codec::{
    Decoder, deferred_actors, embedded_actors, kind_of, write_deferred, write_fields,
};
use super::delta::MapDelta;
use super::store::{Embedded, Fields, fields_value};
use super::{Deferred, Map, Target};

/// The root format's version (the byte after [`MapRoot::MAGIC`]).
const ROOT_FORMAT: u8 = 1;

/// The first byte of an encoded map segment.
pub(crate) const SEGMENT_FORMAT: u8 = 0x85;

/// A top-level field as a segment's key: its name, then its type tag.
impl Key for Field {
    const MIN_BYTES: usize = 2;

    /// The counter named "": names order first, and counters first among
    /// one name's fields.
    fn bottom() -> Self {
        Field::new(Vec::new(), FieldType::Counter)
    }

    fn write(&self, w: &mut Writer) {
        w.bytes(&self.name);
        w.u8(self.kind.tag());
    }

    fn read(r: &mut Reader) -> Result<Self, DecodeError> {
        let name = r.bytes()?.to_vec();
        Ok(Field::new(name, kind_of(r.u8()?)?))
    }
}

/// The root record of a segmented map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapRoot {
    clock: VersionVector,
    deferred: Deferred,
    /// The segments, by top-level field range.
    table: Table<Field>,
}

/// The decoded top-level fields of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapSegment {
    fields: Fields,
}

impl MapSegment {
    /// How many top-level fields the segment holds.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The fields and their values, in [`Field`] order.
    pub fn value(&self) -> Vec<(Field, FieldValue)> {
        fields_value(&self.fields)
    }
}

impl Map {
    /// Splits a whole map into a root and its segments of
    /// [`SEGMENT_MEMBERS`] top-level fields, ids from `first_id` on (the
    /// storage passes the old root's next id when it replaces a segmented
    /// value). A map without fields gets one empty segment.
    pub fn into_segments(self, first_id: u64) -> (MapRoot, Vec<(u64, Vec<u8>)>) {
        self.into_segments_of(first_id, SEGMENT_MEMBERS)
    }

    /// [`Map::into_segments`] with `segment_fields` top-level fields per
    /// segment (at least 1): the root remembers it, and splits a segment
    /// above twice that on write-back. Tests use small sizes.
    pub fn into_segments_of(
        self,
        first_id: u64,
        segment_fields: usize,
    ) -> (MapRoot, Vec<(u64, Vec<u8>)>) {
        let Map {
            clock,
            fields,
            deferred,
        } = self;
        let (table, puts) = Table::split(fields, first_id, segment_fields, encode_segment);
        let root = MapRoot {
            clock,
            deferred,
            table,
        };
        (root, puts)
    }
}

impl MapRoot {
    /// The first byte of an encoded map root (a set root's is 0x81, a
    /// whole stored state's its format version, 1).
    pub const MAGIC: u8 = 0x84;

    /// Whether `bytes` are a map root's (by the first byte alone).
    pub fn is_root(bytes: &[u8]) -> bool {
        bytes.first() == Some(&Self::MAGIC)
    }

    /// The map's clock: the context a client reads.
    pub fn clock(&self) -> &VersionVector {
        &self.clock
    }

    /// The segments, in field order.
    pub fn segments(&self) -> &[SegmentRef<Field>] {
        self.table.entries()
    }

    /// How many top-level fields the map holds.
    pub fn len(&self) -> u64 {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id the next segment written will get.
    pub fn next_id(&self) -> u64 {
        self.table.next_id()
    }

    /// The top-level fields per segment the root was built with.
    pub fn segment_members(&self) -> usize {
        self.table.per()
    }

    /// The removes still deferred.
    pub fn deferred_len(&self) -> usize {
        self.deferred.values().map(|t| t.len()).sum()
    }

    /// Index of the segment that holds, or would hold, top-level `field`.
    pub fn locate(&self, field: &Field) -> usize {
        self.table.locate(field)
    }

    /// The table indexes (sorted, without repeats) of the segments holding
    /// the top-level `fields`, and the top-level field of every deferred
    /// remove (a join runs them all).
    pub fn touched<'a>(&self, fields: impl IntoIterator<Item = &'a Field>) -> Vec<usize> {
        let deferred = (self.deferred.values().flatten()).map(Target::top_field);
        let fields = fields.into_iter().map(|f| self.locate(f));
        sorted_unique(fields.chain(deferred.map(|f| self.locate(&f))))
    }

    /// [`MapRoot::touched`] for the top-level fields `op` names: those it
    /// removes, and each update's field (of the update's type).
    pub fn touched_by_op(&self, op: &MapOp) -> Vec<usize> {
        let updated: Vec<Field> = op.updates.iter().map(target_field).collect();
        self.touched(op.removes.iter().chain(&updated))
    }

    /// [`MapRoot::touched`] for the top-level fields a delta names: those
    /// it carries and those of the removes it defers.
    pub fn touched_by_delta(&self, delta: &MapDelta) -> Vec<usize> {
        self.touched(&delta.top_fields())
    }

    /// Decodes segment `i`'s stored bytes, refusing bytes whose digest is
    /// not the table's, a field count not the table's, fields out of order
    /// or outside the segment's range, dots the root's clock does not
    /// cover, anything a map's body refuses, and trailing bytes.
    pub fn decode_segment(&self, i: usize, bytes: &[u8]) -> Result<MapSegment, DecodeError> {
        self.table.entry_of(i, bytes)?;
        let mut r = Reader::new(bytes);
        if r.u8()? != SEGMENT_FORMAT {
            return Err(DecodeError("not a map segment"));
        }
        let actors = r.actor_table()?;
        let fields = Decoder::new(&actors, &self.clock).fields(&mut r, 1)?;
        r.finish()?;
        self.table.check(i, &fields)?;
        Ok(MapSegment { fields })
    }

    /// The whole map from every segment, in table order.
    pub fn assemble(&self, segments: Vec<MapSegment>) -> Result<Map, DecodeError> {
        let fields = self
            .table
            .assemble(segments.into_iter().map(|s| s.fields).collect())?;
        Ok(Map {
            clock: self.clock.clone(),
            fields,
            deferred: self.deferred.clone(),
        })
    }

    /// A partial map: the root's clock and deferred removes and the fields
    /// of the given segments only, as (table index, segment). Operations
    /// and joins whose top-level fields ([`MapRoot::touched_by_op`],
    /// [`MapRoot::touched_by_delta`]) are among them behave as on the whole
    /// map.
    ///
    /// Panics when a segment is not the one at its index (a caller's bug:
    /// its write-back would lose fields).
    pub fn partial(&self, segments: Vec<(usize, MapSegment)>) -> Map {
        self.try_partial(segments)
            .unwrap_or_else(|e| panic!("partial of segments not the root's: {}", e.0))
    }

    /// [`MapRoot::partial`], refusing a segment not the one at its index.
    pub(crate) fn try_partial(
        &self,
        segments: Vec<(usize, MapSegment)>,
    ) -> Result<Map, DecodeError> {
        let segments = segments.into_iter().map(|(i, s)| (i, s.fields)).collect();
        Ok(Map {
            clock: self.clock.clone(),
            fields: self.table.gather(segments)?,
            deferred: self.deferred.clone(),
        })
    }

    /// After an operation or join on `partial`, made by
    /// [`MapRoot::partial`] from the segments at table indexes `loaded`:
    /// takes its clock and deferred removes into the root and rewrites each
    /// loaded segment from the partial's fields in its range, under fresh
    /// ids; a segment above twice the fields per segment splits, an emptied
    /// one leaves the table unless it is the only one (as
    /// [`crate::SetRoot::write_back`]). Returns the records to write and
    /// the ids of those replaced.
    ///
    /// Panics, with the root unchanged, when `loaded` names no segment of
    /// the table, or `partial` holds a field outside the loaded segments.
    pub fn write_back(&mut self, partial: Map, loaded: &[usize]) -> SegmentWrite {
        self.try_write_back(partial, loaded)
            .unwrap_or_else(|e| panic!("{}", e.0))
    }

    /// [`MapRoot::write_back`], refusing (with the root unchanged) what it
    /// panics on.
    pub(crate) fn try_write_back(
        &mut self,
        partial: Map,
        loaded: &[usize],
    ) -> Result<SegmentWrite, DecodeError> {
        let Map {
            clock,
            fields,
            deferred,
        } = partial;
        let write = self.table.write_back(fields, loaded, encode_segment)?;
        self.clock = clock;
        self.deferred = deferred;
        Ok(write)
    }

    /// The root record: magic, format, an actor table of the clock's and
    /// the deferred contexts' actors, the clock, the deferred removes (as
    /// a map's body writes them), then the table.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(Self::MAGIC);
        w.u8(ROOT_FORMAT);
        let mut actors = std::collections::BTreeSet::new();
        actors.extend(self.clock.entries().iter().map(|&(a, _)| a));
        deferred_actors(&self.deferred, &mut actors);
        let table = w.actor_table(actors);
        w.clock(&table, &self.clock);
        write_deferred(&mut w, &table, &self.deferred);
        self.table.encode(&mut w);
        w.buf
    }

    /// Reads a root [`MapRoot::encode`] wrote, refusing anything else: the
    /// table's invariants, deferred removes as [`Map::decode`] refuses
    /// them, trailing bytes.
    pub fn decode(bytes: &[u8]) -> Result<MapRoot, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u8()? != Self::MAGIC {
            return Err(DecodeError("not a map root"));
        }
        if r.u8()? != ROOT_FORMAT {
            return Err(DecodeError("unknown map root format"));
        }
        let actors = r.actor_table()?;
        let clock = r.clock(&actors)?;
        let deferred = Decoder::new(&actors, &clock).deferred(&mut r)?;
        let table = Table::decode(&mut r)?;
        r.finish()?;
        Ok(MapRoot {
            clock,
            deferred,
            table,
        })
    }
}

/// A segment record: its format byte, an actor table of its fields'
/// actors, then its fields as a map's body writes them.
fn encode_segment(fields: &[(Field, Embedded)]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(SEGMENT_FORMAT);
    let mut actors = std::collections::BTreeSet::new();
    embedded_actors(fields.iter().map(|(_, e)| e), &mut actors);
    let table = w.actor_table(actors);
    write_fields(&mut w, &table, fields.iter().map(|(f, e)| (f, e)));
    w.buf
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bottom_field_is_below_every_field() {
        let bottom = Field::bottom();
        for kind in FieldType::ALL {
            assert!(bottom <= Field::new(Vec::new(), kind), "{kind:?}");
            assert!(bottom < Field::new(vec![0], kind));
        }
    }

    #[test]
    fn a_field_key_reads_back_and_refuses_an_unknown_type() {
        let field = Field::new("n", FieldType::Map);
        let mut w = Writer::new();
        field.write(&mut w);
        assert_eq!(w.buf, [1, b'n', FieldType::Map.tag()]);
        let mut r = Reader::new(&w.buf);
        assert_eq!(Field::read(&mut r), Ok(field));
        r.finish().unwrap();
        let mut r = Reader::new(&[1, b'n', 9]);
        assert_eq!(
            Field::read(&mut r),
            Err(DecodeError("unknown map field type"))
        );
    }
}
