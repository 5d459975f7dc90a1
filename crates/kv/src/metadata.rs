//! The bucket registry as the cluster shares it (design note 010 §2).
//!
//! Every change made on this node (a type created, activated or updated, a
//! bucket's props set or reset) is handed to a hook, which the cluster
//! layer uses to stamp the entry and push it to every member. What the
//! cluster's metadata holds is applied back with
//! [`BucketRegistry::apply_shared`], which replaces entries without calling
//! the hook, so applying is idempotent and never echoes.
//!
//! Entries travel as JSON: a type as `{"status": "created"|"active",
//! "patch": {...}}`, a bucket as its props patch (`None`: reset), named by
//! its type and its name in hex.

use std::sync::Arc;

use serde_json::Value;

use crate::types::{BucketRegistry, RegistryError, StoredBucket, StoredType, to_hex};

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

/// Told of each local change.
pub type MetadataHook = Arc<dyn Fn(MetadataChange) + Send + Sync>;

/// The shared metadata to apply: types by name, buckets by (type, hex
/// name) with their patch (`None`: reset).
#[derive(Clone, Debug, Default)]
pub struct SharedMetadata {
    pub types: Vec<(String, Value)>,
    pub buckets: Vec<(String, String, Option<Value>)>,
}

impl BucketRegistry {
    /// Sets the hook told of every local change (once).
    pub fn on_change(&self, hook: MetadataHook) {
        let _ = self.hook.set(hook);
    }

    /// Replaces the entries `shared` names with its versions; entries it
    /// does not name stay. Entries that do not parse are skipped with a
    /// warning (another node's newer format).
    pub fn apply_shared(&self, shared: &SharedMetadata) -> Result<(), RegistryError> {
        let types: Vec<(String, StoredType)> = shared
            .types
            .iter()
            .filter_map(|(name, entry)| Some((name.clone(), parsed(entry)?)))
            .collect();
        let buckets: Vec<(String, String, Option<crate::props::PropsPatch>)> = shared
            .buckets
            .iter()
            .filter_map(|(t, b, patch)| match patch {
                Some(p) => Some((t.clone(), b.clone(), Some(parsed(p)?))),
                None => Some((t.clone(), b.clone(), None)),
            })
            .collect();
        if self.holds(&types, &buckets) {
            return Ok(());
        }
        self.change(|stored| {
            for (name, t) in types {
                stored.types.insert(name, t);
            }
            for (bucket_type, bucket, patch) in buckets {
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
            Ok(())
        })
    }

    /// True if every entry is already as given (nothing to write).
    fn holds(
        &self,
        types: &[(String, StoredType)],
        buckets: &[(String, String, Option<crate::props::PropsPatch>)],
    ) -> bool {
        let stored = self.stored.read();
        let types_held = types.iter().all(|(n, t)| stored.types.get(n) == Some(t));
        let buckets_held = buckets.iter().all(|(t, b, patch)| {
            let held = stored
                .buckets
                .iter()
                .find(|s| s.bucket_type == *t && s.bucket == *b)
                .map(|s| &s.patch);
            held == patch.as_ref()
        });
        types_held && buckets_held
    }

    /// Tells the hook of type `name`'s entry as stored now.
    pub(crate) fn publish_type(&self, name: &str) {
        let Some(hook) = self.hook.get() else { return };
        let entry = self.stored.read().types.get(name).cloned();
        if let Some(entry) = entry.and_then(|e| serde_json::to_value(e).ok()) {
            hook(MetadataChange::Type {
                name: name.to_string(),
                entry,
            });
        }
    }

    /// Tells the hook of a bucket's patch as stored now.
    pub(crate) fn publish_bucket(&self, bucket_type: &str, bucket: &[u8]) {
        let Some(hook) = self.hook.get() else { return };
        let hex = to_hex(bucket);
        let patch = self
            .stored
            .read()
            .buckets
            .iter()
            .find(|b| b.bucket_type == bucket_type && b.bucket == hex)
            .map(|b| Value::Object(b.patch.clone()));
        hook(MetadataChange::Bucket {
            bucket_type: bucket_type.to_string(),
            bucket: hex,
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
