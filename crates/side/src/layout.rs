//! The side store's format v1 (design note 027): what each key and value
//! of a vnode's side keyspace holds, as bytes.
//!
//! Keys start with a region tag; their components are encoded by
//! [`eddy_storage::tuple`] (escaped and terminated, the last raw), so byte
//! order is tuple order; integers are big-endian, so they sort as numbers.
//!
//! | region | key | value |
//! |---|---|---|
//! | meta | `m` name | a meta value (`format`, `built`, `swept`) |
//! | key record | `k` esc(bucket) key | [`KeyRecord`]: expiry · terms |
//! | 2i entry | `i` esc(bucket) esc(field) esc(term) key | the key's expiry (u64), or empty |
//! | expiry | `x` expiry esc(bucket) key | empty |
//!
//! An index entry carries its key's expiry, so a scan skips expired keys
//! without a lookup per entry.
//!
//! Only a key with index entries or an expiry has a key record; the others
//! have nothing here. Tags `a` (anti-entropy) and `w` (view indexes) are
//! reserved.
//!
//! Invariants: every encoding here decodes back to what was encoded, and a
//! value that does not decode is reported as damage, never read as another
//! (pinned by the proptests below and the v1 fixture in `tests/`).

use std::ops::Bound;

use eddy_storage::tuple::{push_escaped, split_escaped, terminated_upper};

/// The format this crate writes.
pub const FORMAT: u32 = 1;

pub const META: u8 = b'm';
pub const KEY: u8 = b'k';
pub const INDEX: u8 = b'i';
pub const EXPIRY: u8 = b'x';
/// Reserved for anti-entropy trees (issue 29).
pub const RESERVED_AAE: u8 = b'a';
/// Reserved for view indexes (issue 30).
pub const RESERVED_VIEWS: u8 = b'w';

/// The meta key naming the format.
pub const META_FORMAT: &[u8] = b"mformat";
/// The meta key holding the sweep's durable mark (u64, big-endian:
/// every key expiring at or before it was swept durably; `swept`).
pub const META_SWEPT: &[u8] = b"mswept";
/// The meta key saying the store was built from its vnode's objects
/// (written once a build at open, or a new vnode's empty start, is done).
pub const META_BUILT: &[u8] = b"mbuilt";

/// An index entry of a key: (field, term), as the backends store them.
pub type Term = (Vec<u8>, Vec<u8>);

/// What the side store keeps of one key: when it expires (0: never) and
/// its index terms (sorted, no duplicates).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyRecord {
    pub expiry: u64,
    pub terms: Vec<Term>,
}

/// `k` esc(bucket) key.
pub fn key_record_key(bucket: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + key.len() + 4);
    out.push(KEY);
    push_escaped(&mut out, bucket);
    out.extend_from_slice(key);
    out
}

/// `i` esc(bucket) esc(field) — the prefix of a field's entries.
pub fn index_prefix(bucket: &[u8], field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + field.len() + 5);
    out.push(INDEX);
    push_escaped(&mut out, bucket);
    push_escaped(&mut out, field);
    out
}

/// `i` esc(bucket) esc(field) esc(term) key.
pub fn index_key(bucket: &[u8], (field, term): (&[u8], &[u8]), key: &[u8]) -> Vec<u8> {
    let mut out = index_prefix(bucket, field);
    push_escaped(&mut out, term);
    out.extend_from_slice(key);
    out
}

/// The (term, key) of an index key under `prefix`.
pub fn split_index_key<'a>(prefix: &[u8], encoded: &'a [u8]) -> Option<(Vec<u8>, &'a [u8])> {
    let rest = encoded.strip_prefix(prefix)?;
    let (term, key) = split_escaped(rest)?;
    Some((term.into_owned(), key))
}

/// `x` expiry esc(bucket) key.
pub fn expiry_key(expiry: u64, bucket: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + key.len() + 11);
    out.push(EXPIRY);
    out.extend_from_slice(&expiry.to_be_bytes());
    push_escaped(&mut out, bucket);
    out.extend_from_slice(key);
    out
}

/// The (expiry, bucket, key) of an expiry key.
pub fn split_expiry_key(encoded: &[u8]) -> Option<(u64, Vec<u8>, &[u8])> {
    let rest = encoded.strip_prefix(&[EXPIRY])?;
    let (at, rest) = rest.split_first_chunk::<8>()?;
    let (bucket, key) = split_escaped(rest)?;
    Some((u64::from_be_bytes(*at), bucket.into_owned(), key))
}

/// The (bucket, key) of a key record's key.
pub fn split_key_record_key(encoded: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let rest = encoded.strip_prefix(&[KEY])?;
    let (bucket, key) = split_escaped(rest)?;
    Some((bucket.into_owned(), key))
}

/// Every key record of `bucket`.
pub fn key_record_range(bucket: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let first = key_record_key(bucket, b"");
    let upper = terminated_upper(&first);
    (Bound::Included(first), Bound::Excluded(upper))
}

/// The index entries under `prefix` with `start <= term <= end`, strictly
/// after `after` (term, key) when given.
pub fn index_range(
    prefix: &[u8],
    terms: (&[u8], &[u8]),
    after: Option<(&[u8], &[u8])>,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    eddy_storage::tuple::term_range(prefix, terms, after)
}

impl KeyRecord {
    /// Whether the key needs no record: no terms and no expiry.
    pub fn is_empty(&self) -> bool {
        self.expiry == 0 && self.terms.is_empty()
    }

