//! The memory backend: an ordered map per partition, with TTL and a memory cap.
//!
//! Invariants: `index` holds exactly the entries listed in the `terms` of each
//! stored object; with a memory cap, `by_age` holds one entry per object,
//! keyed by the sequence number of its last write (without one it stays
//! empty: only eviction reads it, and keeping it cost a third of a put);
//! `used_bytes` is the sum of [`entry_cost`] over stored objects. When `used_bytes` would exceed `max_memory_bytes`, the
//! least recently written objects are evicted until it fits.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::clock::{Clock, SystemClock, effective_expiry, is_expired};
use crate::fold::{KeyVisitor, ObjectVisitor};
use crate::index::IndexSpec;
use crate::{
    Backend, BackendStatus, BatchOp, Capabilities, FoldControl, FoldOptions, IndexQuery,
    StorageError, WriteBatch, WriteOptions, limits,
};

/// Settings of one memory backend instance.
#[derive(Clone, Debug)]
pub struct MemoryConfig {
    /// Evict oldest-written objects beyond this many bytes; `None` = no cap.
    pub max_memory_bytes: Option<u64>,
    /// Instance-wide time to live in seconds (0 = none).
    pub expiry_secs: u64,
    /// Time source for expiry.
    pub clock: Arc<dyn Clock>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            max_memory_bytes: None,
            expiry_secs: 0,
            clock: Arc::new(SystemClock),
        }
    }
}

type BKey = (Vec<u8>, Vec<u8>);
type IndexEntry = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>); // bucket, field, term, key

struct Object {
    value: Vec<u8>,
    expires_at_secs: Option<u64>,
    terms: BTreeSet<(Vec<u8>, Vec<u8>)>,
    seq: u64,
}

#[derive(Default)]
struct Inner {
    objects: BTreeMap<BKey, Object>,
    index: BTreeSet<IndexEntry>,
    by_age: BTreeMap<u64, BKey>,
    /// Whether `by_age` is kept (the instance has a memory cap).
    track_age: bool,
    next_seq: u64,
    used_bytes: u64,
    closed: bool,
}

/// Bytes one object is charged against the memory cap: its data plus a fixed
/// allowance for map nodes.
fn entry_cost(bkey: &BKey, obj: &Object) -> u64 {
    const OVERHEAD_BYTES: usize = 96;
    let terms: usize = obj
        .terms
        .iter()
        .map(|(f, t)| 2 * (f.len() + t.len()) + 64)
        .sum();
    (bkey.0.len() + bkey.1.len() + obj.value.len() + terms + OVERHEAD_BYTES) as u64
}

impl Inner {
    fn remove(&mut self, bkey: &BKey) -> Option<Object> {
        let obj = self.objects.remove(bkey)?;
        self.used_bytes -= entry_cost(bkey, &obj);
        if self.track_age {
            self.by_age.remove(&obj.seq);
        }
        for (field, term) in &obj.terms {
            let entry = (bkey.0.clone(), field.clone(), term.clone(), bkey.1.clone());
            self.index.remove(&entry);
        }
        Some(obj)
    }

    fn put(&mut self, op: BatchOp, now_secs: u64, expiry_secs: u64) {
        let BatchOp::Put {
            bucket,
            key,
            value,
            indexes,
            expires_at_secs,
        } = op
        else {
            unreachable!("put called with a delete")
        };
        let bkey = (bucket, key);
        let mut terms = match self.remove(&bkey) {
            Some(old) if !is_expired(old.expires_at_secs, now_secs) => old.terms,
            _ => BTreeSet::new(),
        };
        apply_specs(&mut terms, indexes);
        for (field, term) in &terms {
            let entry = (bkey.0.clone(), field.clone(), term.clone(), bkey.1.clone());
            self.index.insert(entry);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let obj = Object {
            value,
            expires_at_secs: effective_expiry(now_secs, expires_at_secs, expiry_secs),
            terms,
            seq,
        };
        self.used_bytes += entry_cost(&bkey, &obj);
        if self.track_age {
            self.by_age.insert(seq, bkey.clone());
        }
        self.objects.insert(bkey, obj);
    }

    fn evict_to(&mut self, max_bytes: u64) {
        while self.used_bytes > max_bytes {
            let Some((_, bkey)) = self.by_age.pop_first() else {
                return;
            };
            self.remove(&bkey);
        }
    }

    fn live(&self, bkey: &BKey, now_secs: u64) -> Option<&Object> {
        self.objects
            .get(bkey)
            .filter(|o| !is_expired(o.expires_at_secs, now_secs))
    }
}

/// Applies remove specs, then add specs, to a key's `(field, term)` set.
pub fn apply_specs(terms: &mut BTreeSet<(Vec<u8>, Vec<u8>)>, specs: Vec<IndexSpec>) {
    let (adds, removes): (Vec<_>, Vec<_>) = specs
        .into_iter()
        .partition(|s| matches!(s, IndexSpec::Add { .. }));
    for spec in removes.into_iter().chain(adds) {
        match spec {
            IndexSpec::Remove { field, term } => terms.remove(&(field, term)),
            IndexSpec::Add { field, term } => terms.insert((field, term)),
        };
    }
}

/// An ordered, in-memory backend.
pub struct MemoryBackend {
    config: MemoryConfig,
    inner: RwLock<Inner>,
}

impl MemoryBackend {
    /// A new, empty instance.
    pub fn new(config: MemoryConfig) -> Self {
        let inner = Inner {
            track_age: config.max_memory_bytes.is_some(),
            ..Inner::default()
        };
        MemoryBackend {
            config,
            inner: RwLock::new(inner),
        }
    }

