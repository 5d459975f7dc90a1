//! Segmented values whatever their type (design note 020 §6): the storage
//! (crates/kv) keeps a big set or a big map as a root record and segment
//! records and runs operations and deltas on the few segments they touch,
//! through one API for both types.
//!
//! - [`Root`], [`Segment`]: a set's or a map's root and segment
//!   ([`crate::SetRoot`], [`crate::MapRoot`]); a root tells its type and
//!   decodes segments of it only.
//! - [`Delta`]: what one client operation changed ([`crate::OrswotDelta`],
//!   [`crate::MapDelta`]), with a wire form that tells the type by its
//!   first byte.
//! - [`State::apply_with_delta`], [`State::join_delta`],
//!   [`State::into_segments`], [`State::segmentable_len`]: the same for a
//!   whole value.
//!
//! Invariants: a root, a segment or a delta of one type is never taken for
//! another's (each record's first byte is distinct from every other's and
//! from a stored state's format version, checked below at compile time);
//! mixing types (an operation, a delta, a segment or a partial of another
//! type than the root) is refused with an error, never a panic, and
//! changes nothing.

pub(crate) mod table;

use eddy_object::{Actor, VersionVector};

use crate::codec::DecodeError;
use crate::map::delta::DELTA_FORMAT as MAP_DELTA;
use crate::map::segmented::SEGMENT_FORMAT as MAP_SEGMENT;
use crate::op::{DataType, DtError, Op};
use crate::orswot::delta::DELTA_FORMAT as SET_DELTA;
use crate::orswot::segmented::SEGMENT_FORMAT as SET_SEGMENT;
use crate::state::{FORMAT_VERSION, apply_set};
use crate::{MapDelta, MapRoot, MapSegment, NotReady, OrswotDelta, SetRoot, SetSegment, State};

use table::{SegmentRecords, SegmentWrite};

/// The first byte of every record kind: a stored state, then the set's and
/// the map's root, segment and delta.
const FIRST_BYTES: [u8; 7] = [
    FORMAT_VERSION,
    SetRoot::MAGIC,
    SET_SEGMENT,
    SET_DELTA,
    MapRoot::MAGIC,
    MAP_SEGMENT,
    MAP_DELTA,
];

const _: () = {
    let mut i = 0;
    while i < FIRST_BYTES.len() {
        let mut j = i + 1;
        while j < FIRST_BYTES.len() {
            assert!(
                FIRST_BYTES[i] != FIRST_BYTES[j],
                "two records share a first byte"
            );
            j += 1;
        }
        i += 1;
    }
};

/// The root record of a segmented set or map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    Set(SetRoot),
    Map(MapRoot),
}

/// One decoded segment of a set or map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Set(SetSegment),
    Map(MapSegment),
}

/// What one client operation on a set or map changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delta {
    Set(OrswotDelta),
    Map(MapDelta),
}

