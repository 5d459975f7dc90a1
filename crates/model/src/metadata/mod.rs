//! The bucket registry as the cluster shares it (design note 010 §2).
//!
//! Every change made on this node (a type created, activated or updated, a
//! bucket's props set or reset) is handed to a hook, which the cluster
//! layer uses to stamp the entry and push it to every member. Each change
//! handed over has a [`ChangeId`], rising in the order the hook sees the
//! changes, which the change's caller gets back to wait for its push
//! (eddy-kv's `MetadataPushes`). What the
//! cluster's metadata holds is applied back with
//! [`BucketRegistry::apply_shared`], which replaces entries without calling
//! the hook, so applying is idempotent and never echoes.
//!
//! Invariant: an entry changed here is not overwritten by the cluster's
//! version until the cluster has taken this change ([`BucketRegistry::
//! confirmed`]): until then the cluster's version is older than ours. A
//! version with the same content (the change itself, stamped) gives the
//! entry its stamp at once.
//!
//! Invariant: an entry the cluster stamped is replaced only by a version
//! whose stamp is not older ([`entries::EntryStamp`]), whoever applies it:
//! the cluster's metadata, or a put that carried the entries its
//! coordinator used ([`entries`]).
//!
//! Entries travel as JSON: a type as `{"status": "created"|"active",
//! "patch": {...}}`, a bucket as its props patch (`None`: reset), named by
//! its type and its name in hex.

pub mod drop;
pub mod entries;

use std::sync::Arc;

use serde_json::Value;

use crate::props::PropsPatch;
use crate::types::{BucketRegistry, RegistryError, Stored, StoredBucket, StoredType, to_hex};
use entries::EntryStamp;

/// One local change to share.
#[derive(Clone, Debug, PartialEq)]
pub enum MetadataChange {
    Type {
        name: String,
        entry: Value,
    },
    Bucket {
        bucket_type: String,
        /// The bucket's name in hex.
        bucket: String,
        /// Its props patch; `None` after a reset.
        patch: Option<Value>,
    },
}

/// Told of each local change, with its id.
pub type MetadataHook = Arc<dyn Fn(ChangeId, MetadataChange) + Send + Sync>;

/// Which local change this is, counted from 1 in the order the hook was
/// told of them; `ChangeId::NONE` for a change nothing shares (no hook).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChangeId(pub u64);

impl ChangeId {
    /// A change with nothing to wait for.
    pub const NONE: ChangeId = ChangeId(0);
}

/// The shared metadata to apply.
#[derive(Clone, Debug, Default)]
pub struct SharedMetadata {
    pub types: Vec<SharedType>,
    pub buckets: Vec<SharedBucket>,
}

/// A bucket type's shared entry.
#[derive(Clone, Debug)]
pub struct SharedType {
    pub name: String,
    /// `{"status": ..., "patch": ...}`.
    pub entry: Value,
    /// The stamp of its write; `None` for an unstamped entry, which
    /// replaces no stamped one.
    pub stamp: Option<EntryStamp>,
}

/// A bucket's shared entry.
#[derive(Clone, Debug)]
pub struct SharedBucket {
    pub bucket_type: String,
    /// The bucket's name in hex.
    pub bucket: String,
    /// Its props patch; `None` after a reset.
    pub patch: Option<Value>,
    pub stamp: Option<EntryStamp>,
}

/// An entry of the registry, as changes and the cluster name it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EntryName {
    Type(String),
    Bucket(String, String),
}

impl MetadataChange {
    /// The entry this change is to.
    pub fn entry(&self) -> EntryName {
        match self {
            MetadataChange::Type { name, .. } => EntryName::Type(name.clone()),
            MetadataChange::Bucket {
                bucket_type,
                bucket,
                ..
            } => EntryName::Bucket(bucket_type.clone(), bucket.clone()),
        }
    }
}

impl BucketRegistry {
    /// The cluster has taken one local change to `entry` (the hook's
    /// caller says so once per change it was handed).
    pub fn confirmed(&self, entry: &EntryName) {
        let mut unconfirmed = self.unconfirmed.lock();
        if let Some(n) = unconfirmed.get_mut(entry) {
            *n -= 1;
            if *n == 0 {
                unconfirmed.remove(entry);
            }
        }
    }

    /// Sets the hook told of every local change (once).
    pub fn on_change(&self, hook: MetadataHook) {
        let _ = self.hook.set(hook);
    }

