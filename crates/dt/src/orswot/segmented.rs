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
//! Invariants of a root (checked by [`SetRoot::decode`]): the table is not
//! empty, its first entry's `first` is empty and the `first`s strictly
//! increase, so every member falls in exactly one segment (segment i holds
//! `table[i].first <= m < table[i + 1].first`); ids are distinct and below
//! `next_id`. Ids are never reused within one root's life: every segment
//! written gets a fresh id, so the storage can write new segments, then the
//! root, then delete the dead ones, and a crash between any two writes
//! leaves the old root pointing at intact old segments.
//!
//! A partial set behaves as the whole set for operations on members of its
//! segments: `apply_op` reads and changes only the members it names, the
//! clock and the deferred removes; `join_delta` likewise, plus the members
//! of deferred removes, which [`SetRoot::touched`] always includes.

use std::collections::{BTreeMap, BTreeSet};

use eddy_object::VersionVector;
use xxhash_rust::xxh3::xxh3_64;

use crate::codec::{DecodeError, Reader, Writer};

use super::delta::OrswotDelta;
use super::{
    Deferred, Dots, Orswot, deferred_actors, read_deferred, read_members, write_deferred,
    write_members,
};

/// How many members a whole set puts in each segment when it is split
/// ([`Orswot::into_segments`]). A segment that grows above twice this
/// splits when written back.
pub const SEGMENT_MEMBERS: usize = 1024;

/// The root format's version (the byte after [`SetRoot::MAGIC`]).
const ROOT_FORMAT: u8 = 1;

/// The first byte of an encoded segment.
const SEGMENT_FORMAT: u8 = 0x82;

// A root, a segment and a whole stored state must never be taken for one
// another by their first byte.
const _: () = assert!(SetRoot::MAGIC != crate::state::FORMAT_VERSION);
const _: () = assert!(SEGMENT_FORMAT != crate::state::FORMAT_VERSION);
const _: () = assert!(SEGMENT_FORMAT != SetRoot::MAGIC);

/// The smallest encoded table entry: an empty `first` (1), an id (1), a
/// count (1) and the digest (8).
const TABLE_ENTRY_MIN: usize = 11;

/// One segment as the root names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRef {
    /// The least member the segment may hold (empty for the first).
    pub first: Vec<u8>,
    /// The segment record's id.
    pub id: u64,
    /// How many members it holds.
    pub count: u32,
    /// XXH3-64 of the segment record's bytes.
    pub digest: u64,
}

/// The root record of a segmented set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetRoot {
    clock: VersionVector,
    deferred: Deferred,
    /// Sorted by `first`; never empty.
    table: Vec<SegmentRef>,
    /// The id the next segment written gets.
    next_id: u64,
    /// The members per segment the root was built with: a segment above
    /// twice this splits on write-back.
    segment_members: u32,
}

/// The decoded members of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetSegment {
    members: BTreeMap<Vec<u8>, Dots>,
}