impl Segment {
    /// How many entries it holds: set members, map top-level fields.
    pub fn len(&self) -> usize {
        match self {
            Segment::Set(s) => s.len(),
            Segment::Map(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Root {
    /// Whether `bytes` are a root's, of either type (by the first byte).
    pub fn is_root(bytes: &[u8]) -> bool {
        SetRoot::is_root(bytes) || MapRoot::is_root(bytes)
    }

    /// Reads a set's or a map's root, by its first byte.
    pub fn decode(bytes: &[u8]) -> Result<Root, DecodeError> {
        match bytes.first() {
            Some(&SetRoot::MAGIC) => SetRoot::decode(bytes).map(Root::Set),
            Some(&MapRoot::MAGIC) => MapRoot::decode(bytes).map(Root::Map),
            Some(_) => Err(DecodeError("not a root")),
            None => Err(DecodeError("truncated")),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        match self {
            Root::Set(r) => r.encode(),
            Root::Map(r) => r.encode(),
        }
    }

    /// The type of the value: [`DataType::Set`] or [`DataType::Map`].
    pub fn datatype(&self) -> DataType {
        match self {
            Root::Set(_) => DataType::Set,
            Root::Map(_) => DataType::Map,
        }
    }

    /// The value's clock: the context a client reads.
    pub fn clock(&self) -> &VersionVector {
        match self {
            Root::Set(r) => r.clock(),
            Root::Map(r) => r.clock(),
        }
    }

    /// Every segment's id, in table order.
    pub fn ids(&self) -> Vec<u64> {
        match self {
            Root::Set(r) => r.segments().iter().map(|s| s.id).collect(),
            Root::Map(r) => r.segments().iter().map(|s| s.id).collect(),
        }
    }

    /// How many segments the table names.
    pub fn segment_count(&self) -> usize {
        match self {
            Root::Set(r) => r.segments().len(),
            Root::Map(r) => r.segments().len(),
        }
    }

    /// How many entries the value holds: set members, map top-level fields.
    pub fn len(&self) -> u64 {
        match self {
            Root::Set(r) => r.len(),
            Root::Map(r) => r.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id the next segment written will get.
    pub fn next_id(&self) -> u64 {
        match self {
            Root::Set(r) => r.next_id(),
            Root::Map(r) => r.next_id(),
        }
    }

    /// The id of table entry `i`. Panics when the table has no entry `i`.
    pub fn id(&self, i: usize) -> u64 {
        match self {
            Root::Set(r) => r.segments()[i].id,
            Root::Map(r) => r.segments()[i].id,
        }
    }

    /// The table indexes (sorted, without repeats) of the segments a
    /// client's operation touches, with those of the deferred removes. An
    /// operation of another type is refused as [`State::apply`] refuses it.
    pub fn touched_by_op(&self, op: &Op) -> Result<Vec<usize>, DtError> {
        match (self, op) {
            (Root::Set(r), Op::Set(op)) => {
                let members = op.adds.iter().chain(&op.removes);
                Ok(r.touched(members.map(Vec::as_slice)))
            }
            (Root::Map(r), Op::Map(op)) => Ok(r.touched_by_op(op)),
            (root, op) => Err(DtError::WrongType {
                op: op.datatype(),
                datatype: root.datatype(),
            }),
        }
    }

    /// The table indexes (sorted, without repeats) of the segments joining
    /// `delta` touches, with those of the deferred removes. A delta of
    /// another type can never be joined: [`NotReady`] (the replica needs
    /// the whole value).
    pub fn touched_by_delta(&self, delta: &Delta) -> Result<Vec<usize>, NotReady> {
        match (self, delta) {
            (Root::Set(r), Delta::Set(d)) => Ok(r.touched_by_delta(d)),
            (Root::Map(r), Delta::Map(d)) => Ok(r.touched_by_delta(d)),
            _ => Err(NotReady),
        }
    }

    /// Decodes segment `i`'s stored bytes (see [`SetRoot::decode_segment`],
    /// [`MapRoot::decode_segment`]).
    pub fn decode_segment(&self, i: usize, bytes: &[u8]) -> Result<Segment, DecodeError> {
        match self {
            Root::Set(r) => r.decode_segment(i, bytes).map(Segment::Set),
            Root::Map(r) => r.decode_segment(i, bytes).map(Segment::Map),
        }
    }

    /// The whole value from every segment, in table order.
    pub fn assemble(&self, segments: Vec<Segment>) -> Result<State, DecodeError> {
        match self {
            Root::Set(r) => r.assemble(sets(segments)?).map(State::Set),
            Root::Map(r) => r.assemble(maps(segments)?).map(State::Map),
        }
    }

    /// A partial value: the root's clock and deferred removes and the
    /// entries of the given segments, as (table index, segment), on which
    /// [`State::apply_with_delta`] and [`State::join_delta`] behave as on
    /// the whole value for what they touch. A segment of another type, or
    /// not the one at its index, is refused.
    pub fn partial(&self, segments: Vec<(usize, Segment)>) -> Result<State, DecodeError> {
        let (indexes, segments): (Vec<usize>, Vec<Segment>) = segments.into_iter().unzip();
        match self {
            Root::Set(r) => {
                let segments = indexes.into_iter().zip(sets(segments)?).collect();
                r.try_partial(segments).map(State::Set)
            }
            Root::Map(r) => {
                let segments = indexes.into_iter().zip(maps(segments)?).collect();
                r.try_partial(segments).map(State::Map)
            }
        }
    }

    /// Writes back a partial made by [`Root::partial`] from the segments
    /// at `loaded`, after an operation or join: the records to write and
    /// the ids replaced ([`SetRoot::write_back`]). Refused, with the root
    /// unchanged, when the partial is of another type than the root,
    /// `loaded` names a segment the table lacks, or the partial holds an
    /// entry outside the loaded segments.
    pub fn write_back(
        &mut self,
        partial: State,
        loaded: &[usize],
    ) -> Result<SegmentWrite, DecodeError> {
        match (self, partial) {
            (Root::Set(r), State::Set(s)) => r.try_write_back(s, loaded),
            (Root::Map(r), State::Map(m)) => r.try_write_back(m, loaded),
            _ => Err(DecodeError("partial of another type than the root")),
        }
    }
}

const SEGMENT_OF_ANOTHER_TYPE: DecodeError = DecodeError("segment of another type than the root");

/// The set segments among `segments`, refusing any other.
fn sets(segments: Vec<Segment>) -> Result<Vec<SetSegment>, DecodeError> {
    (segments.into_iter())
        .map(|s| match s {
            Segment::Set(s) => Ok(s),
            Segment::Map(_) => Err(SEGMENT_OF_ANOTHER_TYPE),
        })
        .collect()
}

/// The map segments among `segments`, refusing any other.
fn maps(segments: Vec<Segment>) -> Result<Vec<MapSegment>, DecodeError> {
    (segments.into_iter())
        .map(|s| match s {
            Segment::Map(m) => Ok(m),
            Segment::Set(_) => Err(SEGMENT_OF_ANOTHER_TYPE),
        })
        .collect()
}

impl Delta {
    /// The wire form: a set delta's or a map delta's, told apart by the
    /// first byte.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Delta::Set(d) => d.encode(),
            Delta::Map(d) => d.encode(),
        }
    }

    /// Reads what [`Delta::encode`] wrote, by its first byte.
    pub fn decode(bytes: &[u8]) -> Result<Delta, DecodeError> {
        match bytes.first() {
            Some(&SET_DELTA) => OrswotDelta::decode(bytes).map(Delta::Set),
            Some(&MAP_DELTA) => MapDelta::decode(bytes).map(Delta::Map),
            Some(_) => Err(DecodeError("not a delta")),
            None => Err(DecodeError("truncated")),
        }
    }

    /// The type of the value it changes.
    pub fn datatype(&self) -> DataType {
        match self {
            Delta::Set(_) => DataType::Set,
            Delta::Map(_) => DataType::Map,
        }
    }
}

impl State {
    /// The number of entries segmentation counts: a set's members, a map's
    /// top-level fields; `None` for the types never segmented (counters,
    /// HLLs, grow-only sets).
    pub fn segmentable_len(&self) -> Option<usize> {
        match self {
            State::Set(s) => Some(s.len()),
            State::Map(m) => Some(m.len()),
            _ => None,
        }
    }

    /// Splits a set or a map into a root and its segment records, ids from
    /// `first_id` on ([`crate::Orswot::into_segments`],
    /// [`crate::Map::into_segments`]); any other type is given back.
    pub fn into_segments(self, first_id: u64) -> Result<(Root, SegmentRecords), State> {
        match self {
            State::Set(s) => {
                let (root, puts) = s.into_segments(first_id);
                Ok((Root::Set(root), puts))
            }
            State::Map(m) => {
                let (root, puts) = m.into_segments(first_id);
                Ok((Root::Map(root), puts))
            }
            other => Err(other),
        }
    }

    /// Applies a client's operation exactly as [`State::apply`] does (same
    /// errors, registers stamped with `now_us`, nothing changed on error)
    /// and returns its delta: `Some` for a set or a map, `None` for the
    /// other types.
    pub fn apply_with_delta(
        &mut self,
        actor: Actor,
        op: &Op,
        context: Option<&VersionVector>,
        now_us: u64,
    ) -> Result<Option<Delta>, DtError> {
        match (self, op) {
            (State::Set(s), Op::Set(op)) => {
                apply_set(s, actor, op, context).map(|d| Some(Delta::Set(d)))
            }
            (State::Map(m), Op::Map(op)) => m
                .apply_op(actor, op, context, now_us)
                .map(|d| Some(Delta::Map(d))),
            (state, op) => state.apply(actor, op, context, now_us).map(|()| None),
        }
    }

    /// Joins a delta another replica's operation produced
    /// ([`crate::Orswot::join_delta`], [`crate::Map::join_delta`]):
    /// [`NotReady`] when this value has not seen everything the delta
    /// builds on, or is of another type.
    pub fn join_delta(&mut self, delta: &Delta) -> Result<(), NotReady> {
        match (self, delta) {
            (State::Set(s), Delta::Set(d)) => s.join_delta(d),
            (State::Map(m), Delta::Map(d)) => m.join_delta(d),
            _ => Err(NotReady),
        }
    }
}
