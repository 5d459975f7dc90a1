//! Where a vnode's secondary-index entries live, and what a write does to
//! them (design note 027).
//!
//! A persistent bucket's entries are in the vnode's side store
//! (`eddy_side`), when the vnode has one: an ordered keyspace on disk whose
//! memory is fjall's bounded cache, on every backend. A volatile bucket's
//! (the memory backend's) stay in its backend beside the objects, which
//! are in memory anyway and gone with them at a restart; so do every
//! bucket's in a vnode without a side store (a node without a data
//! directory). A backend that keeps no entries (bitcask) needs a side
//! store: it refuses a write that gives it index specs.
//!
//! A write to a bucket with a ttl stamps its object with an expiry (the
//! newest sibling's last write plus the ttl: [`expiry_of`]), which the
//! backend and the side store both get, so the object and its entries
//! vanish together, and the side store's expiry order tells the node's
//! sweep what to delete.
//!
//! Invariants:
//! - a write tells the side store the key's whole set of entries and its
//!   expiry after it ([`Entries::Changed`]'s `new` and `expiry`), never a
//!   diff, so telling it twice (replay, a resent handoff batch) leaves it
//!   the same;
//! - a write to a key of a bucket without a ttl that has entries neither
//!   before nor after leaves the side store alone ([`Entries::Untouched`]):
//!   what the side store holds agrees with the stored objects, so it holds
//!   nothing for that key.

use std::sync::Arc;

use eddy_object::RiakObject;
use eddy_side::{KeyState, SideStore, Term};
use eddy_storage::fold::KeyVisitor;
use eddy_storage::{
    Backend, Clock, IndexQuery, IndexSpec, StorageError, SystemClock, WriteOptions,
};

use eddy_model::index::term::storage_term;
use eddy_model::props::ttl::expiry_secs;

/// What a write does to its key's index entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Entries {
    /// Nothing: the key has entries neither before nor after (a segment
    /// record, an object without entries).
    #[default]
    Untouched,
    /// The key's entries go from `old` to `new` (each sorted, as stored),
    /// and it expires at `expiry` (seconds; 0: never).
    Changed {
        old: Vec<Term>,
        new: Vec<Term>,
        expiry: u64,
    },
    /// The key is removed, and whatever entries it had with it.
    Removed,
}

impl Entries {
    /// What writing `next` over `current` in a bucket with a ttl of
    /// `ttl_secs` (0: none) does to the key's entries and expiry.
    pub fn between(current: Option<&RiakObject>, next: &RiakObject, ttl_secs: u64) -> Entries {
        let old = current.map(terms_of).unwrap_or_default();
        let new = terms_of(next);
        let expiry = expiry_of(next, ttl_secs);
        match old.is_empty() && new.is_empty() && expiry == 0 {
            true => Entries::Untouched,
            false => Entries::Changed { old, new, expiry },
        }
    }

    /// Entries that say the key holds `next`'s, whatever it held: for
    /// the side store, which diffs them against its own record.
    pub fn holding(next: &RiakObject, ttl_secs: u64) -> Entries {
        Entries::Changed {
            old: Vec::new(),
            new: terms_of(next),
            expiry: expiry_of(next, ttl_secs),
        }
    }

    /// When the key expires after the write (0: never).
    pub fn expiry(&self) -> u64 {
        match self {
            Entries::Changed { expiry, .. } => *expiry,
            _ => 0,
        }
    }

    /// The specs that make a backend's own index say this.
    pub fn specs(&self) -> Vec<IndexSpec> {
        let Entries::Changed { old, new, .. } = self else {
            return Vec::new();
        };
        let removes = old
            .iter()
            .filter(|e| new.binary_search(e).is_err())
            .map(|(f, t)| IndexSpec::remove(f, t));
        let adds = new
            .iter()
            .filter(|e| old.binary_search(e).is_err())
            .map(|(f, t)| IndexSpec::add(f, t));
        removes.chain(adds).collect()
    }

    /// The entries and expiry the key holds after the write, if the write
    /// touches them.
    fn after(&self) -> Option<(&[Term], u64)> {
        match self {
            Entries::Untouched => None,
            Entries::Changed { new, expiry, .. } => Some((new, *expiry)),
            Entries::Removed => Some((&[], 0)),
        }
    }
}

/// When `o` expires in a bucket with a ttl of `ttl_secs`: its newest
/// sibling's last write plus the ttl ([`expiry_secs`]); 0 without a ttl.
pub fn expiry_of(o: &RiakObject, ttl_secs: u64) -> u64 {
    let last_write_us = o
        .siblings
        .iter()
        .map(|s| s.content.meta.last_modified_us)
        .max()
        .unwrap_or(0);
    expiry_secs(last_write_us, ttl_secs)
}

