//! The segment table a segmented value's root holds, whatever its entries
//! are (a set's members, a map's top-level fields: [`Key`]), and the rules
//! every segmented type shares (design note 020 §6;
//! docs/formats/datatypes.md "Segmented set"): how a whole value is split,
//! how a segment is checked against its entry, and how the loaded segments
//! are rewritten after an operation.
//!
//! - Segments are contiguous ranges of the keys in order. Entry i names its
//!   segment by the least key it may hold (`first`) and holds the keys k
//!   with `table[i].first <= k < table[i + 1].first` (the last one every k
//!   at or above its `first`).
//! - Every segment written gets a fresh id (`next_id`, then incremented):
//!   the storage writes the new segments, then the root, then deletes the
//!   dead ones, and a crash between any two writes leaves the old root
//!   pointing at intact old segments.
//! - A rewritten segment above twice the keys per segment splits into the
//!   fewest near-equal parts of at most that; an emptied one leaves the
//!   table unless no other is left, and when the first one leaves the next
//!   one's `first` becomes the least key.
//!
//! Invariants (checked by [`Table::decode`], kept by every change): the
//! table is not empty, its first entry's `first` is [`Key::bottom`] and the
//! `first`s strictly increase, so every key falls in exactly one segment;
//! ids are distinct and below `next_id`; keys per segment is at least 1.
//! A change that would break one (a write-back naming a segment the table
//! lacks, or holding a key outside the loaded segments) is refused with
//! the table unchanged.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

use xxhash_rust::xxh3::xxh3_64;

use crate::codec::{DecodeError, Reader, Writer};

/// How many entries (set members, map top-level fields) a whole value puts
/// in each segment when it is split. A segment that grows above twice this
/// splits when written back.
pub const SEGMENT_MEMBERS: usize = 1024;

/// What segments are ranged over: ordered, with a least value, and written
/// in a root's table.
pub(crate) trait Key: Ord + Clone {
    /// The fewest bytes [`Key::write`] writes.
    const MIN_BYTES: usize;

    /// The least key: every key is at or above it.
    fn bottom() -> Self;

    fn write(&self, w: &mut Writer);

    fn read(r: &mut Reader) -> Result<Self, DecodeError>;
}

/// A set member: its bytes (the least is empty).
impl Key for Vec<u8> {
    const MIN_BYTES: usize = 1;

    fn bottom() -> Self {
        Vec::new()
    }

    fn write(&self, w: &mut Writer) {
        w.bytes(self);
    }

    fn read(r: &mut Reader) -> Result<Self, DecodeError> {
        Ok(r.bytes()?.to_vec())
    }
}

/// One segment as the root names it: `K` is a set's member (`Vec<u8>`) or
/// a map's top-level field ([`crate::Field`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRef<K = Vec<u8>> {
    /// The least key the segment may hold (for the first segment the least
    /// of all: an empty member, the counter field named "").
    pub first: K,
    /// The segment record's id.
    pub id: u64,
    /// How many entries (members, fields) it holds.
    pub count: u32,
    /// XXH3-64 of the segment record's bytes.
    pub digest: u64,
}

/// Segment records to write, as (id, encoded bytes).
pub type SegmentRecords = Vec<(u64, Vec<u8>)>;

/// What a write-back asks the storage to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentWrite {
    /// Segment records to write: (id, encoded bytes). Their ids are new.
    pub puts: Vec<(u64, Vec<u8>)>,
    /// Ids of segment records the new root no longer names (to delete
    /// once the new root is written).
    pub dead: Vec<u64>,
}

/// The smallest encoded entry beside its key: an id (1), a count (1) and
/// the digest (8).
const ENTRY_MIN_BESIDE_KEY: usize = 10;

/// A root's table of segments, its next id and its keys per segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Table<K> {
    /// Sorted by `first`; never empty.
    entries: Vec<SegmentRef<K>>,
    /// The id the next segment written gets.
    next_id: u64,
    /// The keys per segment the table was built with.
    per: u32,
}

