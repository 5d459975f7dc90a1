//! The in-memory secondary index: `(bucket, field, term, key)` in order, and
//! each key's term set.
//!
//! Nothing here is persisted on its own: every data record carries its key's
//! whole term set after the write, so open rebuilds this index from the
//! records (or hint entries) that the keydir keeps. Invariant: `entries`
//! holds exactly `(bucket, field, term, key)` for each `(field, term)` in
//! `by_key[(bucket, key)]`, and `by_key` never holds an empty set.
//!
//! A key's terms are kept as a sorted boxed slice rather than a `TermSet`:
//! a `BTreeSet` allocates a whole node (544 bytes, 640 from mimalloc) for
//! its first element, which was over a third of an indexed key's memory.
//!
//! The index counts what it holds: `bytes` is the sum of
//! [`memory::key_bytes`] over the keys of `by_key` (an estimate of its
//! memory, see [`memory`]), kept by every change.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};

use eddy_storage::{FoldControl, IndexQuery, KeyVisitor};
use hashbrown::{Equivalent, HashMap};

use crate::format::TermSet;

pub mod memory;

type IndexKey = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

/// A key's `(field, term)` pairs, sorted and distinct (a `TermSet`'s order).
pub type Terms = [(Vec<u8>, Vec<u8>)];

/// A borrowed `(bucket, key)` that hashes like the owned tuple.
struct BorrowedKey<'a>(&'a [u8], &'a [u8]);

impl Hash for BorrowedKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
        self.1.hash(state);
    }
}

impl Equivalent<(Vec<u8>, Vec<u8>)> for BorrowedKey<'_> {
    fn equivalent(&self, k: &(Vec<u8>, Vec<u8>)) -> bool {
        self.0 == k.0.as_slice() && self.1 == k.1.as_slice()
    }
}

/// Index entries of one instance.
#[derive(Default)]
pub struct TermIndex {
    entries: BTreeSet<IndexKey>,
    by_key: HashMap<(Vec<u8>, Vec<u8>), Box<Terms>>,
    /// The estimated memory of all of it ([`memory::key_bytes`] summed).
    bytes: u64,
}

impl TermIndex {
    /// The term set of `(bucket, key)`, if it has any.
    pub fn terms_of(&self, bucket: &[u8], key: &[u8]) -> Option<&Terms> {
        if self.by_key.is_empty() {
            return None;
        }
        self.by_key.get(&BorrowedKey(bucket, key)).map(|t| &**t)
    }

    /// The estimated bytes `(bucket, key)`'s terms cost now (0 if none).
    pub fn bytes_of(&self, bucket: &[u8], key: &[u8]) -> u64 {
        self.terms_of(bucket, key)
            .map_or(0, |terms| memory::key_bytes(bucket, key, terms))
    }