    /// Replaces the entries `shared` names with its versions, each unless
    /// the entry held has a newer stamp or is an unconfirmed local change
    /// to other content; entries it does not name stay. Entries that do
    /// not parse are skipped with a warning (another node's newer format).
    pub fn apply_shared(&self, shared: &SharedMetadata) -> Result<(), RegistryError> {
        let types: Vec<ParsedType> = shared
            .types
            .iter()
            .filter_map(|t| Some((t.name.clone(), parsed(&t.entry)?, t.stamp)))
            .collect();
        let buckets: Vec<ParsedBucket> = shared
            .buckets
            .iter()
            .filter_map(|b| {
                let patch = match &b.patch {
                    Some(p) => Some(parsed(p)?),
                    None => None,
                };
                Some((b.bucket_type.clone(), b.bucket.clone(), patch, b.stamp))
            })
            .collect();
        if !self.has_news(&types, &buckets) {
            return Ok(());
        }
        self.change(|stored| {
            // Under the registry's write lock: a local change marks its
            // entry before it takes the lock, so it is either seen here
            // or made after this.
            let unconfirmed = self.unconfirmed.lock();
            let ours = |e: EntryName| unconfirmed.contains_key(&e);
            for (name, t, stamp) in types {
                if stamp < stored.stamps.of_type(&name) {
                    continue;
                }
                // A local change the cluster already holds (the same
                // content) takes the cluster's stamp; any other version
                // waits until the change is confirmed.
                let same = stored.types.get(&name) == Some(&t);
                if ours(EntryName::Type(name.clone())) && !same {
                    continue;
                }
                if let Some(stamp) = stamp {
                    stored.stamps.types.insert(name.clone(), stamp);
                }
                stored.types.insert(name, t);
            }
            for (bucket_type, bucket, patch, stamp) in buckets {
                if stamp < stored.stamps.of_bucket(&bucket_type, &bucket) {
                    continue;
                }
                let same = bucket_patch(stored, &bucket_type, &bucket) == patch.as_ref();
                let entry = EntryName::Bucket(bucket_type.clone(), bucket.clone());
                if ours(entry) && !same {
                    continue;
                }
                if let Some(stamp) = stamp {
                    stored.stamps.set_bucket(&bucket_type, &bucket, stamp);
                }
                set_bucket(stored, bucket_type, bucket, patch);
            }
            Ok(())
        })
    }

    /// True if some entry would change: its stamp is not older than the
    /// one held, and its content or stamp differs.
    fn has_news(&self, types: &[ParsedType], buckets: &[ParsedBucket]) -> bool {
        let stored = self.stored.read();
        let type_news = types.iter().any(|(n, t, stamp)| {
            let held = stored.stamps.of_type(n);
            *stamp >= held && (*stamp != held || stored.types.get(n) != Some(t))
        });
        let bucket_news = buckets.iter().any(|(t, b, patch, stamp)| {
            let held = stored.stamps.of_bucket(t, b);
            *stamp >= held && (*stamp != held || bucket_patch(&stored, t, b) != patch.as_ref())
        });
        type_news || bucket_news
    }

    /// Tells the hook of type `name`'s entry as stored now.
    pub(crate) fn publish_type(&self, name: &str) -> ChangeId {
        let entry = self.stored.read().types.get(name).cloned();
        match entry.and_then(|e| serde_json::to_value(e).ok()) {
            // Its entry was marked unconfirmed by `local_change`.
            Some(entry) => self.publish(MetadataChange::Type {
                name: name.to_string(),
                entry,
            }),
            None => ChangeId::NONE,
        }
    }

    /// Hands `change` to the hook with the next id; ids rise in the order
    /// the hook is called, so a push in that order is a push in id order.
    fn publish(&self, change: MetadataChange) -> ChangeId {
        let Some(hook) = self.hook.get() else {
            return ChangeId::NONE;
        };
        let mut last = self.last_published.lock();
        *last += 1;
        hook(ChangeId(*last), change);
        ChangeId(*last)
    }

    /// Makes a local change to `entry`: marked unconfirmed before the
    /// registry is written (so [`BucketRegistry::apply_shared`] never
    /// writes over it), unmarked again if the change is refused.
    pub(crate) fn local_change(
        &self,
        entry: EntryName,
        f: impl FnOnce(&mut crate::types::Stored) -> Result<(), RegistryError>,
    ) -> Result<(), RegistryError> {
        if self.hook.get().is_none() {
            return self.change(f);
        }
        *self.unconfirmed.lock().entry(entry.clone()).or_default() += 1;
        let changed = self.change(f);
        if changed.is_err() {
            self.confirmed(&entry);
        }
        changed
    }

    /// Tells the hook of a bucket's patch as stored now.
    pub(crate) fn publish_bucket(&self, bucket_type: &str, bucket: &[u8]) -> ChangeId {
        let hex = to_hex(bucket);
        let patch = self
            .stored
            .read()
            .buckets
            .iter()
            .find(|b| b.bucket_type == bucket_type && b.bucket == hex)
            .map(|b| Value::Object(b.patch.to_json()));
        let change = MetadataChange::Bucket {
            bucket_type: bucket_type.to_string(),
            bucket: hex,
            patch,
        };
        self.publish(change)
    }
}

/// A type's entry as applied: name, entry, stamp.
type ParsedType = (String, StoredType, Option<EntryStamp>);
/// A bucket's entry as applied: type, hex name, patch (`None`: reset),
/// stamp.
type ParsedBucket = (String, String, Option<PropsPatch>, Option<EntryStamp>);

/// A bucket's patch in `stored`, if it has one.
fn bucket_patch<'a>(stored: &'a Stored, bucket_type: &str, hex: &str) -> Option<&'a PropsPatch> {
    stored
        .buckets
        .iter()
        .find(|b| b.bucket_type == bucket_type && b.bucket == hex)
        .map(|b| &b.patch)
}

/// Sets (or with `None`, removes) a bucket's patch.
fn set_bucket(stored: &mut Stored, bucket_type: String, bucket: String, patch: Option<PropsPatch>) {
    stored
        .buckets
        .retain(|b| !(b.bucket_type == bucket_type && b.bucket == bucket));
    if let Some(patch) = patch {
        stored.buckets.push(StoredBucket {
            bucket_type,
            bucket,
            patch,
        });
    }
}

fn parsed<T: serde::de::DeserializeOwned>(value: &Value) -> Option<T> {
    match serde_json::from_value(value.clone()) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!("shared bucket metadata skipped: {e}");
            None
        }
    }
}
