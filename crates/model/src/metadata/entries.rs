//! Which shared entries a bucket's props were resolved from, so a put can
//! carry them (design note 010 §2, "bucket props never lag a write").
//!
//! A bucket's props come from two entries: its type's and its own. Each
//! entry the cluster shared has the stamp of its write ([`EntryStamp`]); a
//! put's coordinator sends the stamps and the entries' JSON
//! ([`PropsEntries`]) with every put to another node. A replica applies
//! the entries that are newer than its own (through
//! [`BucketRegistry::apply_shared`], the path the cluster's metadata takes,
//! so an entry is never replaced by an older one) and refuses the put with
//! its own entries when one of them is newer than the coordinator's.
//!
//! Invariants: an entry is present in [`PropsEntries`] exactly when it has
//! a stamp; a type entry's JSON is what the registry shares for a type
//! (`{"status", "patch"}`), a bucket entry's is its patch or `null` (a
//! reset). An entry changed on this node and not yet stamped by the
//! cluster keeps the stamp of the version before it.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{SharedBucket, SharedMetadata, SharedType};
use crate::types::{BucketRegistry, DEFAULT_TYPE, RegistryError, Stored, to_hex};

/// When and by whom a shared entry was written, as the cluster stamps it:
/// ordered by time, then counter, then the writer's key (the cluster
/// orders its stamps the same way, so both agree on which entry is newer).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct EntryStamp {
    /// Wall-clock milliseconds of the write (or the newest seen).
    pub time_ms: u64,
    /// Orders writes within one millisecond.
    pub counter: u32,
    /// A fixed 64-bit key of the writing node's name.
    pub writer: u64,
}

/// The stamps of a bucket's two entries; `None`: the entry has none (the
/// `default` type, a bucket without props of its own, or an entry never
/// shared). `None` is older than any stamp.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PropsVersion {
    pub bucket_type: Option<EntryStamp>,
    pub bucket: Option<EntryStamp>,
}

impl PropsVersion {
    /// Whether either entry of `self` is newer than the same entry of
    /// `other`.
    pub fn has_newer_than(&self, other: &PropsVersion) -> bool {
        self.bucket_type > other.bucket_type || self.bucket > other.bucket
    }
}

/// One entry as a put carries it: its stamp and its JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StampedEntry {
    pub stamp: EntryStamp,
    pub json: Bytes,
}

/// A bucket's stamped entries, as a put carries them and a replica
/// refuses with them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PropsEntries {
    pub bucket_type: Option<StampedEntry>,
    pub bucket: Option<StampedEntry>,
}

impl PropsEntries {
    /// The stamps of these entries.
    pub fn version(&self) -> PropsVersion {
        PropsVersion {
            bucket_type: self.bucket_type.as_ref().map(|e| e.stamp),
            bucket: self.bucket.as_ref().map(|e| e.stamp),
        }
    }
}

/// The stamps of shared entries, by entry (a reset bucket's included).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamps {
    /// Type name → stamp.
    pub(crate) types: std::collections::BTreeMap<String, EntryStamp>,
    /// Type name → bucket name in hex → stamp.
    pub(crate) buckets:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, EntryStamp>>,
}

impl Stamps {
    pub(crate) fn of_type(&self, name: &str) -> Option<EntryStamp> {
        self.types.get(name).copied()
    }

    pub(crate) fn of_bucket(&self, bucket_type: &str, hex: &str) -> Option<EntryStamp> {
        self.buckets.get(bucket_type)?.get(hex).copied()
    }

    pub(crate) fn set_bucket(&mut self, bucket_type: &str, hex: &str, stamp: EntryStamp) {
        self.buckets
            .entry(bucket_type.to_string())
            .or_default()
            .insert(hex.to_string(), stamp);
    }
}

impl BucketRegistry {
    /// The stamped entries bucket `bucket` of `bucket_type` resolves from.
    pub fn props_entries(&self, bucket_type: &str, bucket: &[u8]) -> PropsEntries {
        entries_in(&self.stored.read(), bucket_type, &to_hex(bucket))
    }

    /// The stamps of the entries bucket `bucket` of `bucket_type`
    /// resolves from.
    pub fn props_version(&self, bucket_type: &str, bucket: &[u8]) -> PropsVersion {
        let stored = self.stored.read();
        let has_type = stored.types.contains_key(bucket_type);
        PropsVersion {
            bucket_type: stored.stamps.of_type(bucket_type).filter(|_| has_type),
            bucket: stored.stamps.of_bucket(bucket_type, &to_hex(bucket)),
        }
    }

    /// Applies entries another node sent for bucket `bucket` of
    /// `bucket_type`, each only if it is not older than this registry's.
    pub fn apply_entries(
        &self,
        bucket_type: &str,
        bucket: &[u8],
        entries: &PropsEntries,
    ) -> Result<(), RegistryError> {
        let mut shared = SharedMetadata::default();
        if let Some(e) = &entries.bucket_type
            && bucket_type != DEFAULT_TYPE
        {
            shared.types.push(SharedType {
                name: bucket_type.to_string(),
                entry: parsed_json(&e.json)?,
                stamp: Some(e.stamp),
            });
        }
        if let Some(e) = &entries.bucket {
            let patch = parsed_json(&e.json)?;
            shared.buckets.push(SharedBucket {
                bucket_type: bucket_type.to_string(),
                bucket: to_hex(bucket),
                patch: (!patch.is_null()).then_some(patch),
                stamp: Some(e.stamp),
            });
        }
        self.apply_shared(&shared)
    }
}

/// The stamped entries of bucket `hex` of `bucket_type` in `stored`.
pub(crate) fn entries_in(stored: &Stored, bucket_type: &str, hex: &str) -> PropsEntries {
    let bucket_type_entry = stored.stamps.of_type(bucket_type).and_then(|stamp| {
        let entry = stored.types.get(bucket_type)?;
        let json = serde_json::to_vec(entry).ok()?;
        Some(StampedEntry {
            stamp,
            json: json.into(),
        })
    });
    let bucket = stored.stamps.of_bucket(bucket_type, hex).map(|stamp| {
        let patch = stored
            .buckets
            .iter()
            .find(|b| b.bucket_type == bucket_type && b.bucket == hex)
            .map(|b| Value::Object(b.patch.to_json()))
            .unwrap_or(Value::Null);
        StampedEntry {
            stamp,
            json: patch.to_string().into_bytes().into(),
        }
    });
    PropsEntries {
        bucket_type: bucket_type_entry,
        bucket,
    }
}

fn parsed_json(json: &[u8]) -> Result<Value, RegistryError> {
    serde_json::from_slice(json).map_err(|e| {
        RegistryError::Props(crate::props::PropsError(vec![(
            "entry".into(),
            format!("a shared props entry does not parse: {e}"),
        )]))
    })
}