/// What [`SetRoot::write_back`] asks the storage to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentWrite {
    /// Segment records to write: (id, encoded bytes). Their ids are new.
    pub puts: Vec<(u64, Vec<u8>)>,
    /// Ids of segment records the new root no longer names (to delete
    /// once the new root is written).
    pub dead: Vec<u64>,
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
        let per = u32::try_from(segment_members)
            .ok()
            .filter(|&n| n > 0)
            .expect("between 1 and u32::MAX members per segment");
        let Orswot {
            clock,
            members,
            deferred,
        } = self;
        let mut root = SetRoot {
            clock,
            deferred,
            table: Vec::new(),
            next_id: first_id,
            segment_members: per,
        };
        let members: Vec<(Vec<u8>, Dots)> = members.into_iter().collect();
        let mut puts = Vec::with_capacity(members.len().div_ceil(segment_members).max(1));
        if members.is_empty() {
            puts.push(root.push_segment(Vec::new(), &[]));
        }
        for chunk in members.chunks(segment_members) {
            let first = match root.table.is_empty() {
                true => Vec::new(),
                false => chunk[0].0.clone(),
            };
            puts.push(root.push_segment(first, chunk));
        }
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
        &self.table
    }

    /// How many members the set holds.
    pub fn len(&self) -> u64 {
        self.table.iter().map(|s| u64::from(s.count)).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id the next segment written will get.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// The members per segment the root was built with.
    pub fn segment_members(&self) -> usize {
        self.segment_members as usize
    }

    /// Index of the segment that holds, or would hold, `member`.
    pub fn locate(&self, member: &[u8]) -> usize {
        // table[0].first is empty, so at least one entry is <= member.
        self.table
            .partition_point(|s| s.first.as_slice() <= member)
            .saturating_sub(1)
    }

    /// The table indexes (sorted, without repeats) of the segments holding
    /// `members`, and of every member a deferred remove names (a join may
    /// run deferred removes).
    pub fn touched<'a>(&self, members: impl IntoIterator<Item = &'a [u8]>) -> Vec<usize> {
        let deferred = self.deferred.values().flatten();
        let mut out: Vec<usize> = (members.into_iter().map(|m| self.locate(m)))
            .chain(deferred.map(|m| self.locate(m)))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
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
        let entry = (self.table.get(i)).ok_or(DecodeError("segment index out of the table"))?;
        if xxh3_64(bytes) != entry.digest {
            return Err(DecodeError("segment digest differs from the root's"));
        }
        let mut r = Reader::new(bytes);
        if r.u8()? != SEGMENT_FORMAT {
            return Err(DecodeError("not a set segment"));
        }
        let table = r.actor_table()?;
        let members = read_members(&mut r, &table, &self.clock)?;
        r.finish()?;
        let segment = SetSegment {
            members: BTreeMap::from_iter(members),
        };
        self.check_segment(i, &segment)?;
        Ok(segment)
    }

    /// The whole set from every segment, in table order.
    pub fn assemble(&self, segments: Vec<SetSegment>) -> Result<Orswot, DecodeError> {
        if segments.len() != self.table.len() {
            return Err(DecodeError("segment count differs from the root's"));
        }
        let mut members = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        for (i, segment) in segments.into_iter().enumerate() {
            self.check_segment(i, &segment)?;
            members.extend(segment.members);
        }
        // In order, as each segment's range follows the one before: built
        // in one pass.
        Ok(Orswot {
            clock: self.clock.clone(),
            members: BTreeMap::from_iter(members),
            deferred: self.deferred.clone(),
        })
    }

    /// A partial set: the root's clock and deferred removes and the
    /// members of the given segments only, as (table index, segment).
    /// Operations on members of these segments behave as on the whole set.
    pub fn partial(&self, segments: Vec<(usize, SetSegment)>) -> Orswot {
        let mut members = BTreeMap::new();
        for (i, mut segment) in segments {
            debug_assert!(self.check_segment(i, &segment).is_ok(), "segment {i}");
            members.append(&mut segment.members);
        }
        Orswot {
            clock: self.clock.clone(),
            members,
            deferred: self.deferred.clone(),
        }
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
    /// Panics when `loaded` names no segment of the table, or `partial`
    /// holds a member outside the loaded segments (an operation on a
    /// member whose segment was not loaded: a caller's bug that would
    /// otherwise lose the member).
    pub fn write_back(&mut self, partial: Orswot, loaded: &[usize]) -> SegmentWrite {
        let Orswot {
            clock,
            members,
            deferred,
        } = partial;
        let mut loaded = loaded.to_vec();
        loaded.sort_unstable();
        loaded.dedup();
        assert!(
            loaded.last().is_none_or(|&i| i < self.table.len()),
            "write_back of a segment the table does not have"
        );
        // Split before the root changes: a caller's bug panics with the
        // root as it was.
        let mut parts = self.split_by_segment(members, &loaded).into_iter();
        self.clock = clock;
        self.deferred = deferred;
        let mut dead = Vec::with_capacity(loaded.len());
        let mut pieces = Vec::with_capacity(self.table.len() + 1);
        for (i, entry) in std::mem::take(&mut self.table).into_iter().enumerate() {
            if loaded.binary_search(&i).is_err() {
                pieces.push(Piece::Kept(entry));
                continue;
            }
            dead.push(entry.id);
            let part = parts.next().expect("one part per loaded segment");
            self.cut(entry.first, part, &mut pieces);
        }
        drop_empty(&mut pieces);
        let mut puts = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Kept(entry) => self.table.push(entry),
                Piece::New { first, members } => puts.push(self.push_segment(first, &members)),
            }
        }
        SegmentWrite { puts, dead }
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
        w.varint(self.next_id);
        w.varint(u64::from(self.segment_members));
        w.len(self.table.len());
        for entry in &self.table {
            w.bytes(&entry.first);
            w.varint(entry.id);
            w.varint(u64::from(entry.count));
            w.u64_be(entry.digest);
        }
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
        let next_id = r.varint()?;
        let segment_members = u32::try_from(r.varint()?)
            .ok()
            .filter(|&n| n > 0)
            .ok_or(DecodeError("members per segment out of range"))?;
        let table = read_table(&mut r, next_id)?;
        r.finish()?;
        Ok(SetRoot {
            clock,
            deferred,
            table,
            next_id,
            segment_members,
        })
    }

    /// Encodes a segment of `members` (in order) under a fresh id and
    /// appends its entry, starting at `first`, to the table.
    fn push_segment(&mut self, first: Vec<u8>, members: &[(Vec<u8>, Dots)]) -> (u64, Vec<u8>) {
        let bytes = encode_segment(members);
        let id = self.next_id;
        self.next_id = id.checked_add(1).expect("segment ids run out at 2^64");
        self.table.push(SegmentRef {
            first,
            id,
            count: u32::try_from(members.len()).expect("a segment holds under 2^32 members"),
            digest: xxh3_64(&bytes),
        });
        (id, bytes)
    }

    /// Sorts `members` by the loaded segment (indexes sorted) whose range
    /// holds them: one map per loaded segment, in order.
    fn split_by_segment(
        &self,
        mut members: BTreeMap<Vec<u8>, Dots>,
        loaded: &[usize],
    ) -> Vec<BTreeMap<Vec<u8>, Dots>> {
        let mut parts = Vec::with_capacity(loaded.len());
        // From the top down: each split takes the members at or above the
        // segment's first, of which none may reach the next segment's.
        for &i in loaded.iter().rev() {
            let mut part = members.split_off(self.table[i].first.as_slice());
            if let Some(next) = self.table.get(i + 1) {
                let stray = part.split_off(next.first.as_slice());
                assert!(stray.is_empty(), "a member outside the loaded segments");
            }
            parts.push(part);
        }
        assert!(members.is_empty(), "a member outside the loaded segments");
        parts.reverse();
        parts
    }

    /// The new segments for a loaded segment's `members`, starting at
    /// `first`: one, or the fewest near-equal parts of at most twice the
    /// members per segment.
    fn cut(&self, first: Vec<u8>, members: BTreeMap<Vec<u8>, Dots>, out: &mut Vec<Piece>) {
        let n = members.len();
        let most = 2 * self.segment_members();
        let parts = n.div_ceil(most).max(1);
        let mut members = members.into_iter();
        let mut first = Some(first);
        for p in 0..parts {
            // The first n % parts parts take one member more.
            let take = n / parts + usize::from(p < n % parts);
            let members: Vec<_> = members.by_ref().take(take).collect();
            let first = first.take().unwrap_or_else(|| members[0].0.clone());
            out.push(Piece::New { first, members });
        }
    }

    /// Checks a decoded segment against table entry `i`: its count, and
    /// that its members fall in the entry's range.
    fn check_segment(&self, i: usize, segment: &SetSegment) -> Result<(), DecodeError> {
        let entry = (self.table.get(i)).ok_or(DecodeError("segment index out of the table"))?;
        if segment.members.len() != entry.count as usize {
            return Err(DecodeError("segment member count differs from the root's"));
        }
        let below_first = segment
            .members
            .first_key_value()
            .is_some_and(|(m, _)| *m < entry.first);
        let above_range = match (self.table.get(i + 1), segment.members.last_key_value()) {
            (Some(next), Some((last, _))) => *last >= next.first,
            _ => false,
        };
        match below_first || above_range {
            true => Err(DecodeError("segment member outside the segment's range")),
            false => Ok(()),
        }
    }
}

