//! A big set stored in pieces (design note 020 §6): a small **root** record
//! and **segment** records, so that one operation reads and writes the root
//! and the one or two segments its members fall in, never the whole set.
//! The storage (crates/kv) keeps the records; this module owns their
//! encodings (docs/formats/datatypes.md "Segmented set") and the pure work
//! of splitting a set, assembling it, and updating it piece by piece.
//!
//! - The root ([`SetRoot`]) holds the set's one clock, its deferred
//!   removes, the next segment id and a table of segments
//!   ([`SegmentRef`]): each a contiguous range of members in byte order,
//!   named by the least member it may hold (`first`), with its record's id,
//!   member count and an XXH3-64 digest of its encoded bytes.
//! - A segment ([`SetSegment`]) holds its members with their dots; its
//!   dots are covered by the root's clock.
//! - An operation runs on a [`SetRoot::partial`] set (the root's clock and
//!   deferred removes, the members of the segments it touches,
//!   [`SetRoot::touched`]) and [`SetRoot::write_back`] turns the result into
//!   new segment records ([`SegmentWrite`]).
//!
//! Invariants of a root (checked by [`SetRoot::decode`]; the table's rules,
//! shared with segmented maps, live in `crate::segmented::table`): the
//! table is not empty, its first entry's `first` is empty and the `first`s
//! strictly increase, so every member falls in exactly one segment (segment
//! i holds `table[i].first <= m < table[i + 1].first`); ids are distinct
//! and below `next_id`. Ids are never reused within one root's life: every
//! segment written gets a fresh id, so the storage can write new segments,
//! then the root, then delete the dead ones, and a crash between any two
//! writes leaves the old root pointing at intact old segments.
//!
//! A partial set behaves as the whole set for operations on members of its
//! segments: `apply_op` reads and changes only the members it names, the
//! clock and the deferred removes; `join_delta` likewise, plus the members
//! of deferred removes, which [`SetRoot::touched`] always includes.

use std::collections::BTreeMap;

use eddy_object::VersionVector;

use crate::codec::{DecodeError, Reader, Writer};
use crate::segmented::table::{SEGMENT_MEMBERS, SegmentRef, SegmentWrite, Table};

use super::delta::OrswotDelta;
use super::{
    Deferred, Dots, Orswot, deferred_actors, read_deferred, read_members, write_deferred,
    write_members,
};

/// The root format's version (the byte after [`SetRoot::MAGIC`]).
const ROOT_FORMAT: u8 = 1;

/// The first byte of an encoded segment.
pub(crate) const SEGMENT_FORMAT: u8 = 0x82;

// A root, a segment and a whole stored state must never be taken for one
// another by their first byte.
const _: () = assert!(SetRoot::MAGIC != crate::state::FORMAT_VERSION);
const _: () = assert!(SEGMENT_FORMAT != crate::state::FORMAT_VERSION);
const _: () = assert!(SEGMENT_FORMAT != SetRoot::MAGIC);

/// The root record of a segmented set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetRoot {
    clock: VersionVector,
    deferred: Deferred,
    /// The segments, by member range.
    table: Table<Vec<u8>>,
}

/// The decoded members of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetSegment {
    members: BTreeMap<Vec<u8>, Dots>,
}

impl SetSegment {
    /// How many members the segment holds.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members, in byte order.
    pub fn value(&self) -> impl Iterator<Item = &[u8]> {
        self.members.keys().map(Vec::as_slice)
    }
}

impl Orswot {
    /// Splits a whole set into a root and its segments of
    /// [`SEGMENT_MEMBERS`] members, ids from `first_id` on (the storage
    /// passes the old root's next id when it replaces a segmented value,
    /// so no live segment id is overwritten). A set with no members gets
    /// one empty segment.
    pub fn into_segments(self, first_id: u64) -> (SetRoot, Vec<(u64, Vec<u8>)>) {
        self.into_segments_of(first_id, SEGMENT_MEMBERS)
    }

