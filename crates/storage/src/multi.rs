//! The multi backend: named sub-backends, one chosen per bucket.
//!
//! Riak's `riak_kv_multi_backend`: each bucket's `backend` property names a
//! sub-backend; buckets without one use the default. Upper layers tell this
//! backend about bucket properties through [`MultiBackend::assign`].
//!
//! Invariants: every bucket maps to exactly one existing sub-backend; each
//! operation on a bucket goes only to that sub-backend. A batch spanning
//! sub-backends is applied per sub-backend in order, so it is atomic only
//! within one sub-backend. Reassigning a bucket does not move its data: the
//! old data becomes unreachable through this backend (as in Riak).
//!
//! Destroying is crash-atomic across the sub-backends when the backend was
//! opened with a destroy marker ([`MultiBackend::open`]): the marker file is
//! made durable before the first sub-backend is destroyed and removed after
//! the last, and an open that finds it destroys every sub-backend before
//! use, so a partition never comes back with some sub-backends' data and
//! not the others'. (Each sub-backend's own destroy is crash-atomic too.)

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::fold::{KeyVisitor, ObjectVisitor};
use crate::{
    Backend, BackendStatus, Capabilities, FoldControl, FoldOptions, IndexQuery, StorageError,
    WriteBatch, WriteOptions, limits,
};

/// Names the sub-backend a bucket uses (its `backend` property), or `None`
/// for the default. Given the storage layer's bucket bytes.
pub type BackendChooser = Arc<dyn Fn(&[u8]) -> Option<String> + Send + Sync>;

/// Sub-backends by name, and which bucket uses which.
pub struct MultiBackend {
    backends: BTreeMap<String, Box<dyn Backend>>,
    default: String,
    assignments: RwLock<HashMap<Vec<u8>, String>>,
    chooser: Option<BackendChooser>,
    /// While this file exists, the partition is being destroyed.
    destroy_marker: Option<PathBuf>,
}

/// Opens every sub-backend of one partition, by name.
pub type OpenSubs<'a> = &'a dyn Fn() -> Result<BTreeMap<String, Box<dyn Backend>>, StorageError>;

impl MultiBackend {
    /// A multi backend over `backends`, with `default` for unassigned buckets.
    pub fn new(
        backends: BTreeMap<String, Box<dyn Backend>>,
        default: &str,
    ) -> Result<Self, StorageError> {
        if !backends.contains_key(default) {
            return Err(StorageError::UnknownBackend(default.to_string()));
        }
        Ok(MultiBackend {
            backends,
            default: default.to_string(),
            assignments: RwLock::new(HashMap::new()),
            chooser: None,
            destroy_marker: None,
        })
    }

    /// A multi backend over the sub-backends `open_subs` opens, whose
    /// destroy is crash-atomic across them: `marker` is a file (in the
    /// partition's directory; its name must not end in
    /// [`crate::destroy::SUFFIX`]) that exists only while the partition is
    /// being destroyed. If a crash left it, every sub-backend is destroyed
    /// and opened again, empty, before use.
    pub fn open(
        marker: &Path,
        default: &str,
        open_subs: OpenSubs<'_>,
    ) -> Result<Self, StorageError> {
        if marker.exists() {
            open_subs()?.into_values().try_for_each(|b| b.destroy())?;
            remove_marker(marker)?;
        }
        let mut multi = MultiBackend::new(open_subs()?, default)?;
        multi.destroy_marker = Some(marker.to_path_buf());
        Ok(multi)
    }

    /// Asks `chooser` for each bucket's sub-backend instead of the
    /// assignments made with [`MultiBackend::assign`] (the node reads
    /// bucket properties this way). A name it returns that is not a
    /// sub-backend means the default.
    pub fn with_chooser(mut self, chooser: BackendChooser) -> Self {
        self.chooser = Some(chooser);
        self
    }

    /// Routes `bucket` to the sub-backend `name` (its `backend` property);
    /// `None` returns it to the default.
    pub fn assign(&self, bucket: &[u8], name: Option<&str>) -> Result<(), StorageError> {
        let mut assignments = self.assignments.write();
        match name {
            Some(n) if !self.backends.contains_key(n) => {
                return Err(StorageError::UnknownBackend(n.to_string()));
            }
            Some(n) => assignments.insert(bucket.to_vec(), n.to_string()),
            None => assignments.remove(bucket),
        };
        Ok(())
    }

    /// Names of the sub-backends.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.backends.keys().map(String::as_str)
    }

    fn name_for(&self, bucket: &[u8]) -> String {
        let chosen = match &self.chooser {
            Some(choose) => choose(bucket),
            None => self.assignments.read().get(bucket).cloned(),
        };
        chosen
            .filter(|name| self.backends.contains_key(name))
            .unwrap_or_else(|| self.default.clone())
    }

    fn backend_for(&self, bucket: &[u8]) -> &dyn Backend {
        let name = self.name_for(bucket);
        // `assign` only stores existing names and `new` checks the default.
        &*self.backends[&name]
    }

    fn each(
        &self,
        mut f: impl FnMut(&dyn Backend) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        self.backends.values().try_for_each(|b| f(&**b))
    }
}