impl<K: Key> Table<K> {
    /// Splits `items` into segments of `per` entries (at least 1), ids from
    /// `first_id` on; no items make one empty segment. `encode` makes a
    /// segment record of its entries (in order).
    pub fn split<V>(
        items: BTreeMap<K, V>,
        first_id: u64,
        per: usize,
        encode: impl Fn(&[(K, V)]) -> Vec<u8>,
    ) -> (Table<K>, Vec<(u64, Vec<u8>)>) {
        let per32 = u32::try_from(per)
            .ok()
            .filter(|&n| n > 0)
            .expect("between 1 and u32::MAX entries per segment");
        let mut table = Table {
            entries: Vec::new(),
            next_id: first_id,
            per: per32,
        };
        let items: Vec<(K, V)> = items.into_iter().collect();
        let mut puts = Vec::with_capacity(items.len().div_ceil(per).max(1));
        if items.is_empty() {
            puts.push(table.push(K::bottom(), &[], &encode));
        }
        for chunk in items.chunks(per) {
            let first = match table.entries.is_empty() {
                true => K::bottom(),
                false => chunk[0].0.clone(),
            };
            puts.push(table.push(first, chunk, &encode));
        }
        (table, puts)
    }

    /// The entries, in key order.
    pub fn entries(&self) -> &[SegmentRef<K>] {
        &self.entries
    }

    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// The keys per segment the table was built with.
    pub fn per(&self) -> usize {
        self.per as usize
    }

    /// How many entries the segments hold in all.
    pub fn len(&self) -> u64 {
        self.entries.iter().map(|s| u64::from(s.count)).sum()
    }

    /// Index of the segment that holds, or would hold, `key`.
    pub fn locate<Q: Ord + ?Sized>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
    {
        // entries[0].first is the least key, so at least one is <= key.
        self.entries
            .partition_point(|s| s.first.borrow() <= key)
            .saturating_sub(1)
    }

    /// The indexes of the segments holding `keys`, sorted, without
    /// repeats.
    pub fn locate_all<Q: Ord + ?Sized>(
        &self,
        keys: impl IntoIterator<Item = impl Borrow<Q>>,
    ) -> Vec<usize>
    where
        K: Borrow<Q>,
    {
        sorted_unique((keys.into_iter()).map(|k| self.locate(k.borrow())))
    }

    /// Entry `i`, if `bytes` are its record (their digest is the entry's).
    pub fn entry_of(&self, i: usize, bytes: &[u8]) -> Result<&SegmentRef<K>, DecodeError> {
        let entry = self.entry(i)?;
        match xxh3_64(bytes) == entry.digest {
            true => Ok(entry),
            false => Err(DecodeError("segment digest differs from the root's")),
        }
    }

    /// Checks a segment's decoded `items` against entry `i`: their count,
    /// and that they fall in the entry's range.
    pub fn check<V>(&self, i: usize, items: &BTreeMap<K, V>) -> Result<(), DecodeError> {
        let entry = self.entry(i)?;
        if items.len() != entry.count as usize {
            return Err(DecodeError("segment entry count differs from the root's"));
        }
        let below_first = (items.first_key_value()).is_some_and(|(k, _)| *k < entry.first);
        let above_range = match (self.entries.get(i + 1), items.last_key_value()) {
            (Some(next), Some((last, _))) => *last >= next.first,
            _ => false,
        };
        match below_first || above_range {
            true => Err(DecodeError("segment entry outside the segment's range")),
            false => Ok(()),
        }
    }

    /// Every segment's items, in table order, as one map.
    pub fn assemble<V>(
        &self,
        segments: Vec<BTreeMap<K, V>>,
    ) -> Result<BTreeMap<K, V>, DecodeError> {
        if segments.len() != self.entries.len() {
            return Err(DecodeError("segment count differs from the root's"));
        }
        let mut all = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        for (i, segment) in segments.into_iter().enumerate() {
            self.check(i, &segment)?;
            all.extend(segment);
        }
        // In order, as each segment's range follows the one before: built
        // in one pass.
        Ok(BTreeMap::from_iter(all))
    }