/// An object's index entries as stored (terms by
/// [`eddy_model::index::term::storage_term`]), sorted, no duplicates.
pub fn terms_of(o: &RiakObject) -> Vec<Term> {
    let mut entries: Vec<_> = o
        .index_entries()
        .into_iter()
        .map(|(f, t)| {
            let stored = storage_term(&f, &t);
            (f, stored)
        })
        .collect();
    entries.sort();
    entries.dedup();
    entries
}

/// A vnode's backend and side store, as its writes and index reads use
/// them (a fold takes a clone to its thread).
#[derive(Clone)]
pub struct Stores {
    pub backend: Arc<dyn Backend>,
    pub side: Option<Arc<SideStore>>,
    /// What "now" is for expiry: the backends' clock.
    pub clock: Arc<dyn Clock>,
}

impl Stores {
    /// `backend` and `side` on the system clock.
    pub fn new(backend: Arc<dyn Backend>, side: Option<Arc<SideStore>>) -> Stores {
        Stores {
            backend,
            side,
            clock: Arc::new(SystemClock),
        }
    }

    /// The side store that keeps `bucket`'s index entries, if one does
    /// (module docs); `None`: the backend keeps them.
    pub fn side_for(&self, bucket: &[u8]) -> Option<&SideStore> {
        let side = self.side.as_deref()?;
        self.backend
            .capabilities_for(bucket)
            .persistent
            .then_some(side)
    }

    /// The specs a backend is given with a write that does `entries` to
    /// a key of `bucket`: none when the side store keeps them. A write
    /// that changes no entries does not ask where they live (under multi,
    /// a lookup of the bucket's props).
    pub fn backend_specs(&self, bucket: &[u8], entries: &Entries) -> Vec<IndexSpec> {
        match entries {
            Entries::Changed { .. } if self.side_for(bucket).is_none() => entries.specs(),
            _ => Vec::new(),
        }
    }

    /// Tells the side store what a write did to `(bucket, key)`'s entries,
    /// if it keeps them.
    pub fn set_side(
        &self,
        (bucket, key): (&[u8], &[u8]),
        entries: &Entries,
    ) -> Result<(), StorageError> {
        let Some((terms, expiry)) = entries.after() else {
            return Ok(());
        };
        match self.side_for(bucket) {
            Some(side) => side
                .set(&KeyState {
                    bucket,
                    key,
                    terms,
                    expiry,
                })
                .map(drop),
            None => Ok(()),
        }
    }

    /// Calls `f` with the (term, key) of every entry `query` names, in
    /// (term, key) order, from wherever the bucket's entries live.
    pub fn index_range(
        &self,
        query: &IndexQuery,
        f: &mut KeyVisitor<'_>,
    ) -> Result<(), StorageError> {
        let Some(side) = self.side_for(&query.bucket) else {
            return self.backend.index_range(query, f);
        };
        let after = query
            .start_after
            .as_ref()
            .map(|(t, k)| (t.as_slice(), k.as_slice()));
        side.index_range(
            (&query.bucket, &query.field),
            (&query.start, &query.end),
            after,
            self.clock.now_secs(),
            f,
        )
    }

    /// Makes the backend, the side store and the change sequence durable,
    /// and with them the expiry sweep's processed mark (`eddy_side::swept`):
    /// read first, so what it covers is in the backend and the change
    /// log before they are synced; raised in memory, letting compaction
    /// drop what it covers, only once both are.
    pub fn sync(&self) -> Result<(), StorageError> {
        let processed = self.side.as_ref().map(|s| s.swept().processed());
        self.backend.sync()?;
        if let (Some(side), Some(upto)) = (&self.side, processed) {
            side.write_swept(upto)?;
        }
        self.sync_side()?;
        if let (Some(side), Some(upto)) = (&self.side, processed) {
            side.swept_durable(upto);
        }
        Ok(())
    }

    /// Makes the side store and the change sequence durable.
    pub fn sync_side(&self) -> Result<(), StorageError> {
        match &self.side {
            Some(side) => {
                side.persist()?;
                side.sequence().sync().map_err(|e| changes_error(side, e))
            }
            None => Ok(()),
        }
    }

    /// Records a change of `(bucket, key)` in the vnode's change sequence,
    /// if it keeps one (a node with a side store; `persistent`: the
    /// bucket's backend keeps data across restarts, whose changes alone
    /// are recorded). Caller holds the key's lock and has written it.
    pub fn record_change(
        &self,
        (bucket, key): (&[u8], &[u8]),
        deleted: bool,
        persistent: bool,
    ) -> Result<(), StorageError> {
        match &self.side {
            Some(side) if persistent => side
                .sequence()
                .record(deleted, bucket, key)
                .map(drop)
                .map_err(|e| changes_error(side, e)),
            _ => Ok(()),
        }
    }

