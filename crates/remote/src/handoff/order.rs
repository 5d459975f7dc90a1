//! A partition's keys in `(bucket, key)` byte order, a chunk at a time,
//! whatever order its backend folds in: the order a transfer's checkpoint
//! is a position in.
//!
//! Each chunk is one key fold that keeps the `max` smallest keys after the
//! position (on an ordered backend the fold stops once it has them). An
//! unordered backend (bitcask folds in file order, which a merge changes)
//! is thus read in a stable order too, at the cost of one key fold per
//! chunk; bitcask's key fold reads only its in-memory keydir.
//!
//! Invariant: the chunks after `Position::Start`, each taken after the last
//! key of the one before, list every key present throughout exactly once,
//! in ascending order (property-tested against a sorted model).

use bytes::Bytes;
use eddy_storage::{Backend, FoldControl, FoldOptions, StorageError};

use super::wire::{Item, Position};
use eddy_model::request::segments_owner;
use eddy_vnode::msg::StorageKey;

/// Keeps the `max` smallest keys offered after a position.
///
/// Unordered offers are gathered into a vector of at most `2 * max` keys;
/// when it fills, a linear-time selection keeps the `max` smallest and the
/// largest of them becomes a bound that later keys must be below. Each key
/// thus costs amortised constant time (plus one sort of `max` keys at the
/// end), not a tree insertion.
pub struct Selection<'a> {
    after: &'a Position,
    max: usize,
    /// The keys arrive in order: stop once `max` are kept.
    ordered: bool,
    keys: Vec<StorageKey>,
    /// Once set, the largest of `max` keys kept: a key above it cannot be
    /// among the `max` smallest.
    bound: Option<StorageKey>,
}

impl<'a> Selection<'a> {
    pub fn new(after: &'a Position, max: usize, ordered: bool) -> Selection<'a> {
        Selection {
            after,
            max: max.max(1),
            ordered,
            keys: Vec::new(),
            bound: None,
        }
    }

    /// Considers one key; says whether the fold may stop.
    pub fn offer(&mut self, bucket: &[u8], key: &[u8]) -> FoldControl {
        if self.after.covers(bucket, key) {
            return FoldControl::Continue;
        }
        if let Some(bound) = &self.bound
            && (bucket, key) > (bound.bucket.as_slice(), bound.key.as_slice())
        {
            return FoldControl::Continue;
        }
        self.keys.push(StorageKey {
            bucket: bucket.to_vec(),
            key: key.to_vec(),
        });
        if self.ordered {
            return match self.keys.len() == self.max {
                true => FoldControl::Stop,
                false => FoldControl::Continue,
            };
        }
        if self.keys.len() >= 2 * self.max {
            self.keep_smallest();
        }
        FoldControl::Continue
    }

    /// Keeps the `max` smallest keys; the largest of them becomes the bound.
    fn keep_smallest(&mut self) {
        let nth = self.max - 1;
        self.keys.select_nth_unstable_by(nth, order);
        self.keys.truncate(self.max);
        self.bound = Some(self.keys[nth].clone());
    }

    /// The kept keys, in order.
    pub fn into_keys(mut self) -> Vec<StorageKey> {
        self.keys.sort_unstable_by(order);
        self.keys.truncate(self.max);
        self.keys
    }
}

/// `(bucket, key)` byte order.
fn order(a: &StorageKey, b: &StorageKey) -> std::cmp::Ordering {
    (&a.bucket, &a.key).cmp(&(&b.bucket, &b.key))
}

/// The next (at most `max`) keys of `backend` after `after`, in order.
pub fn keys_after(
    backend: &dyn Backend,
    after: &Position,
    max: usize,
) -> Result<Vec<StorageKey>, StorageError> {
    if *after == Position::Folded {
        return Ok(Vec::new());
    }
    let mut selection = Selection::new(after, max, backend.capabilities().ordered);
    // A segmented value travels whole, read through its root: its
    // segments are not keys of their own.
    backend.fold_keys(&FoldOptions::all(), &mut |b, k| match segments_owner(b) {
        Some(_) => FoldControl::Continue,
        None => selection.offer(b, k),
    })?;
    Ok(selection.into_keys())
}

/// Collects items into batches of at most `items_max` objects and about
/// `bytes_max` bytes (a batch holds at least one object, however large).
pub struct BatchBuilder {
    items: Vec<Item>,
    bytes: usize,
    bytes_max: usize,
    items_max: usize,
}

impl BatchBuilder {
    pub fn new(bytes_max: usize, items_max: usize) -> BatchBuilder {
        BatchBuilder {
            items: Vec::new(),
            bytes: 0,
            bytes_max,
            items_max: items_max.max(1),
        }
    }