    /// The items of the given segments, as (table index, items), checked
    /// against their entries.
    pub fn gather<V>(
        &self,
        segments: Vec<(usize, BTreeMap<K, V>)>,
    ) -> Result<BTreeMap<K, V>, DecodeError> {
        let mut all = BTreeMap::new();
        for (i, mut segment) in segments {
            self.check(i, &segment)?;
            all.append(&mut segment);
        }
        Ok(all)
    }

    /// Rewrites the segments at table indexes `loaded` from `items`, which
    /// must all fall in them: each loaded segment gets a fresh id even when
    /// unchanged (an exact comparison would need the old items; a digest
    /// comparison could take a changed segment for an unchanged one), one
    /// above twice the keys per segment splits, an empty one leaves the
    /// table unless none other is left. Refused, with the table unchanged,
    /// when `loaded` names a segment the table lacks or an item falls
    /// outside the loaded segments (it would be lost).
    pub fn write_back<V>(
        &mut self,
        items: BTreeMap<K, V>,
        loaded: &[usize],
        encode: impl Fn(&[(K, V)]) -> Vec<u8>,
    ) -> Result<SegmentWrite, DecodeError> {
        let mut loaded = loaded.to_vec();
        loaded.sort_unstable();
        loaded.dedup();
        if loaded.last().is_some_and(|&i| i >= self.entries.len()) {
            return Err(DecodeError(
                "write-back of a segment the table does not have",
            ));
        }
        let mut parts = self.split_by_segment(items, &loaded)?.into_iter();
        let mut dead = Vec::with_capacity(loaded.len());
        let mut pieces = Vec::with_capacity(self.entries.len() + 1);
        for (i, entry) in std::mem::take(&mut self.entries).into_iter().enumerate() {
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
                Piece::Kept(entry) => self.entries.push(entry),
                Piece::New { first, items } => puts.push(self.push(first, &items, &encode)),
            }
        }
        Ok(SegmentWrite { puts, dead })
    }

    /// Appends the next id, the keys per segment and the entries (each its
    /// key, id, count and digest).
    pub fn encode(&self, w: &mut Writer) {
        w.varint(self.next_id);
        w.varint(u64::from(self.per));
        w.len(self.entries.len());
        for entry in &self.entries {
            entry.first.write(w);
            w.varint(entry.id);
            w.varint(u64::from(entry.count));
            w.u64_be(entry.digest);
        }
    }

    /// Reads what [`Table::encode`] wrote, refusing a table that breaks
    /// the module's invariants.
    pub fn decode(r: &mut Reader) -> Result<Table<K>, DecodeError> {
        let next_id = r.varint()?;
        let per = u32::try_from(r.varint()?)
            .ok()
            .filter(|&n| n > 0)
            .ok_or(DecodeError("entries per segment out of range"))?;
        let n = r.count(K::MIN_BYTES + ENTRY_MIN_BESIDE_KEY)?;
        if n == 0 {
            return Err(DecodeError("root without segments"));
        }
        let mut entries: Vec<SegmentRef<K>> = Vec::with_capacity(n);
        let mut ids = BTreeSet::new();
        for _ in 0..n {
            let entry = read_entry(r)?;
            match entries.last() {
                None if entry.first != K::bottom() => {
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
            entries.push(entry);
        }
        Ok(Table {
            entries,
            next_id,
            per,
        })
    }

    fn entry(&self, i: usize) -> Result<&SegmentRef<K>, DecodeError> {
        (self.entries.get(i)).ok_or(DecodeError("segment index out of the table"))
    }

    /// Encodes a segment of `items` (in order) under a fresh id and
    /// appends its entry, starting at `first`.
    fn push<V>(
        &mut self,
        first: K,
        items: &[(K, V)],
        encode: &impl Fn(&[(K, V)]) -> Vec<u8>,
    ) -> (u64, Vec<u8>) {
        let bytes = encode(items);
        let id = self.next_id;
        self.next_id = id.checked_add(1).expect("segment ids run out at 2^64");
        self.entries.push(SegmentRef {
            first,
            id,
            count: u32::try_from(items.len()).expect("a segment holds under 2^32 entries"),
            digest: xxh3_64(&bytes),
        });
        (id, bytes)
    }

    /// Sorts `items` by the loaded segment (indexes sorted, in the table)
    /// whose range holds them: one map per loaded segment, in order.
    fn split_by_segment<V>(
        &self,
        mut items: BTreeMap<K, V>,
        loaded: &[usize],
    ) -> Result<Vec<BTreeMap<K, V>>, DecodeError> {
        const STRAY: DecodeError =
            DecodeError("write-back of an entry outside the loaded segments");
        let mut parts = Vec::with_capacity(loaded.len());
        // From the top down: each split takes the items at or above the
        // segment's first, of which none may reach the next segment's.
        for &i in loaded.iter().rev() {
            let mut part = items.split_off(&self.entries[i].first);
            if let Some(next) = self.entries.get(i + 1)
                && !part.split_off(&next.first).is_empty()
            {
                return Err(STRAY);
            }
            parts.push(part);
        }
        if !items.is_empty() {
            return Err(STRAY);
        }
        parts.reverse();
        Ok(parts)
    }

    /// The new segments for a loaded segment's `items`, starting at
    /// `first`: one, or the fewest near-equal parts of at most twice the
    /// keys per segment.
    fn cut<V>(&self, first: K, items: BTreeMap<K, V>, out: &mut Vec<Piece<K, V>>) {
        let n = items.len();
        let most = 2 * self.per();
        let parts = n.div_ceil(most).max(1);
        let mut items = items.into_iter();
        let mut first = Some(first);
        for p in 0..parts {
            // The first n % parts parts take one entry more.
            let take = n / parts + usize::from(p < n % parts);
            let items: Vec<_> = items.by_ref().take(take).collect();
            let first = first.take().unwrap_or_else(|| items[0].0.clone());
            out.push(Piece::New { first, items });
        }
    }
}

/// Table indexes sorted, without repeats.
pub(crate) fn sorted_unique(indexes: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut out: Vec<usize> = indexes.into_iter().collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// An entry as [`Table::encode`] wrote it.
fn read_entry<K: Key>(r: &mut Reader) -> Result<SegmentRef<K>, DecodeError> {
    Ok(SegmentRef {
        first: K::read(r)?,
        id: r.varint()?,
        count: u32::try_from(r.varint()?)
            .map_err(|_| DecodeError("segment entry count out of range"))?,
        digest: r.u64_be()?,
    })
}

/// A segment of the table being rebuilt by [`Table::write_back`].
enum Piece<K, V> {
    /// Not loaded: kept as it is.
    Kept(SegmentRef<K>),
    /// To be written under a fresh id.
    New { first: K, items: Vec<(K, V)> },
}

impl<K: Key, V> Piece<K, V> {
    fn is_new_and_empty(&self) -> bool {
        matches!(self, Piece::New { items, .. } if items.is_empty())
    }

    fn first_mut(&mut self) -> &mut K {
        match self {
            Piece::Kept(entry) => &mut entry.first,
            Piece::New { first, .. } => first,
        }
    }
}

/// Drops the rewritten segments left empty, keeping one segment if none
/// other is left; the first segment's range then starts at the bottom.
fn drop_empty<K: Key, V>(pieces: &mut Vec<Piece<K, V>>) {
    pieces.retain(|p| !p.is_new_and_empty());
    if pieces.is_empty() {
        pieces.push(Piece::New {
            first: K::bottom(),
            items: Vec::new(),
        });
    }
    *pieces[0].first_mut() = K::bottom();
}