    /// [`Orswot::into_segments`] with `segment_members` members per
    /// segment (at least 1): the root remembers it, and splits a segment
    /// above twice that on write-back. Tests use small sizes.
    pub fn into_segments_of(
        self,
        first_id: u64,
        segment_members: usize,
    ) -> (SetRoot, Vec<(u64, Vec<u8>)>) {
        let Orswot {
            clock,
            members,
            deferred,
        } = self;
        let (table, puts) = Table::split(members, first_id, segment_members, encode_segment);
        let root = SetRoot {
            clock,
            deferred,
            table,
        };
        (root, puts)
    }
}

impl SetRoot {
    /// The first byte of an encoded root. A whole stored state starts with
    /// its format version ([`crate::FORMAT_VERSION`], 1), so
    /// [`crate::State::decode`] refuses a root as an unknown version.
    pub const MAGIC: u8 = 0x81;

    /// Whether `bytes` are a root's (by the first byte alone).
    pub fn is_root(bytes: &[u8]) -> bool {
        bytes.first() == Some(&Self::MAGIC)
    }

    /// The set's clock: the context a client reads.
    pub fn clock(&self) -> &VersionVector {
        &self.clock
    }

    /// The segments, in member order.
    pub fn segments(&self) -> &[SegmentRef] {
        self.table.entries()
    }

    /// How many members the set holds.
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

    /// The members per segment the root was built with.
    pub fn segment_members(&self) -> usize {
        self.table.per()
    }

    /// Index of the segment that holds, or would hold, `member`.
    pub fn locate(&self, member: &[u8]) -> usize {
        self.table.locate(member)
    }

