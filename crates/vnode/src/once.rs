//! Puts into `write_once` buckets (Riak 2.1's write-once buckets): entries
//! are meant to be written exactly once, so a vnode writes a put without
//! reading the stored version first, and whatever versions meet (a key
//! written twice by mistake, concurrently or across a partition) resolve
//! to one, chosen the same way on every vnode and every read: the sibling
//! whose content hashes highest (Riak: "random write wins", repeatable).
//!
//! Invariants:
//! - a write-once put never reuses a dot: its version is a fresh actor's
//!   first event (no read, so no counter to continue);
//! - index entries stay exact when the new version has entries (the stored
//!   version is read for its entries then); a version without entries is
//!   written blind, so the entries of a version it replaces by mistake
//!   remain: a write-once key is meant to be written once.

use eddy_object::{Actor, Content, RiakObject, VersionVector, codec, merge};

use super::msg::{PutKind, StorageKey};
use super::reply::LocalHint;
use super::{Records, Vnode, Written};
use eddy_model::error::KvError;
use eddy_model::error::Signal;

impl Vnode {
    /// A put into a write-once bucket. Caller holds the key's lock.
    pub(super) fn put_once(
        &self,
        key: &StorageKey,
        kind: PutKind,
        hint: LocalHint,
        records: Records,
        ttl_secs: u64,
    ) -> Result<Written, KvError> {
        let (incoming, sent) = match kind {
            PutKind::Coordinate(c) => (first_version(c.content), None),
            PutKind::Replicate { encoded } => (codec::decode(&encoded)?, Some(encoded)),
            // Write-once buckets hold no data type values: never a delta.
            PutKind::DtDelta(_) => return Err(KvError::Signal(Signal::Behind)),
        };
        let current = match incoming.index_entries().is_empty() {
            true => None,
            false => self.read(key)?,
        };
        let next = match &current {
            Some(stored) => {
                let start = std::time::Instant::now();
                let merged = one_version(merge::merge(stored, &incoming));
                self.figures.merged(None, start);
                merged
            }
            None => one_version(incoming.clone()),
        };
        let sent = sent
            .filter(|_| next == incoming)
            .map(|bytes| (bytes, hint.logged_at));
        // A write-once bucket holds no data type values, so no segments.
        let layout = super::Layout {
            shape: super::Shape::Whole,
            old_root: None,
            ttl_secs,
        };
        self.store(key, current.as_ref(), &next, sent, records, layout)
    }
}

/// A client's write as a write-once version: one sibling, its dot a fresh
/// actor's first event.
fn first_version(content: Content) -> RiakObject {
    let mut object = RiakObject::default();
    let actor = Actor(rand::random());
    merge::update(&mut object, &VersionVector::new(), actor, content);
    object
}

/// Keeps the one sibling every vnode and reader would keep: the one whose
/// content hashes highest. The version vector stays the merge's.
pub fn one_version(mut object: RiakObject) -> RiakObject {
    if object.siblings.len() > 1
        && let Some(keep) = object
            .siblings
            .iter()
            .max_by_key(|s| content_hash(&s.content))
            .cloned()
    {
        object.siblings = vec![keep];
    }
    object
}

fn content_hash(content: &Content) -> (u64, u64) {
    let value = eddy_ring::key_hash(b"write_once", &content.value, &content.meta.vtag);
    (value, content.meta.last_modified_us)
}