    /// The estimated memory of the whole index, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.bytes
    }

    /// Replaces the term set of `(bucket, key)`.
    pub fn set(&mut self, bucket: &[u8], key: &[u8], terms: TermSet) {
        self.remove(bucket, key);
        if terms.is_empty() {
            return;
        }
        self.bytes += memory::key_bytes(bucket, key, terms.iter());
        for (field, term) in &terms {
            let entry = (bucket.to_vec(), field.clone(), term.clone(), key.to_vec());
            self.entries.insert(entry);
        }
        let terms: Box<Terms> = terms.into_iter().collect();
        self.by_key.insert((bucket.to_vec(), key.to_vec()), terms);
    }

    /// Removes every index entry of `(bucket, key)`.
    pub fn remove(&mut self, bucket: &[u8], key: &[u8]) {
        if self.by_key.is_empty() {
            return;
        }
        let Some(((b, k), terms)) = self.by_key.remove_entry(&BorrowedKey(bucket, key)) else {
            return;
        };
        self.forget(memory::key_bytes(&b, &k, terms.iter()));
        for (field, term) in terms.into_vec() {
            self.entries.remove(&(b.clone(), field, term, k.clone()));
        }
    }

    /// Removes every index entry of `bucket`.
    pub fn drop_bucket(&mut self, bucket: &[u8]) {
        let mut dropped = 0;
        self.by_key.retain(|(b, k), terms| {
            let keep = b.as_slice() != bucket;
            if !keep {
                dropped += memory::key_bytes(b, k, terms.iter());
            }
            keep
        });
        self.forget(dropped);
        let from = (bucket.to_vec(), Vec::new(), Vec::new(), Vec::new());
        let doomed: Vec<IndexKey> = self
            .entries
            .range(from..)
            .take_while(|e| e.0.as_slice() == bucket)
            .cloned()
            .collect();
        for e in doomed {
            self.entries.remove(&e);
        }
    }

    /// Takes `bytes` off the estimate (what a removed key had added).
    fn forget(&mut self, bytes: u64) {
        debug_assert!(
            bytes <= self.bytes,
            "the estimate is a sum of what was added"
        );
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    /// Index entries matching `query`, in `(term, key)` order, for which
    /// `live(key)` holds, up to `limit` of them.
    pub fn range(
        &self,
        query: &IndexQuery,
        limit: usize,
        mut live: impl FnMut(&[u8]) -> bool,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let (term, key) = match &query.start_after {
            Some((t, k)) if *t >= query.start => (t.clone(), k.clone()),
            _ => (query.start.clone(), Vec::new()),
        };
        let from = (query.bucket.clone(), query.field.clone(), term, key);
        self.entries
            .range(from..)
            .take_while(|(b, f, t, _)| *b == query.bucket && *f == query.field && *t <= query.end)
            .filter(|(_, _, t, k)| query.admits(t, k) && live(k))
            .take(limit)
            .map(|(_, _, t, k)| (t.clone(), k.clone()))
            .collect()
    }

    /// Number of index entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Streams `hits` to `f` until it says stop.
pub fn deliver(hits: Vec<(Vec<u8>, Vec<u8>)>, f: &mut KeyVisitor<'_>) -> FoldControl {
    for (term, key) in hits {
        if f(&term, &key) == FoldControl::Stop {
            return FoldControl::Stop;
        }
    }
    FoldControl::Continue
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(pairs: &[(&[u8], &[u8])]) -> TermSet {
        pairs
            .iter()
            .map(|(f, t)| (f.to_vec(), t.to_vec()))
            .collect()
    }

    #[test]
    fn set_replace_and_range() {
        let mut ix = TermIndex::default();
        ix.set(b"b", b"k1", ts(&[(b"f", b"2"), (b"g", b"x")]));
        ix.set(b"b", b"k2", ts(&[(b"f", b"1")]));
        ix.set(b"c", b"k3", ts(&[(b"f", b"1")]));
        let q = IndexQuery::range(b"b", b"f", b"0", b"9");
        let hits = ix.range(&q, usize::MAX, |_| true);
        assert_eq!(
            hits,
            vec![
                (b"1".to_vec(), b"k2".to_vec()),
                (b"2".to_vec(), b"k1".to_vec())
            ]
        );
        ix.set(b"b", b"k1", TermSet::new());
        assert_eq!(ix.range(&q, usize::MAX, |_| true).len(), 1);
        ix.drop_bucket(b"b");
        assert!(ix.range(&q, usize::MAX, |_| true).is_empty());
        assert_eq!(ix.len(), 1);
        assert!(ix.terms_of(b"c", b"k3").is_some());
    }

    /// Entries and bytes counted from scratch: what the running figures
    /// must equal.
    fn recount(ix: &TermIndex) -> (usize, u64) {
        let entries = ix.by_key.values().map(|t| t.len()).sum();
        let bytes = ix
            .by_key
            .iter()
            .map(|((b, k), t)| memory::key_bytes(b, k, t.iter()))
            .sum();
        (entries, bytes)
    }

    fn check(ix: &TermIndex) -> (usize, u64) {
        assert_eq!(recount(ix), (ix.len(), ix.memory_bytes()));
        (ix.len(), ix.memory_bytes())
    }

    #[test]
    fn entries_and_bytes_follow_adds_replaces_removes_and_drops() {
        let mut ix = TermIndex::default();
        assert_eq!(check(&ix), (0, 0));
        let one = ts(&[(b"f_bin", b"a")]);
        let k1 = memory::key_bytes(b"b", b"k1", one.iter());
        ix.set(b"b", b"k1", one.clone());
        assert_eq!(check(&ix), (1, k1));
        let three = ts(&[(b"f_bin", b"a"), (b"f_bin", b"bb"), (b"g_int", b"12345678")]);
        let k1_more = memory::key_bytes(b"b", b"k1", three.iter());
        ix.set(b"b", b"k1", three);
        assert_eq!(check(&ix), (3, k1_more));
        assert!(k1_more > k1);
        let k2 = memory::key_bytes(b"c", b"k2", one.iter());
        ix.set(b"c", b"k2", one.clone());
        assert_eq!(check(&ix), (4, k1_more + k2));
        ix.set(b"b", b"k1", one.clone());
        assert_eq!(check(&ix), (2, k1 + k2), "fewer terms give bytes back");
        ix.remove(b"b", b"k1");
        assert_eq!(check(&ix), (1, k2));
        ix.remove(b"b", b"k1");
        assert_eq!(check(&ix), (1, k2), "removing nothing changes nothing");
        ix.set(b"b", b"k1", one.clone());
        ix.set(b"b", b"k3", one);
        ix.drop_bucket(b"b");
        assert_eq!(check(&ix), (1, k2));
        ix.set(b"c", b"k2", TermSet::new());
        assert_eq!(check(&ix), (0, 0));
    }

    proptest::proptest! {
        #[test]
        fn the_running_figures_equal_a_recount(
            ops in proptest::collection::vec((0u8..4, 0u8..3, 0u8..6, 0u8..8), 1..80),
        ) {
            let mut ix = TermIndex::default();
            for (op, bucket, key, terms) in ops {
                let (b, k) = ([b'b', bucket], [b'k', key]);
                match op {
                    0 | 1 => {
                        let set = (0..terms)
                            .map(|t| (vec![b'f'; 1 + t as usize % 3], vec![t; 1 + 7 * t as usize]))
                            .collect();
                        ix.set(&b, &k, set);
                    }
                    2 => ix.remove(&b, &k),
                    _ => ix.drop_bucket(&b),
                }
                check(&ix);
            }
            for (b, k) in ix.by_key.keys().cloned().collect::<Vec<_>>() {
                ix.remove(&b, &k);
            }
            proptest::prop_assert_eq!(check(&ix), (0, 0));
        }
    }
}