    /// The table indexes (sorted, without repeats) of the segments holding
    /// `members`, and of every member a deferred remove names (a join may
    /// run deferred removes).
    pub fn touched<'a>(&self, members: impl IntoIterator<Item = &'a [u8]>) -> Vec<usize> {
        let deferred = self.deferred.values().flatten().map(Vec::as_slice);
        let members = members.into_iter().map(|m| -> &[u8] { m });
        self.table.locate_all::<[u8]>(members.chain(deferred))
    }

    /// [`SetRoot::touched`] for the members a delta names: those it adds,
    /// drops dots of, or defers removes of.
    pub fn touched_by_delta(&self, delta: &OrswotDelta) -> Vec<usize> {
        let adds = delta.adds.iter().map(|(m, _)| m.as_slice());
        let drops = delta.drops.iter().map(|(m, _)| m.as_slice());
        let deferred = delta.deferred.iter().flat_map(|(_, ms)| ms);
        self.touched(adds.chain(drops).chain(deferred.map(Vec::as_slice)))
    }

    /// Decodes segment `i`'s stored bytes, refusing bytes whose digest is
    /// not the table's, a member count not the table's, members out of
    /// order or outside the segment's range, dots the clock does not cover,
    /// trailing bytes.
    pub fn decode_segment(&self, i: usize, bytes: &[u8]) -> Result<SetSegment, DecodeError> {
        self.table.entry_of(i, bytes)?;
        let mut r = Reader::new(bytes);
        if r.u8()? != SEGMENT_FORMAT {
            return Err(DecodeError("not a set segment"));
        }
        let table = r.actor_table()?;
        let members = BTreeMap::from_iter(read_members(&mut r, &table, &self.clock)?);
        r.finish()?;
        self.table.check(i, &members)?;
        Ok(SetSegment { members })
    }

    /// The whole set from every segment, in table order.
    pub fn assemble(&self, segments: Vec<SetSegment>) -> Result<Orswot, DecodeError> {
        let members = self
            .table
            .assemble(segments.into_iter().map(|s| s.members).collect())?;
        Ok(Orswot {
            clock: self.clock.clone(),
            members,
            deferred: self.deferred.clone(),
        })
    }

    /// A partial set: the root's clock and deferred removes and the
    /// members of the given segments only, as (table index, segment).
    /// Operations on members of these segments behave as on the whole set.
    ///
    /// Panics when a segment is not the one at its index (a caller's bug:
    /// its write-back would lose members).
    pub fn partial(&self, segments: Vec<(usize, SetSegment)>) -> Orswot {
        self.try_partial(segments)
            .unwrap_or_else(|e| panic!("partial of segments not the root's: {}", e.0))
    }

    /// [`SetRoot::partial`], refusing a segment not the one at its index.
    pub(crate) fn try_partial(
        &self,
        segments: Vec<(usize, SetSegment)>,
    ) -> Result<Orswot, DecodeError> {
        let segments = segments.into_iter().map(|(i, s)| (i, s.members)).collect();
        Ok(Orswot {
            clock: self.clock.clone(),
            members: self.table.gather(segments)?,
            deferred: self.deferred.clone(),
        })
    }

    /// After an operation on `partial`, made by [`SetRoot::partial`] from
    /// the segments at table indexes `loaded`: takes its clock and
    /// deferred removes into the root and rewrites each loaded segment
    /// from the partial's members in its range. Returns the segment
    /// records to write and the ids of those replaced.
    ///
    /// - Every loaded segment is rewritten under a fresh id, even when its
    ///   members did not change (an exact comparison would need the old
    ///   members; a digest comparison could take a changed segment for an
    ///   unchanged one).
    /// - A segment of more than twice the root's members per segment
    ///   splits into the fewest near-equal parts of at most that (in two
    ///   halves, unless one operation added more than the size again).
    /// - An empty segment leaves the table, unless no other is left; when
    ///   the first one leaves, the next one's `first` becomes empty.
    ///
    /// Panics, with the root unchanged, when `loaded` names no segment of
    /// the table, or `partial` holds a member outside the loaded segments
    /// (an operation on a member whose segment was not loaded: a caller's
    /// bug that would otherwise lose the member).
    pub fn write_back(&mut self, partial: Orswot, loaded: &[usize]) -> SegmentWrite {
        self.try_write_back(partial, loaded)
            .unwrap_or_else(|e| panic!("{}", e.0))
    }

    /// [`SetRoot::write_back`], refusing (with the root unchanged) what it
    /// panics on.
    pub(crate) fn try_write_back(
        &mut self,
        partial: Orswot,
        loaded: &[usize],
    ) -> Result<SegmentWrite, DecodeError> {
        let Orswot {
            clock,
            members,
            deferred,
        } = partial;
        let write = self.table.write_back(members, loaded, encode_segment)?;
        self.clock = clock;
        self.deferred = deferred;
        Ok(write)
    }

    /// The root record.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(Self::MAGIC);
        w.u8(ROOT_FORMAT);
        let actors =
            (self.clock.entries().iter().map(|&(a, _)| a)).chain(deferred_actors(&self.deferred));
        let table = w.actor_table(actors);
        w.clock(&table, &self.clock);
        write_deferred(&mut w, &table, &self.deferred);
        self.table.encode(&mut w);
        w.buf
    }

    /// Reads a root [`SetRoot::encode`] wrote, refusing anything else (see
    /// the module's invariants), deferred removes as [`Orswot::decode`]
    /// does, and trailing bytes.
    pub fn decode(bytes: &[u8]) -> Result<SetRoot, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u8()? != Self::MAGIC {
            return Err(DecodeError("not a set root"));
        }
        if r.u8()? != ROOT_FORMAT {
            return Err(DecodeError("unknown set root format"));
        }
        let actors = r.actor_table()?;
        let clock = r.clock(&actors)?;
        let deferred = read_deferred(&mut r, &actors, &clock)?;
        let table = Table::decode(&mut r)?;
        r.finish()?;
        Ok(SetRoot {
            clock,
            deferred,
            table,
        })
    }
}

/// A segment record: its format byte, an actor table of its dots' actors,
/// then its members as a set's body writes them.
fn encode_segment(members: &[(Vec<u8>, Dots)]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(SEGMENT_FORMAT);
    let table = w.actor_table(members.iter().flat_map(|(_, dots)| dots.actors()));
    write_members(&mut w, &table, members.iter().map(|(m, dots)| (m, dots)));
    w.buf
}
