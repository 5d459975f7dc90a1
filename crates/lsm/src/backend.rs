//! [`LsmBackend`]: one partition, and its [`Backend`] implementation.
//!
//! The backend holds its [`Partition`] (its object keyspace plus the shared
//! environment) behind a lock that only `close` and `destroy` take for
//! writing; once closed, every call fails with [`StorageError::Closed`].
//! Writes and reads are in `write.rs` and `scan.rs`. The backend keeps no
//! secondary-index entries (a vnode keeps them in its side store, design
//! note 027): its capabilities say `indexes: false`, a write with index
//! specs is refused with [`StorageError::NoIndexes`] and an index scan
//! answers nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eddy_storage::{
    Backend, BackendStatus, Capabilities, FoldOptions, IndexQuery, KeyVisitor, ObjectVisitor,
    StorageError, WriteBatch, WriteOptions,
};
use fjall::{Keyspace, PersistMode};
use parking_lot::{RwLock, RwLockReadGuard};

use crate::config::LsmConfig;
use crate::env::{EnvShared, Lease, LsmEnv};
use crate::error::engine;
use crate::keys;

/// Keys deleted per batch by `drop_bucket`.
const DROP_CHUNK_KEYS: usize = 512;

/// An open partition: its keyspace in the shared environment.
pub struct Partition {
    pub env: Arc<EnvShared>,
    /// `esc(bucket) key` → expiry header + value.
    pub objects: Keyspace,
    pub _lease: Lease,
}

/// The lsm backend of one partition.
pub struct LsmBackend {
    name: String,
    partition: RwLock<Option<Partition>>,
    /// Set for a standalone backend, whose directory `destroy` removes.
    owned_dir: Option<PathBuf>,
}

impl LsmBackend {
    pub(crate) fn new(name: &str, partition: Partition) -> Self {
        LsmBackend {
            name: name.to_string(),
            partition: RwLock::new(Some(partition)),
            owned_dir: None,
        }
    }

    /// Opens a standalone partition with its own environment in `dir`,
    /// after deleting what an interrupted destroy of `dir` left.
    pub fn open(dir: &Path, config: LsmConfig) -> Result<LsmBackend, StorageError> {
        eddy_storage::destroy::finish_interrupted(dir)?;
        let env = LsmEnv::open(dir, &config)?;
        let mut backend = env.open_partition("default")?;
        backend.owned_dir = Some(dir.to_path_buf());
        Ok(backend)
    }

    /// Flushes the memtable and compacts the partition into its last level,
    /// running the TTL filter over everything (operators and tests; fjall
    /// otherwise compacts in the background).
    pub fn compact(&self) -> Result<(), StorageError> {
        self.with(|p| {
            p.objects.rotate_memtable_and_wait().map_err(engine)?;
            p.objects.major_compact().map_err(engine)
        })
    }

    /// The partition's name in its environment.
    pub fn partition_name(&self) -> &str {
        &self.name
    }

    fn open_partition(&self) -> Result<RwLockReadGuard<'_, Option<Partition>>, StorageError> {
        let guard = self.partition.read_recursive();
        if guard.is_none() {
            return Err(StorageError::Closed);
        }
        Ok(guard)
    }

    /// Runs `f` on the open partition.
    fn with<T>(
        &self,
        f: impl FnOnce(&Partition) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let guard = self.open_partition()?;
        match guard.as_ref() {
            Some(partition) => f(partition),
            None => Err(StorageError::Closed),
        }
    }
}

impl Partition {
    /// Deletes every key of `bucket` in batches of 512, then makes that
    /// durable.
    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        let range = keys::object_range(Some(bucket), None, None);
        let prefix_len = keys::object_key(bucket, b"").len();
        let mut after: Option<Vec<u8>> = None;
        loop {
            let chunk = self.object_keys_in(&range, after.as_deref(), DROP_CHUNK_KEYS)?;
            let Some(last) = chunk.last() else {
                return self.env.durable();
            };
            after = Some(last.to_vec());
            let mut batch = WriteBatch::default();
            for encoded in &chunk {
                batch.delete(bucket, encoded.get(prefix_len..).unwrap_or_default());
            }
            self.write(batch, WriteOptions::NO_SYNC)?;
        }
    }

    fn status(&self) -> Result<BackendStatus, StorageError> {
        let objects = &self.objects;
        let disk_bytes = objects.disk_space();
        let dead_bytes = objects.fragmented_blob_bytes();
        let files = objects.table_count() + objects.blob_file_count();
        let extra = vec![
            ("keys_exact".into(), "false".into()),
            ("object_tables".into(), objects.table_count().to_string()),
            ("blob_files".into(), objects.blob_file_count().to_string()),
            ("disk_bytes".into(), disk_bytes.to_string()),
            (
                "env_journals".into(),
                self.env.db.journal_count().to_string(),
            ),
        ];
        Ok(BackendStatus {
            keys: objects.approximate_len() as u64,
            live_bytes: disk_bytes.saturating_sub(dead_bytes),
            dead_bytes,
            files: files as u64,
            extra,
        })
    }
}

impl Backend for LsmBackend {
    fn name(&self) -> &'static str {
        "lsm"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            ordered: true,
            indexes: false,
            ttl: true,
            kv_separation: true,
            persistent: true,
            expires: self
                .with(|p| Ok(p.env.config.expiry_secs > 0))
                .unwrap_or(false),
        }
    }

    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.with(|p| p.get(bucket, key))
    }

    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        self.with(|p| p.write(batch, opts))
    }

    fn fold_keys(&self, opts: &FoldOptions, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.with(|p| p.fold_keys(opts, f))
    }

    fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.with(|p| p.fold_objects(opts, f))
    }

    fn index_range(
        &self,
        _query: &IndexQuery,
        _f: &mut KeyVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.with(|_| Ok(()))
    }

    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        self.with(|p| p.drop_bucket(bucket))
    }

    fn is_empty(&self) -> Result<bool, StorageError> {
        self.with(|p| p.is_empty())
    }

    fn sync(&self) -> Result<(), StorageError> {
        self.with(|p| p.env.durable())
    }

    fn status(&self) -> Result<BackendStatus, StorageError> {
        self.with(|p| p.status())
    }

    fn close(&self) -> Result<(), StorageError> {
        let Some(partition) = self.partition.write().take() else {
            return Ok(());
        };
        partition
            .env
            .db
            .persist(PersistMode::SyncAll)
            .map_err(engine)
    }

    /// Deletes the partition's keyspace behind a durable marker (its
    /// environment finishes an interrupted one); a standalone backend then
    /// closes its database and destroys its directory crash-atomically
    /// ([`eddy_storage::destroy`]).
    fn destroy(self: Box<Self>) -> Result<(), StorageError> {
        if let Some(p) = self.partition.write().take() {
            let Partition { env, objects, .. } = p;
            env.destroy_partition(&self.name, objects)?;
        }
        match &self.owned_dir {
            Some(dir) => eddy_storage::destroy::destroy_dir(dir),
            None => Ok(()),
        }
    }
}