    /// Records the change a write of `(bucket, key)` made ([`Stores::record_change`]),
    /// then, when the write landed an expiry (`expiry`, 0: none) the sweep
    /// has already claimed (its walk has passed it: `eddy_side::swept`),
    /// deletes the key as the sweep would and records that too. Caller
    /// holds the key's lock and has written it and its side entries.
    pub fn record_write(
        &self,
        (bucket, key): (&[u8], &[u8]),
        deleted: bool,
        persistent: bool,
        expiry: u64,
    ) -> Result<(), StorageError> {
        self.record_change((bucket, key), deleted, persistent)?;
        if expiry == 0 {
            return Ok(());
        }
        let Some(side) = self.side_for(bucket) else {
            return Ok(());
        };
        if expiry > side.swept().claimed() {
            return Ok(());
        }
        self.backend.delete(bucket, key, WriteOptions::NO_SYNC)?;
        self.record_change((bucket, key), true, true)?;
        side.swept().note_swept();
        Ok(())
    }

    /// Drops storage bucket `bucket`: its side entries first, so a crash
    /// between the two leaves objects a later sweep finds and drops again;
    /// then records the drop in the change sequence.
    pub fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        let side = self.side_for(bucket);
        if let Some(side) = side {
            side.drop_bucket(bucket)?;
        }
        self.backend.drop_bucket(bucket)?;
        self.record_change((bucket, &[]), true, side.is_some())
    }
}

/// A change sequence's failure, as a storage error naming its log.
pub(crate) fn changes_error(side: &SideStore, e: std::io::Error) -> StorageError {
    StorageError::io(side.sequence().dir(), e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::{Actor, Content, VersionVector, merge};

    fn object(terms: &[(&[u8], &[u8])]) -> RiakObject {
        let mut content = Content::new(b"v".to_vec());
        content.meta.indexes = terms
            .iter()
            .map(|(f, t)| (f.to_vec(), t.to_vec()))
            .collect();
        let mut o = RiakObject::default();
        merge::update(&mut o, &VersionVector::new(), Actor(1), content);
        o
    }

    #[test]
    fn specs_diff_the_entries() {
        let old = object(&[(b"f_bin", b"1"), (b"f_bin", b"2")]);
        let new = object(&[(b"f_bin", b"2"), (b"f_bin", b"3")]);
        let specs = Entries::between(Some(&old), &new, 0).specs();
        assert_eq!(
            specs,
            [
                IndexSpec::remove(b"f_bin", b"1"),
                IndexSpec::add(b"f_bin", b"3")
            ]
        );
    }

    #[test]
    fn objects_without_entries_leave_them_untouched() {
        let plain = object(&[]);
        assert_eq!(Entries::between(None, &plain, 0), Entries::Untouched);
        assert_eq!(
            Entries::between(Some(&plain), &plain, 0),
            Entries::Untouched
        );
        let indexed = object(&[(b"f_bin", b"1")]);
        let dropped = Entries::between(Some(&indexed), &plain, 0);
        assert_eq!(dropped.after(), Some((&[][..], 0)));
    }

    #[test]
    fn a_ttl_stamps_the_newest_sibling_s_last_write_plus_the_ttl() {
        let mut o = object(&[]);
        o.siblings[0].content.meta.last_modified_us = 1_000_000_900_000;
        let mut newer = o.siblings[0].clone();
        newer.content.meta.last_modified_us = 1_000_005_000_000;
        o.siblings.push(newer);
        assert_eq!(expiry_of(&o, 60), 1_000_065);
        assert_eq!(expiry_of(&o, 0), 0);
        let entries = Entries::between(None, &o, 60);
        assert_eq!(entries.after(), Some((&[][..], 1_000_065)));
    }

    #[test]
    fn int_terms_are_stored_in_numeric_order() {
        let new = object(&[(b"n_int", b"-9"), (b"n_int", b"10"), (b"n_int", b"9")]);
        let Entries::Changed { new: terms, .. } = Entries::between(None, &new, 0) else {
            panic!("entries added");
        };
        let texts: Vec<Vec<u8>> = terms
            .iter()
            .map(|(f, t)| eddy_model::index::term::display_term(f, t))
            .collect();
        assert_eq!(texts, [b"-9".to_vec(), b"9".to_vec(), b"10".to_vec()]);
    }
}