impl Backend for MultiBackend {
    fn name(&self) -> &'static str {
        "multi"
    }

    /// What every sub-backend offers; see [`Backend::capabilities_for`].
    fn capabilities(&self) -> Capabilities {
        let all = self.backends.values().map(|b| b.capabilities());
        all.fold(
            Capabilities {
                // Folds over all buckets visit sub-backends one after another.
                ordered: self.backends.len() == 1,
                indexes: true,
                ttl: true,
                kv_separation: true,
                persistent: true,
                expires: false,
            },
            |acc, c| Capabilities {
                ordered: acc.ordered && c.ordered,
                indexes: acc.indexes && c.indexes,
                ttl: acc.ttl && c.ttl,
                kv_separation: acc.kv_separation && c.kv_separation,
                persistent: acc.persistent && c.persistent,
                expires: acc.expires || c.expires,
            },
        )
    }

    fn capabilities_for(&self, bucket: &[u8]) -> Capabilities {
        self.backend_for(bucket).capabilities()
    }

    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.backend_for(bucket).get(bucket, key)
    }

    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        batch.ops.iter().try_for_each(limits::check_op)?;
        let mut split: BTreeMap<String, WriteBatch> = BTreeMap::new();
        for op in batch.ops {
            let name = self.name_for(op.bucket_key().0);
            split.entry(name).or_default().ops.push(op);
        }
        for (name, part) in split {
            self.backends[&name].write(part, opts)?;
        }
        Ok(())
    }

    fn fold_keys(&self, opts: &FoldOptions, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.fold_objects_or_keys(opts, &mut |b, k, _| f(b, k), false)
    }

    fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.fold_objects_or_keys(opts, f, true)
    }

    fn index_range(&self, query: &IndexQuery, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.backend_for(&query.bucket).index_range(query, f)
    }

    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        self.backend_for(bucket).drop_bucket(bucket)
    }

    fn is_empty(&self) -> Result<bool, StorageError> {
        let mut empty = true;
        self.each(|b| {
            empty &= b.is_empty()?;
            Ok(())
        })?;
        Ok(empty)
    }

    fn sync(&self) -> Result<(), StorageError> {
        self.each(|b| b.sync())
    }

    fn status(&self) -> Result<BackendStatus, StorageError> {
        let mut total = BackendStatus::default();
        for (name, b) in &self.backends {
            let s = b.status()?;
            total.keys += s.keys;
            total.live_bytes += s.live_bytes;
            total.dead_bytes += s.dead_bytes;
            total.files += s.files;
            total
                .extra
                .push((format!("{name}.backend"), b.name().to_string()));
            total
                .extra
                .push((format!("{name}.keys"), s.keys.to_string()));
            let extra = s.extra.into_iter().map(|(k, v)| (format!("{name}.{k}"), v));
            total.extra.extend(extra);
        }
        Ok(total)
    }

    fn recovery_report(&self) -> crate::RecoveryReport {
        let mut total = crate::RecoveryReport::default();
        for b in self.backends.values() {
            total.absorb(b.recovery_report());
        }
        total
    }

    fn close(&self) -> Result<(), StorageError> {
        self.each(|b| b.close())
    }

    fn close_discarding(&self) -> Result<(), StorageError> {
        self.each(|b| b.close_discarding())
    }

    fn destroy(self: Box<Self>) -> Result<(), StorageError> {
        let MultiBackend {
            backends,
            destroy_marker,
            ..
        } = *self;
        if let Some(marker) = &destroy_marker {
            write_marker(marker)?;
        }
        backends.into_values().try_for_each(|b| b.destroy())?;
        match &destroy_marker {
            Some(marker) => remove_marker(marker),
            None => Ok(()),
        }
    }
}

/// Makes `marker` exist durably (the file and its directory entry).
fn write_marker(marker: &Path) -> Result<(), StorageError> {
    let io = |e| StorageError::io(marker, e);
    if let Some(dir) = marker.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::File::create(marker)
        .and_then(|f| f.sync_all())
        .map_err(io)?;
    crate::destroy::sync_parent(marker)
}

/// Removes `marker` durably.
fn remove_marker(marker: &Path) -> Result<(), StorageError> {
    match std::fs::remove_file(marker) {
        Ok(()) => crate::destroy::sync_parent(marker),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(marker, e)),
    }
}

impl MultiBackend {
    /// One bucket goes to its sub-backend; all buckets visit every
    /// sub-backend, keeping only the buckets each one serves.
    fn fold_objects_or_keys(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
        values: bool,
    ) -> Result<(), StorageError> {
        if let Some(bucket) = &opts.bucket {
            let backend = self.backend_for(bucket);
            return match values {
                true => backend.fold_objects(opts, f),
                false => backend.fold_keys(opts, &mut |b, k| f(b, k, &[])),
            };
        }
        let mut stopped = false;
        for (name, backend) in &self.backends {
            let mut visit = |b: &[u8], k: &[u8], v: &[u8]| {
                if self.name_for(b) != *name {
                    return FoldControl::Continue;
                }
                let ctl = f(b, k, v);
                stopped = ctl == FoldControl::Stop;
                ctl
            };
            match values {
                true => backend.fold_objects(opts, &mut visit)?,
                false => backend.fold_keys(opts, &mut |b, k| visit(b, k, &[]))?,
            }
            if stopped {
                break;
            }
        }
        Ok(())
    }
}