    /// expiry u64 · count u32 · (field len u16 · field · term len u16 ·
    /// term) per term.
    pub fn encode(&self) -> Vec<u8> {
        let size: usize = self.terms.iter().map(|(f, t)| 4 + f.len() + t.len()).sum();
        let mut out = Vec::with_capacity(12 + size);
        out.extend_from_slice(&self.expiry.to_be_bytes());
        out.extend_from_slice(&(self.terms.len() as u32).to_be_bytes());
        for (field, term) in &self.terms {
            push_short(&mut out, field);
            push_short(&mut out, term);
        }
        out
    }

    /// The record `encoded` holds; `None` when it is not one whole record.
    pub fn decode(encoded: &[u8]) -> Option<KeyRecord> {
        let mut r = Reader(encoded);
        let expiry = r.u64()?;
        let count = r.u32()? as usize;
        let mut terms = Vec::with_capacity(count.min(r.0.len() / 4));
        for _ in 0..count {
            terms.push((r.short()?.to_vec(), r.short()?.to_vec()));
        }
        r.0.is_empty().then_some(KeyRecord { expiry, terms })
    }
}

/// The expiry a key record's value names, without decoding its terms.
pub fn record_expiry(encoded: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(*encoded.first_chunk::<8>()?))
}

/// An index entry's value: the key's expiry, if it has one.
pub fn encode_expiry(expiry: u64) -> Vec<u8> {
    match expiry {
        0 => Vec::new(),
        at => at.to_be_bytes().to_vec(),
    }
}

/// The expiry an index entry's value holds (0: none); `None` when it is
/// not one.
pub fn decode_expiry(encoded: &[u8]) -> Option<u64> {
    match encoded {
        [] => Some(0),
        _ => Some(u64::from_be_bytes(encoded.try_into().ok()?)),
    }
}

/// Appends `bytes` with a u16 length. Keys, fields and terms are at most
/// 65,535 bytes (`eddy_storage::limits`).
fn push_short(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&bytes[..usize::from(len)]);
}

/// Reads big-endian fields off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_be_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_be_bytes)
    }

    fn short(&mut self) -> Option<&'a [u8]> {
        let len = usize::from(self.take().map(u16::from_be_bytes)?);
        let (bytes, rest) = self.0.split_at_checked(len)?;
        self.0 = rest;
        Some(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::ops::RangeBounds;

    use eddy_storage::tuple::arbitrary_part as bytes;

    fn record() -> impl Strategy<Value = KeyRecord> {
        let terms = proptest::collection::btree_set((bytes(), bytes()), 0..4);
        (any::<u64>(), terms).prop_map(|(expiry, t)| KeyRecord {
            expiry,
            terms: t.into_iter().collect(),
        })
    }

    proptest! {
        #[test]
        fn key_records_round_trip_and_cut_ones_do_not_decode(r in record(), cut in any::<prop::sample::Index>()) {
            let encoded = r.encode();
            prop_assert_eq!(record_expiry(&encoded), Some(r.expiry));
            prop_assert_eq!(KeyRecord::decode(&encoded), Some(r));
            let cut = cut.index(encoded.len());
            prop_assert_eq!(KeyRecord::decode(&encoded[..cut]), None);
        }

        #[test]
        fn index_keys_sort_like_tuples(
            a in (bytes(), bytes(), bytes(), bytes()),
            b in (bytes(), bytes(), bytes(), bytes()),
        ) {
            let ea = index_key(&a.0, (&a.1, &a.2), &a.3);
            let eb = index_key(&b.0, (&b.1, &b.2), &b.3);
            prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
        }

        #[test]
        fn expiry_keys_sort_by_time_then_key(
            a in (any::<u64>(), bytes(), bytes()),
            b in (any::<u64>(), bytes(), bytes()),
        ) {
            let ea = expiry_key(a.0, &a.1, &a.2);
            prop_assert_eq!(ea.cmp(&expiry_key(b.0, &b.1, &b.2)), a.cmp(&b));
            let (at, bucket, key) = split_expiry_key(&ea).unwrap();
            prop_assert_eq!((at, bucket, key.to_vec()), a);
        }

        #[test]
        fn index_ranges_hold_exactly_the_terms_after_the_continuation(
            start in bytes(), end in bytes(), after in proptest::option::of((bytes(), bytes())),
            entry in (bytes(), bytes()),
        ) {
            let prefix = index_prefix(b"b", b"f");
            let after_ref = after.as_ref().map(|(t, k)| (t.as_slice(), k.as_slice()));
            let (lo, hi) = index_range(&prefix, (&start, &end), after_ref);
            let encoded = index_key(b"b", (b"f", &entry.0), &entry.1);
            let inside = (lo.as_ref(), hi.as_ref()).contains(&encoded);
            let in_terms = start <= entry.0 && entry.0 <= end;
            let past = after.as_ref().is_none_or(|(t, k)| (&entry.0, &entry.1) > (t, k));
            prop_assert_eq!(inside, in_terms && past);
            prop_assert_eq!(split_index_key(&prefix, &encoded), Some((entry.0.clone(), &entry.1[..])));
        }

        #[test]
        fn key_ranges_hold_exactly_the_bucket_keys(
            other in (prop_oneof![Just(b"b".to_vec()), bytes()], bytes()),
        ) {
            let (lo, hi) = key_record_range(b"b");
            let encoded = key_record_key(&other.0, &other.1);
            let inside = (lo.as_ref(), hi.as_ref()).contains(&encoded);
            prop_assert_eq!(inside, other.0 == b"b");
            prop_assert_eq!(split_key_record_key(&encoded), Some((other.0.clone(), &other.1[..])));
        }
    }

    #[test]
    fn regions_do_not_overlap() {
        let tags = [META, KEY, INDEX, EXPIRY, RESERVED_AAE, RESERVED_VIEWS];
        let mut sorted = tags.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), tags.len());
        assert_eq!(META_FORMAT[0], META);
        assert_eq!(META_BUILT[0], META);
    }
}
