//! Bucket types and per-bucket properties (Riak's bucket-type registry).
//!
//! The `default` type always exists and is active; its props are the node's
//! configured defaults. Other types are created (status `created`), then
//! activated (`active`) before use. A bucket's effective props are its
//! type's props overridden by the bucket's own patch. Every change is
//! validated whole (a property Eddy does not implement may be set only to
//! Riak's default: [`crate::props::unsupported`]) before it is written.
//! Props stored before a property was refused still resolve.
//!
//! The registry keeps nothing of its own on disk: its entries are the
//! cluster's registers ([`crate::metadata::register`]), which a node saves
//! in its cluster state. A change made here is written to them through the
//! registry's [`MetadataStore`] (stamped, saved and applied back here
//! before the change returns, then shared with every member); what the
//! registers hold is applied here as each change is saved
//! ([`BucketRegistry::apply_registers`]). A registry without a store (a
//! test's) applies its changes in memory. The entries a put carries
//! ([`crate::metadata::entries`]) are applied here too, until the
//! registers bring the same or newer ones.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::metadata::entries::{PropsEntries, Stamps, entries_in};
use crate::metadata::{ChangeId, MetadataChange, MetadataStore};
use crate::props::{BucketProps, PropsError, PropsPatch};

/// The type every untyped bucket belongs to.
pub const DEFAULT_TYPE: &str = "default";

/// Longest bucket type name accepted.
pub const TYPE_NAME_BYTES_MAX: usize = 255;

/// A bucket type's life stage (`riak-admin bucket-type status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypeStatus {
    #[default]
    Created,
    Active,
}

/// What went wrong with a registry operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No type of this name exists.
    #[error("unknown bucket type {0:?}")]
    NoSuchType(String),
    /// The type exists but has not been activated.
    #[error("bucket type {0:?} is not active")]
    NotActive(String),
    /// `create` of a name already taken.
    #[error("bucket type {0:?} already exists")]
    AlreadyExists(String),
    /// The name is empty, too long, or `default`.
    #[error("invalid bucket type name {0:?}")]
    BadName(String),
    /// The props were refused.
    #[error(transparent)]
    Props(#[from] PropsError),
    /// The change could not be written to the cluster's registers (the
    /// node is stopping, or its state could not be saved).
    #[error("bucket metadata could not be saved: {0}")]
    Store(String),
}

/// A bucket type's entry, as its register holds it: its status and its
/// patch over the typed defaults. (Fields in this order, so its JSON has
/// sorted keys: see [`crate::metadata::register`].)
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeEntry {
    pub patch: PropsPatch,
    pub status: TypeStatus,
}

#[derive(Clone, Debug)]
pub(crate) struct StoredBucket {
    pub(crate) bucket_type: String,
    /// Hex, since bucket names are arbitrary bytes.
    pub(crate) bucket: String,
    pub(crate) patch: PropsPatch,
}

/// What the registry serves: the entries and the keys of their stamps.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stored {
    pub(crate) types: BTreeMap<String, TypeEntry>,
    pub(crate) buckets: Vec<StoredBucket>,
    /// The stamps of the shared entries.
    pub(crate) stamps: Stamps,
}

/// A bucket type as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeInfo {
    pub name: String,
    pub status: TypeStatus,
    pub props: BucketProps,
}

/// Most resolved bucket props kept in the cache before it starts over.
const PROPS_CACHE_LEN_MAX: usize = 65_536;

type PropsCache = HashMap<(String, Vec<u8>), Resolved>;

/// A bucket's props as resolved, with the stamped entries they came from.
#[derive(Clone)]
struct Resolved {
    props: Arc<BucketProps>,
    entries: Arc<PropsEntries>,
}

/// The node's bucket types and bucket props.
///
/// Resolved props are cached per bucket: filled while `stored` is read-
/// locked and cleared while it is write-locked, so the cache never holds
/// props older than the last change.
pub struct BucketRegistry {
    defaults: BucketProps,
    pub(crate) stored: RwLock<Stored>,
    cache: RwLock<PropsCache>,
    /// The sub-backends a `backend` property may name (a multi node);
    /// `None` when the node has one backend and the property is inert.
    backend_names: Option<Vec<String>>,
    /// Where local changes are written (the cluster's registers).
    pub(crate) store: std::sync::OnceLock<Arc<dyn MetadataStore>>,
    /// Held while a local change is made, so changes made here apply in
    /// turn, each over the one before.
    pub(crate) local: parking_lot::Mutex<()>,
    /// Told of each bucket whose generation rose (it was dropped).
    pub(crate) on_generation: std::sync::OnceLock<crate::metadata::drop::GenerationHook>,
}