    fn now(&self) -> u64 {
        self.config.clock.now_secs()
    }

    fn check_open(inner: &Inner) -> Result<(), StorageError> {
        if inner.closed {
            return Err(StorageError::Closed);
        }
        Ok(())
    }

    /// Live `(bucket, key)`s selected by `opts`, in order.
    fn selected(&self, inner: &Inner, opts: &FoldOptions) -> Vec<BKey> {
        let now = self.now();
        let start = match &opts.bucket {
            Some(b) => Bound::Included((b.clone(), opts.key_start.clone().unwrap_or_default())),
            None => Bound::Unbounded,
        };
        inner
            .objects
            .range((start, Bound::Unbounded))
            .take_while(|(bk, _)| opts.bucket.as_ref().is_none_or(|b| &bk.0 == b))
            .filter(|(bk, o)| opts.admits(&bk.0, &bk.1) && !is_expired(o.expires_at_secs, now))
            .map(|(bk, _)| bk.clone())
            .collect()
    }
}

impl Backend for MemoryBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            ordered: true,
            indexes: true,
            ttl: true,
            kv_separation: false,
            persistent: false,
            expires: self.config.expiry_secs > 0 || self.config.max_memory_bytes.is_some(),
        }
    }

    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        let inner = self.inner.read();
        Self::check_open(&inner)?;
        let bkey = (bucket.to_vec(), key.to_vec());
        Ok(inner.live(&bkey, self.now()).map(|o| o.value.clone()))
    }

    fn write(&self, batch: WriteBatch, _opts: WriteOptions) -> Result<(), StorageError> {
        batch.ops.iter().try_for_each(limits::check_op)?;
        let now = self.now();
        let mut inner = self.inner.write();
        Self::check_open(&inner)?;
        for op in batch.ops {
            match op {
                BatchOp::Delete { bucket, key } => {
                    inner.remove(&(bucket, key));
                }
                put => inner.put(put, now, self.config.expiry_secs),
            }
        }
        if let Some(max) = self.config.max_memory_bytes {
            inner.evict_to(max);
        }
        Ok(())
    }

    fn fold_keys(&self, opts: &FoldOptions, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.fold_objects(opts, &mut |b, k, _| f(b, k))
    }

    fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        // Snapshot the selection so callbacks run without holding the lock.
        let items: Vec<(BKey, Vec<u8>)> = {
            let inner = self.inner.read();
            Self::check_open(&inner)?;
            let keys = self.selected(&inner, opts);
            keys.into_iter()
                .map(|bk| {
                    let value = inner.objects[&bk].value.clone();
                    (bk, value)
                })
                .collect()
        };
        for ((bucket, key), value) in items {
            if f(&bucket, &key, &value) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    fn index_range(&self, query: &IndexQuery, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        let now = self.now();
        let hits: Vec<(Vec<u8>, Vec<u8>)> = {
            let inner = self.inner.read();
            Self::check_open(&inner)?;
            let from = (
                query.bucket.clone(),
                query.field.clone(),
                query.start.clone(),
                Vec::new(),
            );
            inner
                .index
                .range(from..)
                .take_while(|(b, fld, t, _)| {
                    *b == query.bucket && *fld == query.field && *t <= query.end
                })
                .filter(|(b, _, t, k)| {
                    query.admits(t, k) && inner.live(&(b.clone(), k.clone()), now).is_some()
                })
                .map(|(_, _, t, k)| (t.clone(), k.clone()))
                .collect()
        };
        for (term, key) in hits {
            if f(&term, &key) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        let mut inner = self.inner.write();
        Self::check_open(&inner)?;
        let keys: Vec<BKey> = inner
            .objects
            .range((bucket.to_vec(), Vec::new())..)
            .take_while(|(bk, _)| bk.0 == bucket)
            .map(|(bk, _)| bk.clone())
            .collect();
        for bk in keys {
            inner.remove(&bk);
        }
        Ok(())
    }

    fn is_empty(&self) -> Result<bool, StorageError> {
        let inner = self.inner.read();
        Self::check_open(&inner)?;
        let now = self.now();
        Ok(!inner
            .objects
            .values()
            .any(|o| !is_expired(o.expires_at_secs, now)))
    }

    fn sync(&self) -> Result<(), StorageError> {
        Self::check_open(&self.inner.read())
    }

    fn status(&self) -> Result<BackendStatus, StorageError> {
        let inner = self.inner.read();
        Self::check_open(&inner)?;
        Ok(BackendStatus {
            keys: inner.objects.len() as u64,
            live_bytes: inner.used_bytes,
            dead_bytes: 0,
            files: 0,
            extra: vec![(
                "max_memory_bytes".into(),
                format!("{:?}", self.config.max_memory_bytes),
            )],
        })
    }

    fn close(&self) -> Result<(), StorageError> {
        let mut inner = self.inner.write();
        *inner = Inner {
            closed: true,
            ..Inner::default()
        };
        Ok(())
    }

    /// Nothing outlives the process, so dropping the data is already
    /// crash-atomic: a crash at any point leaves no data.
    fn destroy(self: Box<Self>) -> Result<(), StorageError> {
        self.close()
    }
}
