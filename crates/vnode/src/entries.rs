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
//! Invariants:
//! - a write tells the side store the key's whole set of entries after it
//!   ([`Entries::Changed`]'s `new`), never a diff, so telling it twice
//!   (replay, a resent handoff batch) leaves it the same;
//! - a write to a key that has entries neither before nor after leaves the
//!   side store alone ([`Entries::Untouched`]): what the side store holds
//!   agrees with the stored objects, so it holds nothing for that key.

use std::sync::Arc;

use eddy_object::RiakObject;
use eddy_side::{KeyState, SideStore, Term};
use eddy_storage::fold::KeyVisitor;
use eddy_storage::{Backend, IndexQuery, IndexSpec, StorageError};

use eddy_model::index::term::storage_term;

/// What a write does to its key's index entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Entries {
    /// Nothing: the key has entries neither before nor after (a segment
    /// record, an object without entries).
    #[default]
    Untouched,
    /// The key's entries go from `old` to `new` (each sorted, as stored).
    Changed { old: Vec<Term>, new: Vec<Term> },
    /// The key is removed, and whatever entries it had with it.
    Removed,
}

impl Entries {
    /// What writing `next` over `current` does to the key's entries.
    pub fn between(current: Option<&RiakObject>, next: &RiakObject) -> Entries {
        let old = current.map(terms_of).unwrap_or_default();
        let new = terms_of(next);
        match old.is_empty() && new.is_empty() {
            true => Entries::Untouched,
            false => Entries::Changed { old, new },
        }
    }

    /// Entries that say the key holds `next`'s, whatever it held: for
    /// the side store, which diffs them against its own record.
    pub fn holding(next: &RiakObject) -> Entries {
        Entries::Changed {
            old: Vec::new(),
            new: terms_of(next),
        }
    }

    /// The specs that make a backend's own index say this.
    pub fn specs(&self) -> Vec<IndexSpec> {
        let Entries::Changed { old, new } = self else {
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

    /// The entries the key holds after the write, if the write touches
    /// them.
    fn after(&self) -> Option<&[Term]> {
        match self {
            Entries::Untouched => None,
            Entries::Changed { new, .. } => Some(new),
            Entries::Removed => Some(&[]),
        }
    }
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
}

impl Stores {
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
    /// a key of `bucket`: none when the side store keeps them.
    pub fn backend_specs(&self, bucket: &[u8], entries: &Entries) -> Vec<IndexSpec> {
        match self.side_for(bucket) {
            Some(_) => Vec::new(),
            None => entries.specs(),
        }
    }

    /// Tells the side store what a write did to `(bucket, key)`'s entries,
    /// if it keeps them.
    pub fn set_side(
        &self,
        (bucket, key): (&[u8], &[u8]),
        entries: &Entries,
    ) -> Result<(), StorageError> {
        match (self.side_for(bucket), entries.after()) {
            (Some(side), Some(terms)) => side
                .set(&KeyState {
                    bucket,
                    key,
                    terms,
                    expiry: 0,
                })
                .map(drop),
            _ => Ok(()),
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
            0,
            f,
        )
    }

    /// Makes the backend and the side store durable.
    pub fn sync(&self) -> Result<(), StorageError> {
        self.backend.sync()?;
        match &self.side {
            Some(side) => side.persist(),
            None => Ok(()),
        }
    }

    /// Drops storage bucket `bucket`: its side entries first, so a crash
    /// between the two leaves objects a later sweep finds and drops again.
    pub fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        if let Some(side) = self.side_for(bucket) {
            side.drop_bucket(bucket)?;
        }
        self.backend.drop_bucket(bucket)
    }
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
        let specs = Entries::between(Some(&old), &new).specs();
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
        assert_eq!(Entries::between(None, &plain), Entries::Untouched);
        assert_eq!(Entries::between(Some(&plain), &plain), Entries::Untouched);
        let indexed = object(&[(b"f_bin", b"1")]);
        let dropped = Entries::between(Some(&indexed), &plain);
        assert_eq!(dropped.after(), Some(&[][..]));
    }

    #[test]
    fn int_terms_are_stored_in_numeric_order() {
        let new = object(&[(b"n_int", b"-9"), (b"n_int", b"10"), (b"n_int", b"9")]);
        let Entries::Changed { new: terms, .. } = Entries::between(None, &new) else {
            panic!("entries added");
        };
        let texts: Vec<Vec<u8>> = terms
            .iter()
            .map(|(f, t)| eddy_model::index::term::display_term(f, t))
            .collect();
        assert_eq!(texts, [b"-9".to_vec(), b"9".to_vec(), b"10".to_vec()]);
    }
}