/// A segment of the table being rebuilt by [`SetRoot::write_back`].
enum Piece {
    /// Not loaded: kept as it is.
    Kept(SegmentRef),
    /// To be written under a fresh id.
    New {
        first: Vec<u8>,
        members: Vec<(Vec<u8>, Dots)>,
    },
}

impl Piece {
    fn is_new_and_empty(&self) -> bool {
        matches!(self, Piece::New { members, .. } if members.is_empty())
    }

    fn first_mut(&mut self) -> &mut Vec<u8> {
        match self {
            Piece::Kept(entry) => &mut entry.first,
            Piece::New { first, .. } => first,
        }
    }
}

/// Drops the rewritten segments left empty, keeping one segment if none
/// other is left; the first segment's range then starts at the bottom.
fn drop_empty(pieces: &mut Vec<Piece>) {
    pieces.retain(|p| !p.is_new_and_empty());
    if pieces.is_empty() {
        pieces.push(Piece::New {
            first: Vec::new(),
            members: Vec::new(),
        });
    }
    pieces[0].first_mut().clear();
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

/// The root's segment table: entries in `first` order from an empty one,
/// distinct ids below `next_id`.
fn read_table(r: &mut Reader, next_id: u64) -> Result<Vec<SegmentRef>, DecodeError> {
    let n = r.count(TABLE_ENTRY_MIN)?;
    if n == 0 {
        return Err(DecodeError("set root without segments"));
    }
    let mut table: Vec<SegmentRef> = Vec::with_capacity(n);
    let mut ids = BTreeSet::new();
    for _ in 0..n {
        let entry = SegmentRef {
            first: r.bytes()?.to_vec(),
            id: r.varint()?,
            count: u32::try_from(r.varint()?)
                .map_err(|_| DecodeError("segment member count out of range"))?,
            digest: r.u64_be()?,
        };
        match table.last() {
            None if !entry.first.is_empty() => {
                return Err(DecodeError("first segment does not start at the bottom"));
            }
            Some(last) if last.first >= entry.first => {
                return Err(DecodeError("segments not sorted"));
            }
            _ => {}
        }
        if entry.id >= next_id {
            return Err(DecodeError("segment id not below the next id"));
        }
        if !ids.insert(entry.id) {
            return Err(DecodeError("segment id named twice"));
        }
        table.push(entry);
    }
    Ok(table)
}
