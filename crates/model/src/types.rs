//! Bucket types and per-bucket properties (Riak's bucket-type registry).
//!
//! The `default` type always exists and is active; its props are the node's
//! configured defaults. Other types are created (status `created`), then
//! activated (`active`) before use. A bucket's effective props are its
//! type's props overridden by the bucket's own patch. Every change is
//! validated whole (a property Eddy does not implement may be set only to
//! Riak's default: [`crate::props::unsupported`]), then written to the
//! metadata file atomically (temp file, fsync, rename) before it takes
//! effect. Props stored before a property was refused still resolve.
//! Entries the cluster shares also keep the cluster's stamps, which a put
//! to another node carries ([`crate::metadata::entries`]).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::metadata::ChangeId;
use crate::metadata::entries::{PropsEntries, Stamps, entries_in};
use crate::props::{BucketProps, PropsError, PropsPatch};

/// The type every untyped bucket belongs to.
pub const DEFAULT_TYPE: &str = "default";

/// Longest bucket type name accepted.
pub const TYPE_NAME_BYTES_MAX: usize = 255;

/// A bucket type's life stage (`riak-admin bucket-type status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypeStatus {
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
    /// The metadata file could not be read or written.
    #[error("bucket metadata at {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The metadata file does not parse.
    #[error("bucket metadata at {path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredType {
    pub(crate) status: TypeStatus,
    pub(crate) patch: PropsPatch,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StoredBucket {
    pub(crate) bucket_type: String,
    /// Hex, since bucket names are arbitrary bytes.
    pub(crate) bucket: String,
    pub(crate) patch: PropsPatch,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Stored {
    pub(crate) types: BTreeMap<String, StoredType>,
    pub(crate) buckets: Vec<StoredBucket>,
    /// The cluster's stamps of the shared entries.
    #[serde(default)]
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
    path: Option<PathBuf>,
    pub(crate) stored: RwLock<Stored>,
    cache: RwLock<PropsCache>,
    /// The sub-backends a `backend` property may name (a multi node);
    /// `None` when the node has one backend and the property is inert.
    backend_names: Option<Vec<String>>,
    /// Told of every local change, to share it with the cluster.
    pub(crate) hook: std::sync::OnceLock<crate::metadata::MetadataHook>,
    /// Entries changed here that the cluster has not taken yet, with how
    /// many changes are outstanding.
    pub(crate) unconfirmed: parking_lot::Mutex<HashMap<crate::metadata::EntryName, u32>>,
    /// The id of the last change handed to `hook` (0: none yet).
    pub(crate) last_published: parking_lot::Mutex<u64>,
    /// Told of each bucket whose generation rose (it was dropped).
    pub(crate) on_generation: std::sync::OnceLock<crate::metadata::drop::GenerationHook>,
}

impl BucketRegistry {
    /// A registry kept only in memory (tests).
    pub fn in_memory(defaults: BucketProps) -> Self {
        BucketRegistry {
            defaults,
            path: None,
            stored: RwLock::new(Stored::default()),
            cache: RwLock::new(PropsCache::new()),
            backend_names: None,
            hook: std::sync::OnceLock::new(),
            unconfirmed: parking_lot::Mutex::new(HashMap::new()),
            last_published: parking_lot::Mutex::new(0),
            on_generation: std::sync::OnceLock::new(),
        }
    }

    /// Loads the registry from `path`, or starts empty if it does not exist.
    pub fn open(path: &Path, defaults: BucketProps) -> Result<Self, RegistryError> {
        let stored = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| RegistryError::Corrupt {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Stored::default(),
            Err(source) => {
                let path = path.to_path_buf();
                return Err(RegistryError::Io { path, source });
            }
        };
        Ok(BucketRegistry {
            defaults,
            path: Some(path.to_path_buf()),
            stored: RwLock::new(stored),
            cache: RwLock::new(PropsCache::new()),
            backend_names: None,
            hook: std::sync::OnceLock::new(),
            unconfirmed: parking_lot::Mutex::new(HashMap::new()),
            last_published: parking_lot::Mutex::new(0),
            on_generation: std::sync::OnceLock::new(),
        })
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
        self.local_change(
            crate::metadata::EntryName::Type(name.to_string()),
            |stored| {
                if stored.types.contains_key(name) {
                    return Err(RegistryError::AlreadyExists(name.to_string()));
                }
                let t = StoredType {
                    status: TypeStatus::Created,
                    patch: patch.clone(),
                };
                stored.types.insert(name.to_string(), t);
                Ok(())
            },
        )?;
        Ok(self.publish_type(name))
    }

    /// Activates a created type (activating an active type is a no-op).
    pub fn activate_type(&self, name: &str) -> Result<ChangeId, RegistryError> {
        self.change_type(name, |t| t.status = TypeStatus::Active)
    }

    /// Changes a type's props; immutable props must keep their values.
    pub fn update_type(&self, name: &str, patch: &PropsPatch) -> Result<ChangeId, RegistryError> {
        if name == DEFAULT_TYPE {
            return Err(RegistryError::BadName(name.to_string()));
        }
        let current = self.type_info(name)?.props;
        let props = current.patched(patch)?;
        props.check_supported(patch)?;
        current.check_immutable(patch)?;
        self.check_backend(&props)?;
        self.change_type(name, |t| t.patch.merge(patch))
    }

    /// Changes existing type `name`'s stored entry with `f`, then shares it.
    fn change_type(
        &self,
        name: &str,
        f: impl FnOnce(&mut StoredType),
    ) -> Result<ChangeId, RegistryError> {
        let entry = crate::metadata::EntryName::Type(name.to_string());
        self.local_change(entry, |stored| {
            let t = stored
                .types
                .get_mut(name)
                .ok_or_else(|| RegistryError::NoSuchType(name.to_string()))?;
            f(t);
            Ok(())
        })?;
        Ok(self.publish_type(name))
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

    fn resolve(
        &self,
        stored: &Stored,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<BucketProps, RegistryError> {
        let info = self.type_info_in(stored, bucket_type)?;
        if info.status != TypeStatus::Active {
            return Err(RegistryError::NotActive(bucket_type.to_string()));
        }
        match find_bucket(stored, bucket_type, bucket) {
            Some(b) => {
                let mut props = info.props.patched(&b.patch)?;
                props.generation = b.patch.generation.unwrap_or(0);
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
        let current = self.bucket_props(bucket_type, bucket)?;
        let mut patch = patch.clone();
        patch.generation = None;
        let patch = &patch;
        let props = current.patched(patch)?;
        props.check_supported(patch)?;
        current.check_immutable(patch)?;
        self.check_backend(&props)?;
        self.local_change(
            crate::metadata::EntryName::Bucket(bucket_type.to_string(), to_hex(bucket)),
            |stored| {
                bucket_patch_mut(stored, bucket_type, &to_hex(bucket)).merge(patch);
                Ok(())
            },
        )?;
        Ok(self.publish_bucket(bucket_type, bucket))
    }

    /// Returns a bucket to its type's props.
    pub fn reset_bucket_props(
        &self,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<ChangeId, RegistryError> {
        self.bucket_props(bucket_type, bucket)?;
        let hex = to_hex(bucket);
        self.local_change(
            crate::metadata::EntryName::Bucket(bucket_type.to_string(), to_hex(bucket)),
            |stored| {
                let generation = find_bucket(stored, bucket_type, bucket)
                    .and_then(|b| b.patch.generation)
                    .unwrap_or(0);
                stored
                    .buckets
                    .retain(|b| !(b.bucket_type == bucket_type && b.bucket == hex));
                // A dropped bucket's generation outlives its props: the
                // objects of the earlier ones must stay gone.
                if generation > 0 {
                    bucket_patch_mut(stored, bucket_type, &hex).generation = Some(generation);
                }
                Ok(())
            },
        )?;
        Ok(self.publish_bucket(bucket_type, bucket))
    }

    /// Applies `f` to a copy, persists the copy, then makes it current.
    pub(crate) fn change(
        &self,
        f: impl FnOnce(&mut Stored) -> Result<(), RegistryError>,
    ) -> Result<(), RegistryError> {
        let mut stored = self.stored.write();
        let mut next = stored.clone();
        f(&mut next)?;
        if let Some(path) = &self.path {
            write_atomically(path, &next)?;
        }
        let raised = crate::metadata::drop::raised_generations(&stored, &next);
        *stored = next;
        self.cache.write().clear();
        drop(stored);
        self.tell_raised(raised);
        Ok(())
    }
}

fn find_bucket<'a>(
    stored: &'a Stored,
    bucket_type: &str,
    bucket: &[u8],
) -> Option<&'a StoredBucket> {
    let hex = to_hex(bucket);
    stored
        .buckets
        .iter()
        .find(|b| b.bucket_type == bucket_type && b.bucket == hex)
}

/// Bucket `hex` of `bucket_type`'s patch in `stored`, an empty one added
/// first if it has none.
pub(crate) fn bucket_patch_mut<'a>(
    stored: &'a mut Stored,
    bucket_type: &str,
    hex: &str,
) -> &'a mut PropsPatch {
    let at = stored
        .buckets
        .iter()
        .position(|b| b.bucket_type == bucket_type && b.bucket == hex);
    let at = at.unwrap_or_else(|| {
        stored.buckets.push(StoredBucket {
            bucket_type: bucket_type.to_string(),
            bucket: hex.to_string(),
            patch: PropsPatch::new(),
        });
        stored.buckets.len() - 1
    });
    &mut stored.buckets[at].patch
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

fn write_atomically(path: &Path, stored: &Stored) -> Result<(), RegistryError> {
    let io = |source| RegistryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = serde_json::to_vec_pretty(stored).map_err(|e| io(std::io::Error::other(e)))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::File::create(&tmp).map_err(io)?;
    file.write_all(&bytes).map_err(io)?;
    file.sync_data().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(v: serde_json::Value) -> PropsPatch {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn type_lifecycle_and_inheritance() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta/buckets.json");
        let reg = BucketRegistry::open(&path, BucketProps::default()).unwrap();
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

        let reopened = BucketRegistry::open(&path, BucketProps::default()).unwrap();
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
        let reg = BucketRegistry::in_memory(BucketProps::default());
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
        let reg = BucketRegistry::in_memory(BucketProps::default()).with_backend_names(names);
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
        let single = BucketRegistry::in_memory(BucketProps::default());
        single
            .set_bucket_props(DEFAULT_TYPE, b"b", &patch(json!({"backend": "anything"})))
            .unwrap();
    }

    #[test]
    fn corrupt_metadata_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("buckets.json");
        std::fs::write(&path, b"{not json").unwrap();
        let err = BucketRegistry::open(&path, BucketProps::default())
            .err()
            .unwrap();
        assert!(matches!(err, RegistryError::Corrupt { .. }), "{err}");
    }
}
