//! Where the expiry sweep stands in a side store, and the compaction
//! filter that drops what it has swept (design note 027, "Per-bucket
//! TTL").
//!
//! The sweep never writes to the side store: it walks the expiry order
//! forward and deletes each due key from the backend and records its
//! change. The key record, index entries and expiry entry of a swept key
//! stay until fjall compacts the tables holding them, when
//! [`SweptFilter`] drops every entry whose expiry is at or before the
//! store's durable mark. Three marks, in seconds of expiry, each at most
//! the one before:
//!
//! - **claimed**: the sweep has taken every expiry up to it. A write that
//!   lands an expiry at or before it (a copy of an old object: replica,
//!   handoff, repair, replay) deletes that key itself, as the sweep would,
//!   because the sweep's walk has passed that place in the order.
//! - **processed**: every key expiring at or before it was deleted and its
//!   change recorded, not yet durably.
//! - **durable**: the same, made durable by a checkpoint (backend and
//!   change log synced); kept in the meta key `mswept`. Only entries this
//!   old are dropped by compaction, so a crash never loses an expiry's
//!   deletion or change: what is not durable is still in the order, and
//!   the sweep after a restart starts just past this mark.
//!
//! Invariant: an entry is dropped only when its expiry is at or before
//! the durable mark. The filter replaces it with a tombstone (never drops
//! it outright), so an older version of the same key in a deeper level is
//! never uncovered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use fjall::compaction::filter::{
    CompactionFilter, CompactionFilterResult, Context, Factory, ItemAccessor, Verdict,
};

use crate::layout::{self, EXPIRY, INDEX, KEY};

/// A side store's sweep marks (module docs).
#[derive(Debug, Default)]
pub struct Swept {
    claimed: AtomicU64,
    processed: AtomicU64,
    durable: Arc<AtomicU64>,
    /// Whether a key was swept since the durable mark was last written.
    unwritten: AtomicBool,
}

impl Swept {
    /// Marks of a store whose durable mark is `durable`.
    pub(crate) fn starting_at(durable: u64) -> Swept {
        Swept {
            claimed: AtomicU64::new(durable),
            processed: AtomicU64::new(durable),
            durable: Arc::new(AtomicU64::new(durable)),
            unwritten: AtomicBool::new(false),
        }
    }

    /// Takes every expiry up to `upto` for the sweep. Sequentially
    /// consistent with [`Swept::claimed`]: a write that put its expiry
    /// entry before reading the claim either sees this claim or has its
    /// entry seen by the walk that follows it.
    pub fn claim(&self, upto: u64) {
        self.claimed.fetch_max(upto, Ordering::SeqCst);
    }

    /// The claimed mark (read after the write's expiry entry is in).
    pub fn claimed(&self) -> u64 {
        self.claimed.load(Ordering::SeqCst)
    }

    /// Notes that every key expiring at or before `upto` was deleted and
    /// its change recorded.
    pub fn processed_to(&self, upto: u64) {
        self.processed.fetch_max(upto, Ordering::AcqRel);
    }

    /// Notes that a key was swept (deleted by the sweep, or by a write
    /// behind it): the next checkpoint writes the durable mark.
    pub fn note_swept(&self) {
        self.unwritten.store(true, Ordering::Release);
    }

    /// Whether a key was swept since the last call; clears it.
    pub(crate) fn take_unwritten(&self) -> bool {
        self.unwritten.swap(false, Ordering::AcqRel)
    }

    /// Undoes [`Swept::take_unwritten`] (the write failed).
    pub(crate) fn keep_unwritten(&self) {
        self.note_swept();
    }

    /// The processed mark.
    pub fn processed(&self) -> u64 {
        self.processed.load(Ordering::Acquire)
    }

    /// The durable mark.
    pub fn durable(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Raises the durable mark to `upto` (what a checkpoint made durable).
    pub(crate) fn durable_to(&self, upto: u64) {
        self.durable.fetch_max(upto, Ordering::AcqRel);
    }
}

/// The durable marks of the database's open side stores, by keyspace
/// name, for their compaction filters.
#[derive(Clone, Default)]
pub(crate) struct Marks(Arc<RwLock<HashMap<String, Arc<AtomicU64>>>>);

impl Marks {
    /// Makes `name`'s filter read `swept`'s durable mark.
    pub(crate) fn register(&self, name: &str, swept: &Swept) {
        let mut marks = self.0.write().unwrap_or_else(|e| e.into_inner());
        marks.insert(name.to_string(), swept.durable.clone());
    }

    /// Forgets `name` (its keyspace was deleted).
    pub(crate) fn forget(&self, name: &str) {
        (self.0.write().unwrap_or_else(|e| e.into_inner())).remove(name);
    }

    /// The filter factory for keyspace `name`.
    pub(crate) fn factory(&self, name: &str) -> Arc<dyn Factory> {
        Arc::new(SweptFilters {
            name: name.to_string(),
            marks: self.clone(),
        })
    }

    fn durable(&self, name: &str) -> u64 {
        let marks = self.0.read().unwrap_or_else(|e| e.into_inner());
        marks.get(name).map_or(0, |m| m.load(Ordering::Acquire))
    }
}

/// Makes a side keyspace's compaction filters.
struct SweptFilters {
    name: String,
    marks: Marks,
}

impl Factory for SweptFilters {
    fn name(&self) -> &str {
        "eddy-swept"
    }

    fn make_filter(&self, _: &Context) -> Box<dyn CompactionFilter> {
        Box::new(SweptFilter {
            durable: self.marks.durable(&self.name),
        })
    }
}

/// Drops the entries of keys whose expiry is at or before `durable`.
struct SweptFilter {
    durable: u64,
}

impl CompactionFilter for SweptFilter {
    fn filter_item(&mut self, item: ItemAccessor<'_>, _: &Context) -> CompactionFilterResult {
        if self.durable == 0 {
            return Ok(Verdict::Keep);
        }
        let key = item.key();
        let expiry = match key.first() {
            Some(&EXPIRY) => layout::split_expiry_key(key).map(|(at, ..)| at),
            Some(&INDEX) => layout::decode_expiry(&item.value()?),
            Some(&KEY) => layout::record_expiry(&item.value()?),
            _ => None,
        };
        Ok(match expiry {
            Some(at) if swept(at, self.durable) => Verdict::Remove,
            _ => Verdict::Keep,
        })
    }
}

/// Whether an entry expiring at `expiry` (0: never) is swept by `durable`.
pub(crate) fn swept(expiry: u64, durable: u64) -> bool {
    expiry != 0 && expiry <= durable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_only_rise() {
        let s = Swept::starting_at(10);
        s.claim(5);
        assert_eq!(s.claimed(), 10);
        s.claim(20);
        s.processed_to(15);
        s.durable_to(12);
        s.durable_to(11);
        assert_eq!((s.claimed(), s.processed(), s.durable()), (20, 15, 12));
    }

    #[test]
    fn only_what_expired_by_the_durable_mark_is_swept() {
        assert!(!swept(0, 100), "no expiry");
        assert!(swept(100, 100));
        assert!(!swept(101, 100));
    }
}