impl BucketRegistry {
    /// An empty registry: the `default` type with `defaults`, until the
    /// cluster's registers are applied (or, with no store, its changes are
    /// kept in memory: tests).
    pub fn new(defaults: BucketProps) -> Self {
        BucketRegistry {
            defaults,
            stored: RwLock::new(Stored::default()),
            cache: RwLock::new(PropsCache::new()),
            backend_names: None,
            store: std::sync::OnceLock::new(),
            local: parking_lot::Mutex::new(()),
            on_generation: std::sync::OnceLock::new(),
        }
    }

    /// Restricts the `backend` property to these sub-backend names.
    pub fn with_backend_names(mut self, names: Vec<String>) -> Self {
        self.backend_names = Some(names);
        self
    }

    /// Refuses a `backend` this node does not have.
    fn check_backend(&self, props: &BucketProps) -> Result<(), RegistryError> {
        let (Some(names), Some(backend)) = (&self.backend_names, &props.backend) else {
            return Ok(());
        };
        if names.contains(backend) {
            return Ok(());
        }
        let reason = format!(
            "unknown backend {backend:?}; this node has {}",
            names.join(", ")
        );
        Err(RegistryError::Props(PropsError(vec![(
            "backend".into(),
            reason,
        )])))
    }

    /// The props of a type, and its status; errors if it does not exist.
    pub fn type_info(&self, name: &str) -> Result<TypeInfo, RegistryError> {
        let stored = self.stored.read();
        self.type_info_in(&stored, name)
    }

    fn type_info_in(&self, stored: &Stored, name: &str) -> Result<TypeInfo, RegistryError> {
        if name == DEFAULT_TYPE {
            let props = self.defaults.clone();
            let status = TypeStatus::Active;
            return Ok(TypeInfo {
                name: name.into(),
                status,
                props,
            });
        }
        let t = stored
            .types
            .get(name)
            .ok_or_else(|| RegistryError::NoSuchType(name.to_string()))?;
        let props = BucketProps::typed_defaults(&self.defaults).patched(&t.patch)?;
        Ok(TypeInfo {
            name: name.into(),
            status: t.status,
            props,
        })
    }

    /// Every type, `default` first.
    pub fn list_types(&self) -> Vec<TypeInfo> {
        let stored = self.stored.read();
        let names = std::iter::once(DEFAULT_TYPE).chain(stored.types.keys().map(String::as_str));
        names
            .filter_map(|n| self.type_info_in(&stored, n).ok())
            .collect()
    }

    /// Creates a type with `patch` over the typed defaults.
    pub fn create_type(&self, name: &str, patch: &PropsPatch) -> Result<ChangeId, RegistryError> {
        check_type_name(name)?;
        let props = BucketProps::typed_defaults(&self.defaults).patched(patch)?;
        props.check_supported(patch)?;
        self.check_backend(&props)?;
        self.local_change(|stored| {
            if stored.types.contains_key(name) {
                return Err(RegistryError::AlreadyExists(name.to_string()));
            }
            let entry = TypeEntry {
                status: TypeStatus::Created,
                patch: patch.clone(),
            };
            Ok(MetadataChange::Type {
                name: name.to_string(),
                entry,
            })
        })
    }

    /// Activates a created type (activating an active type is a no-op).
    pub fn activate_type(&self, name: &str) -> Result<ChangeId, RegistryError> {
        self.change_type(name, |_, t| {
            t.status = TypeStatus::Active;
            Ok(())
        })
    }

    /// Changes a type's props; immutable props must keep their values.
    pub fn update_type(&self, name: &str, patch: &PropsPatch) -> Result<ChangeId, RegistryError> {
        if name == DEFAULT_TYPE {
            return Err(RegistryError::BadName(name.to_string()));
        }
        self.change_type(name, |current, t| {
            let props = current.patched(patch)?;
            props.check_supported(patch)?;
            current.check_immutable(patch)?;
            self.check_backend(&props)?;
            t.patch.merge(patch);
            Ok(())
        })
    }

