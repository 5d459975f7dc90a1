//! The bucket registry as the cluster shares it (design notes 010 §2 and
//! 026).
//!
//! The one store of bucket metadata is the cluster's registers
//! ([`register`]): a type's [`TypeEntry`], a bucket's props patch, each
//! with the [`register::Stamp`] of its write. A change made on this node
//! is handed to the registry's [`MetadataStore`] as a [`MetadataChange`]
//! (the entry's new content, built over what is served here); the store
//! stamps and saves it, applies the registers back here, and shares them.
//! Each change handed over has a [`ChangeId`], rising in the order the
//! store takes them, which the change's caller gets back to wait for it
//! to reach the other members (eddy-kv's `MetadataPushes`).
//!
//! What the registers hold is applied with
//! [`BucketRegistry::apply_registers`], which replaces entries without
//! writing anything, so applying is idempotent and never echoes.
//!
//! Invariant: an entry held with a stamp is replaced only by a version
//! whose stamp is not older ([`register::StampKey`]), whoever applies it:
//! the registers, or a put that carried the entries its coordinator used
//! ([`entries`]).

pub mod drop;
pub mod entries;
pub mod memory;
pub mod register;

use crate::props::PropsPatch;
use crate::types::{BucketRegistry, RegistryError, Stored, StoredBucket, TypeEntry};
use register::{BucketMetadata, StampKey};

/// One local change to write: an entry's new content.
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataChange {
    Type {
        name: String,
        entry: TypeEntry,
    },
    Bucket {
        bucket_type: String,
        /// The bucket's name in hex.
        bucket: String,
        /// Its props patch; `None`: a reset.
        patch: Option<PropsPatch>,
    },
}

/// Where a registry's local changes are written: the cluster's registers.
pub trait MetadataStore: Send + Sync {
    /// Stamps and saves `change`, and applies the registers to the
    /// registry ([`BucketRegistry::apply_registers`]) before it returns;
    /// shares the change with the other members after. Returns the id a
    /// request waits on for that. Blocking: never call it on an async
    /// runtime's worker thread.
    fn write(&self, change: MetadataChange) -> Result<ChangeId, RegistryError>;
}

/// Which local change this is, counted from 1 in the order the store took
/// them; `ChangeId::NONE` for a change nothing shares (no store).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChangeId(pub u64);

impl ChangeId {
    /// A change with nothing to wait for.
    pub const NONE: ChangeId = ChangeId(0);
}

/// Entries to apply, each with the key of its stamp.
#[derive(Clone, Debug, Default)]
pub struct SharedMetadata {
    pub types: Vec<SharedType>,
    pub buckets: Vec<SharedBucket>,
}

/// A bucket type's entry.
#[derive(Clone, Debug)]
pub struct SharedType {
    pub name: String,
    pub entry: TypeEntry,
    /// Its stamp's key; `None` for an unstamped entry, which replaces no
    /// stamped one.
    pub stamp: Option<StampKey>,
}

/// A bucket's entry.
#[derive(Clone, Debug)]
pub struct SharedBucket {
    pub bucket_type: String,
    /// The bucket's name in hex.
    pub bucket: String,
    /// Its props patch; `None` after a reset.
    pub patch: Option<PropsPatch>,
    pub stamp: Option<StampKey>,
}

impl SharedMetadata {
    /// The entries of the cluster's registers (a type's tombstone, which
    /// nothing writes, is skipped).
    pub fn of(metadata: &BucketMetadata) -> SharedMetadata {
        let types = metadata
            .bucket_types
            .iter()
            .filter(|(_, r)| !r.deleted)
            .map(|(name, r)| SharedType {
                name: name.clone(),
                entry: r.props.clone(),
                stamp: Some(r.stamp.key()),
            });
        let buckets = metadata.bucket_props.iter().flat_map(|(bucket_type, map)| {
            map.iter().map(move |(bucket, r)| SharedBucket {
                bucket_type: bucket_type.clone(),
                bucket: bucket.clone(),
                patch: (!r.deleted).then(|| r.props.clone()),
                stamp: Some(r.stamp.key()),
            })
        });
        SharedMetadata {
            types: types.collect(),
            buckets: buckets.collect(),
        }
    }
}

impl BucketRegistry {
    /// Applies the cluster's registers.
    pub fn apply_registers(&self, metadata: &BucketMetadata) -> Result<(), RegistryError> {
        self.apply_shared(&SharedMetadata::of(metadata))
    }

    /// Replaces the entries `shared` names with its versions, each unless
    /// the entry held has a newer stamp; entries it does not name stay.
    pub fn apply_shared(&self, shared: &SharedMetadata) -> Result<(), RegistryError> {
        if !self.has_news(shared) {
            return Ok(());
        }
        self.change(|stored| {
            for t in &shared.types {
                if t.stamp < stored.stamps.of_type(&t.name) {
                    continue;
                }
                if let Some(stamp) = t.stamp {
                    stored.stamps.types.insert(t.name.clone(), stamp);
                }
                stored.types.insert(t.name.clone(), t.entry.clone());
            }
            for b in &shared.buckets {
                if b.stamp < stored.stamps.of_bucket(&b.bucket_type, &b.bucket) {
                    continue;
                }
                if let Some(stamp) = b.stamp {
                    stored.stamps.set_bucket(&b.bucket_type, &b.bucket, stamp);
                }
                set_bucket(stored, &b.bucket_type, &b.bucket, b.patch.clone());
            }
            Ok(())
        })
    }

    /// True if some entry would change: its stamp is not older than the
    /// one held, and its content or stamp differs.
    fn has_news(&self, shared: &SharedMetadata) -> bool {
        let stored = self.stored.read();
        let type_news = shared.types.iter().any(|t| {
            let held = stored.stamps.of_type(&t.name);
            t.stamp >= held && (t.stamp != held || stored.types.get(&t.name) != Some(&t.entry))
        });
        let bucket_news = shared.buckets.iter().any(|b| {
            let held = stored.stamps.of_bucket(&b.bucket_type, &b.bucket);
            let patch = bucket_patch(&stored, &b.bucket_type, &b.bucket);
            b.stamp >= held && (b.stamp != held || patch != b.patch.as_ref())
        });
        type_news || bucket_news
    }
}

/// Applies a local change to `stored`, keeping the entry's stamp (a
/// registry without a store).
pub(crate) fn apply_change(stored: &mut Stored, change: MetadataChange) {
    match change {
        MetadataChange::Type { name, entry } => {
            stored.types.insert(name, entry);
        }
        MetadataChange::Bucket {
            bucket_type,
            bucket,
            patch,
        } => set_bucket(stored, &bucket_type, &bucket, patch),
    }
}

/// A bucket's patch in `stored`, if it has one.
pub(crate) fn bucket_patch<'a>(
    stored: &'a Stored,
    bucket_type: &str,
    hex: &str,
) -> Option<&'a PropsPatch> {
    stored
        .buckets
        .iter()
        .find(|b| b.bucket_type == bucket_type && b.bucket == hex)
        .map(|b| &b.patch)
}

/// Sets (or with `None`, removes) a bucket's patch.
fn set_bucket(stored: &mut Stored, bucket_type: &str, bucket: &str, patch: Option<PropsPatch>) {
    stored
        .buckets
        .retain(|b| !(b.bucket_type == bucket_type && b.bucket == bucket));
    if let Some(patch) = patch {
        stored.buckets.push(StoredBucket {
            bucket_type: bucket_type.to_string(),
            bucket: bucket.to_string(),
            patch,
        });
    }
}