    /// The bytes an item adds to a batch on the wire.
    pub fn size_of(key: &StorageKey, value: &[u8]) -> usize {
        12 + key.bucket.len() + key.key.len() + value.len()
    }

    /// True if `next_bytes` more would not fit (and the batch is not empty).
    pub fn would_overflow(&self, next_bytes: usize) -> bool {
        !self.items.is_empty()
            && (self.items.len() == self.items_max || self.bytes + next_bytes > self.bytes_max)
    }

    /// Adds one object.
    pub fn push(&mut self, key: StorageKey, value: Vec<u8>) {
        self.bytes += Self::size_of(&key, &value);
        self.items.push(Item {
            bucket: Bytes::from(key.bucket),
            key: Bytes::from(key.key),
            encoded: Bytes::from(value),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The bucket and key of the last object added.
    pub fn last_key(&self) -> Option<(&[u8], &[u8])> {
        self.items.last().map(|i| (&i.bucket[..], &i.key[..]))
    }

    /// Takes the batch so far, and its size in bytes.
    pub fn take(&mut self) -> (Vec<Item>, usize) {
        (
            std::mem::take(&mut self.items),
            std::mem::take(&mut self.bytes),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    type Key = (Vec<u8>, Vec<u8>);

    /// Reads `keys` (offered in `order`) chunk by chunk from the start.
    fn chunks(keys: &BTreeSet<Key>, order: &[Key], max: usize, ordered: bool) -> Vec<Key> {
        let mut position = Position::Start;
        let mut out = Vec::new();
        loop {
            let mut s = Selection::new(&position, max, ordered);
            for (b, k) in order {
                if s.offer(b, k) == FoldControl::Stop {
                    break;
                }
            }
            let chunk = s.into_keys();
            assert!(chunk.len() <= max.max(1));
            let Some(last) = chunk.last() else { break };
            position = Position::After(last.bucket.clone(), last.key.clone());
            out.extend(chunk.into_iter().map(|k| (k.bucket, k.key)));
        }
        assert!(keys.iter().all(|(b, k)| position.covers(b, k)));
        out
    }

    fn key_set() -> impl Strategy<Value = BTreeSet<Key>> {
        let part = prop::collection::vec(0u8..4, 0..3);
        prop::collection::btree_set((part.clone(), part), 0..60)
    }

    proptest! {
        #[test]
        fn chunks_list_every_key_once_in_order(
            keys in key_set(),
            max in 0usize..9,
            seed in any::<u64>(),
        ) {
            let sorted: Vec<Key> = keys.iter().cloned().collect();
            prop_assert_eq!(&chunks(&keys, &sorted, max, true), &sorted);
            // An unordered fold: the same keys in a scrambled order.
            let mut scrambled = sorted.clone();
            scrambled.sort_by_key(|(b, k)| {
                eddy_ring::key_hash(&seed.to_be_bytes(), b, k)
            });
            prop_assert_eq!(&chunks(&keys, &scrambled, max, false), &sorted);
        }

        #[test]
        fn batches_respect_their_bounds(
            sizes in prop::collection::vec(0usize..300, 1..50),
            bytes_max in 1usize..1000,
            items_max in 1usize..8,
        ) {
            let mut builder = BatchBuilder::new(bytes_max, items_max);
            let mut batches = Vec::new();
            for (i, size) in sizes.iter().enumerate() {
                let key = StorageKey { bucket: b"b".to_vec(), key: i.to_be_bytes().to_vec() };
                let value = vec![0u8; *size];
                if builder.would_overflow(BatchBuilder::size_of(&key, &value)) {
                    batches.push(builder.take());
                }
                builder.push(key, value);
            }
            batches.push(builder.take());
            let total: usize = batches.iter().map(|(items, _)| items.len()).sum();
            prop_assert_eq!(total, sizes.len());
            for (items, bytes) in &batches {
                prop_assert!(!items.is_empty() && items.len() <= items_max);
                prop_assert!(items.len() == 1 || *bytes <= bytes_max);
            }
        }
    }
}