    /// Changes existing type `name`'s entry with `f` (given its props as
    /// served now), then writes it.
    fn change_type(
        &self,
        name: &str,
        f: impl FnOnce(&BucketProps, &mut TypeEntry) -> Result<(), RegistryError>,
    ) -> Result<ChangeId, RegistryError> {
        self.local_change(|stored| {
            let current = self.type_info_in(stored, name)?.props;
            let mut entry = stored
                .types
                .get(name)
                .cloned()
                .ok_or_else(|| RegistryError::NoSuchType(name.to_string()))?;
            f(&current, &mut entry)?;
            Ok(MetadataChange::Type {
                name: name.to_string(),
                entry,
            })
        })
    }

    /// The effective props of a bucket; its type must exist and be active.
    pub fn bucket_props(
        &self,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<BucketProps, RegistryError> {
        self.bucket_props_shared(bucket_type, bucket)
            .map(|p| (*p).clone())
    }

    /// [`BucketRegistry::bucket_props`] from the cache: the hot path of
    /// every request.
    pub fn bucket_props_shared(
        &self,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<Arc<BucketProps>, RegistryError> {
        self.resolved(bucket_type, bucket, |r| r.props.clone())
    }

    /// The props of the bucket a storage bucket name stands for, with the
    /// generation the name carries (design note 018); `None` for a name
    /// that is not one or a bucket whose props cannot be resolved.
    pub fn props_of_storage_bucket(
        &self,
        storage_bucket: &[u8],
    ) -> Option<(Arc<BucketProps>, u64)> {
        let (bucket, generation) = crate::request::BucketRef::parse_storage_bucket(storage_bucket)?;
        let props = self
            .bucket_props_shared(&bucket.bucket_type, &bucket.bucket)
            .ok()?;
        Some((props, generation))
    }

    /// A bucket's props and the stamped entries they were resolved from,
    /// read together (a put's coordinator sends the entries with the
    /// write), from the cache.
    pub fn bucket_props_entries(
        &self,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<(Arc<BucketProps>, Arc<PropsEntries>), RegistryError> {
        self.resolved(bucket_type, bucket, |r| {
            (r.props.clone(), r.entries.clone())
        })
    }

    /// `take` of a bucket's resolution, from the cache, resolved and cached
    /// first if need be.
    fn resolved<T>(
        &self,
        bucket_type: &str,
        bucket: &[u8],
        take: impl Fn(&Resolved) -> T,
    ) -> Result<T, RegistryError> {
        let stored = self.stored.read();
        let cache_key = (bucket_type.to_string(), bucket.to_vec());
        if let Some(r) = self.cache.read().get(&cache_key) {
            return Ok(take(r));
        }
        self.resolve_and_cache(&stored, cache_key).map(|r| take(&r))
    }

    /// Resolves a bucket's props under `stored`'s read lock and caches
    /// them.
    fn resolve_and_cache(
        &self,
        stored: &Stored,
        cache_key: (String, Vec<u8>),
    ) -> Result<Resolved, RegistryError> {
        let (bucket_type, bucket) = (&cache_key.0, &cache_key.1);
        let resolved = Resolved {
            props: Arc::new(self.resolve(stored, bucket_type, bucket)?),
            entries: Arc::new(entries_in(stored, bucket_type, &to_hex(bucket))),
        };
        let mut cache = self.cache.write();
        if cache.len() >= PROPS_CACHE_LEN_MAX {
            cache.clear();
        }
        cache.insert(cache_key, resolved.clone());
        Ok(resolved)
    }

    pub(crate) fn resolve(
        &self,
        stored: &Stored,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<BucketProps, RegistryError> {
        let info = self.type_info_in(stored, bucket_type)?;
        if info.status != TypeStatus::Active {
            return Err(RegistryError::NotActive(bucket_type.to_string()));
        }
        match crate::metadata::bucket_patch(stored, bucket_type, &to_hex(bucket)) {
            Some(patch) => {
                let mut props = info.props.patched(patch)?;
                props.generation = patch.generation.unwrap_or(0);
                Ok(props)
            }
            None => Ok(info.props),
        }
    }

    /// Sets some of a bucket's props (over its type's).
    pub fn set_bucket_props(
        &self,
        bucket_type: &str,
        bucket: &[u8],
        patch: &PropsPatch,
    ) -> Result<ChangeId, RegistryError> {
        let mut patch = patch.clone();
        patch.generation = None;
        let patch = &patch;
        self.local_change(|stored| {
            let current = self.resolve(stored, bucket_type, bucket)?;
            let props = current.patched(patch)?;
            props.check_supported(patch)?;
            current.check_immutable(patch)?;
            self.check_backend(&props)?;
            let mut own = bucket_patch_of(stored, bucket_type, bucket);
            own.merge(patch);
            Ok(bucket_change(bucket_type, bucket, Some(own)))
        })
    }

    /// Returns a bucket to its type's props.
    pub fn reset_bucket_props(
        &self,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<ChangeId, RegistryError> {
        self.local_change(|stored| {
            self.resolve(stored, bucket_type, bucket)?;
            let own = bucket_patch_of(stored, bucket_type, bucket);
            let generation = own.generation.unwrap_or(0);
            // A dropped bucket's generation outlives its props: the
            // objects of the earlier ones must stay gone.
            let kept = (generation > 0).then(|| PropsPatch {
                generation: Some(generation),
                ..PropsPatch::default()
            });
            Ok(bucket_change(bucket_type, bucket, kept))
        })
    }

    /// Sets the store local changes are written to (once).
    pub fn set_store(&self, store: Arc<dyn MetadataStore>) {
        let _ = self.store.set(store);
    }

    /// Makes a local change: `make` builds it from what is served now (or
    /// refuses it), then it is written to the store, which applies it
    /// here before it returns; without a store it is applied here, with
    /// no stamp. Local changes are made one at a time, so each is built
    /// over the one before.
    pub(crate) fn local_change(
        &self,
        make: impl FnOnce(&Stored) -> Result<MetadataChange, RegistryError>,
    ) -> Result<ChangeId, RegistryError> {
        let _one_at_a_time = self.local.lock();
        let change = make(&self.stored.read())?;
        if let Some(store) = self.store.get() {
            return store.write(change);
        }
        self.change(|stored| {
            crate::metadata::apply_change(stored, change);
            Ok(())
        })?;
        Ok(ChangeId::NONE)
    }

    /// Applies `f` to a copy, then makes the copy current.
    pub(crate) fn change(
        &self,
        f: impl FnOnce(&mut Stored) -> Result<(), RegistryError>,
    ) -> Result<(), RegistryError> {
        let mut stored = self.stored.write();
        let mut next = stored.clone();
        f(&mut next)?;
        let raised = crate::metadata::drop::raised_generations(&stored, &next);
        *stored = next;
        self.cache.write().clear();
        drop(stored);
        self.tell_raised(raised);
        Ok(())
    }
}

/// A change to bucket `bucket` of `bucket_type`: its new patch, or a
/// reset.
pub(crate) fn bucket_change(
    bucket_type: &str,
    bucket: &[u8],
    patch: Option<PropsPatch>,
) -> MetadataChange {
    MetadataChange::Bucket {
        bucket_type: bucket_type.to_string(),
        bucket: to_hex(bucket),
        patch,
    }
}

/// Bucket `bucket` of `bucket_type`'s own patch in `stored` (empty if it
/// has none).
pub(crate) fn bucket_patch_of(stored: &Stored, bucket_type: &str, bucket: &[u8]) -> PropsPatch {
    crate::metadata::bucket_patch(stored, bucket_type, &to_hex(bucket))
        .cloned()
        .unwrap_or_default()
}

fn check_type_name(name: &str) -> Result<(), RegistryError> {
    let bad = name.is_empty() || name.len() > TYPE_NAME_BYTES_MAX || name == DEFAULT_TYPE;
    match bad {
        true => Err(RegistryError::BadName(name.to_string())),
        false => Ok(()),
    }
}

pub(crate) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::memory::MemoryStore;
    use eddy_ring::NodeName;
    use serde_json::json;

    fn patch(v: serde_json::Value) -> PropsPatch {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn type_lifecycle_and_inheritance() {
        let reg = Arc::new(BucketRegistry::new(BucketProps::default()));
        let store = MemoryStore::attach(&reg, NodeName("n1@h".into()));
        assert!(!reg.bucket_props(DEFAULT_TYPE, b"b").unwrap().allow_mult);
        reg.create_type("maps", &patch(json!({"datatype": "map"})))
            .unwrap();
        assert!(matches!(
            reg.bucket_props("maps", b"b"),
            Err(RegistryError::NotActive(_))
        ));
        assert!(matches!(
            reg.create_type("maps", &PropsPatch::new()),
            Err(RegistryError::AlreadyExists(_))
        ));
        reg.activate_type("maps").unwrap();
        let p = reg.bucket_props("maps", b"b").unwrap();
        assert!(p.allow_mult && p.dvv_enabled);
        assert_eq!(p.datatype.as_deref(), Some("map"));
        assert!(
            reg.update_type("maps", &patch(json!({"datatype": "set"})))
                .is_err()
        );
        reg.update_type("maps", &patch(json!({"n_val": 2})))
            .unwrap();
        reg.set_bucket_props("maps", b"b", &patch(json!({"r": 1})))
            .unwrap();
        assert!(
            reg.set_bucket_props("maps", b"b", &patch(json!({"datatype": "set"})))
                .is_err()
        );
        assert!(matches!(
            reg.bucket_props("nope", b"b"),
            Err(RegistryError::NoSuchType(_))
        ));

        // Another node's registry, served from the same registers.
        let reopened = BucketRegistry::new(BucketProps::default());
        reopened.apply_registers(&store.registers()).unwrap();
        let p = reopened.bucket_props("maps", b"b").unwrap();
        assert_eq!((p.n_val, p.r), (2, crate::quorum::Quorum::Count(1)));
        reopened.reset_bucket_props("maps", b"b").unwrap();
        assert_eq!(
            reopened.bucket_props("maps", b"b").unwrap().r,
            crate::quorum::Quorum::Quorum
        );
        let names: Vec<_> = reopened.list_types().into_iter().map(|t| t.name).collect();
        assert_eq!(names, vec!["default", "maps"]);
    }

    #[test]
    fn cached_props_follow_every_change() {
        let reg = BucketRegistry::new(BucketProps::default());
        let n = |reg: &BucketRegistry| reg.bucket_props_shared(DEFAULT_TYPE, b"b").unwrap().n_val;
        assert_eq!(n(&reg), 3);
        reg.set_bucket_props(DEFAULT_TYPE, b"b", &patch(json!({"n_val": 1})))
            .unwrap();
        assert_eq!(n(&reg), 1);
        reg.reset_bucket_props(DEFAULT_TYPE, b"b").unwrap();
        assert_eq!(n(&reg), 3);
        reg.create_type("t", &PropsPatch::new()).unwrap();
        assert!(
            reg.bucket_props_shared("t", b"b").is_err(),
            "not active yet"
        );
        reg.activate_type("t").unwrap();
        assert_eq!(reg.bucket_props_shared("t", b"b").unwrap().n_val, 3);
        reg.update_type("t", &patch(json!({"n_val": 5}))).unwrap();
        assert_eq!(reg.bucket_props_shared("t", b"b").unwrap().n_val, 5);
    }

    #[test]
    fn backend_names_are_checked_on_a_multi_node() {
        let names = vec!["bitcask".to_string(), "memory".to_string()];
        let reg = BucketRegistry::new(BucketProps::default()).with_backend_names(names);
        reg.set_bucket_props(DEFAULT_TYPE, b"b", &patch(json!({"backend": "memory"})))
            .unwrap();
        assert_eq!(
            reg.bucket_props(DEFAULT_TYPE, b"b")
                .unwrap()
                .backend
                .as_deref(),
            Some("memory")
        );
        let err = reg.set_bucket_props(DEFAULT_TYPE, b"b", &patch(json!({"backend": "leveldb"})));
        let Err(RegistryError::Props(PropsError(fields))) = err else {
            panic!("{err:?}")
        };
        assert!(
            fields[0].1.contains("this node has bitcask, memory"),
            "{fields:?}"
        );
        assert!(
            reg.create_type("t", &patch(json!({"backend": "nope"})))
                .is_err()
        );
        let single = BucketRegistry::new(BucketProps::default());
        single
            .set_bucket_props(DEFAULT_TYPE, b"b", &patch(json!({"backend": "anything"})))
            .unwrap();
    }
}
