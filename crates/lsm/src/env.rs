//! One fjall database per node, shared by all partitions opened in it.
//!
//! The environment owns the fjall [`Database`] (one journal, one block
//! cache, one set of worker threads), a small `eddy.meta` keyspace, the
//! group-commit state and the TTL state the compaction filters read.
//! Partition `p` is the keyspace `p.obj` (its objects).
//!
//! Data directories written before the side store (design note 027) also
//! hold a keyspace `p.aux` per partition, with each key's terms record and
//! its index entries. Nothing reads them: opening the environment deletes
//! every keyspace whose name ends in `.aux` (no other keyspace does), each
//! deletion one atomic change of fjall's keyspace register, so a crash
//! midway leaves the rest for the next open.
//!
//! Invariants:
//! - A partition is open at most once at a time (a second backend over the
//!   same keyspace could close or destroy it under the first).
//! - Destroying a partition is crash-atomic: a `destroy/<name>` marker is
//!   made durable before its keyspaces are deleted and removed after, and a
//!   marker found at open (or before the partition is reopened) finishes the
//!   job, so a half-destroyed partition is never read.
//! - The `ttl_in_use` marker is written in the same batch as the first write
//!   that carries an expiry, so after a restart the filter and key folds
//!   still know to look at expiry headers.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eddy_storage::{GroupCommit, StorageError, SyncPolicy};
use fjall::compaction::filter::Factory;
use fjall::{
    CompressionType, Database, Keyspace, KeyspaceCreateOptions, KvSeparationOptions,
    OwnedWriteBatch,
};
use parking_lot::Mutex;

use crate::backend::{LsmBackend, Partition};
use crate::config::LsmConfig;
use crate::error::{engine, map_open_error};
use crate::filter::{TtlFilterFactory, TtlState};
use crate::interval::IntervalSyncer;
use crate::journal::JournalSync;

const META_KEYSPACE: &str = "eddy.meta";
const OBJECTS_SUFFIX: &str = ".obj";
/// Suffix of the index keyspaces of data directories written before the
/// side store, deleted at open.
const OLD_AUX_SUFFIX: &str = ".aux";
const TTL_MARKER: &[u8] = b"ttl_in_use";
const DESTROY_PREFIX: &str = "destroy/";
/// Longest partition name (fjall allows 255-byte keyspace names).
pub const PARTITION_NAME_BYTES_MAX: usize = 200;

/// What the environment's partitions share.
pub struct EnvShared {
    pub db: Database,
    meta: Keyspace,
    pub config: LsmConfig,
    pub dir: PathBuf,
    pub ttl: Arc<TtlState>,
    /// The `ttl_in_use` marker is stored (`ttl` may be in use by config
    /// alone, which a later open without that config would not know).
    ttl_marker_stored: AtomicBool,
    group_commit: GroupCommit,
    journal: JournalSync,
    open_partitions: Mutex<HashSet<String>>,
    interval: Mutex<Option<IntervalSyncer>>,
}

/// A node's lsm storage: one fjall database holding many partitions.
#[derive(Clone)]
pub struct LsmEnv {
    shared: Arc<EnvShared>,
}

impl LsmEnv {
    /// Opens (or creates) the environment stored in `dir`, deleting the
    /// index keyspaces of an older format and finishing any partition
    /// destruction a crash interrupted.
    pub fn open(dir: &Path, config: &LsmConfig) -> Result<LsmEnv, StorageError> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        let ttl = Arc::new(TtlState {
            clock: config.clock.clone(),
            ttl_in_use: AtomicBool::new(config.expiry_secs > 0),
        });
        let db = open_database(dir, config, ttl.clone())?;
        let meta = db
            .keyspace(META_KEYSPACE, KeyspaceCreateOptions::default)
            .map_err(engine)?;
        let ttl_marker_stored = meta.contains_key(TTL_MARKER).map_err(engine)?;
        if ttl_marker_stored {
            ttl.ttl_in_use.store(true, Ordering::Release);
        }
        let shared = Arc::new(EnvShared {
            db,
            meta,
            config: config.clone(),
            dir: dir.to_path_buf(),
            ttl,
            ttl_marker_stored: AtomicBool::new(ttl_marker_stored),
            group_commit: GroupCommit::default(),
            journal: JournalSync::new(dir),
            open_partitions: Mutex::new(HashSet::new()),
            interval: Mutex::new(None),
        });
        shared.delete_old_aux_keyspaces()?;
        shared.finish_destroys()?;
        if config.sync == SyncPolicy::Interval {
            let every = config.sync_interval;
            *shared.interval.lock() = Some(IntervalSyncer::start(shared.db.clone(), every));
        }
        Ok(LsmEnv { shared })
    }

    /// Opens (or creates) partition `name`. Fails if it is already open.
    pub fn open_partition(&self, name: &str) -> Result<LsmBackend, StorageError> {
        check_partition_name(name)?;
        let lease = Lease::take(&self.shared, name)?;
        if self.shared.has_destroy_marker(name)? {
            self.shared.delete_partition_keyspaces(name)?;
        }
        let objects = self.shared.keyspace(name, OBJECTS_SUFFIX)?;
        let partition = Partition {
            env: self.shared.clone(),
            objects,
            _lease: lease,
        };
        Ok(LsmBackend::new(name, partition))
    }

    /// The directory the environment lives in.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Makes every write so far durable.
    pub fn sync(&self) -> Result<(), StorageError> {
        self.shared.durable()
    }
}

fn open_database(
    dir: &Path,
    config: &LsmConfig,
    ttl: Arc<TtlState>,
) -> Result<Database, StorageError> {
    let assign = move |name: &str| -> Option<Arc<dyn Factory>> {
        name.ends_with(OBJECTS_SUFFIX)
            .then(|| Arc::new(TtlFilterFactory(AssertUnwindSafe(ttl.clone()))) as Arc<dyn Factory>)
    };
    let mut builder = Database::builder(dir)
        .cache_size(config.cache_size_bytes)
        .journal_compression(compression_type(config.compression))
        // Commits stay in the journal's 8 KiB userspace buffer until it
        // fills or a sync flushes it, rather than one `write` syscall each
        // (what bitcask's buffer does too): a kill -9 can lose the last
        // few KiB of writes that were not asked to be durable.
        .manual_journal_persist(true)
        .with_compaction_filter_factories(Arc::new(assign));
    if config.worker_threads > 0 {
        builder = builder.worker_threads(config.worker_threads);
    }
    builder.open().map_err(|e| map_open_error(e, dir))
}

fn compression_type(enabled: bool) -> CompressionType {
    if enabled {
        CompressionType::Lz4
    } else {
        CompressionType::None
    }
}

fn check_partition_name(name: &str) -> Result<(), StorageError> {
    if name.is_empty() || name.len() > PARTITION_NAME_BYTES_MAX {
        return Err(StorageError::Config(format!(
            "partition name must be 1 to {PARTITION_NAME_BYTES_MAX} bytes, got {name:?}"
        )));
    }
    Ok(())
}

fn keyspace_options(config: &LsmConfig) -> KeyspaceCreateOptions {
    use fjall::config::CompressionPolicy;
    let blocks = if config.compression {
        // fjall's own choice: the small, hot upper levels stay uncompressed.
        CompressionPolicy::new([
            CompressionType::None,
            CompressionType::None,
            CompressionType::Lz4,
        ])
    } else {
        CompressionPolicy::all(CompressionType::None)
    };
    let separation = config.kv_separation_threshold_bytes.map(|threshold| {
        KvSeparationOptions::default()
            .separation_threshold(threshold)
            .compression(compression_type(config.compression))
    });
    KeyspaceCreateOptions::default()
        .max_memtable_size(config.memtable_size_bytes)
        .data_block_compression_policy(blocks)
        .with_kv_separation(separation)
}

impl EnvShared {
    fn keyspace(&self, name: &str, suffix: &str) -> Result<Keyspace, StorageError> {
        self.db
            .keyspace(&format!("{name}{suffix}"), || {
                keyspace_options(&self.config)
            })
            .map_err(engine)
    }

    /// Deletes every keyspace an older format kept index entries in, then
    /// makes that durable. Each deletion is atomic; what a crash leaves is
    /// deleted at the next open.
    fn delete_old_aux_keyspaces(&self) -> Result<(), StorageError> {
        let old: Vec<_> = self
            .db
            .list_keyspace_names()
            .into_iter()
            .filter(|name| name.ends_with(OLD_AUX_SUFFIX))
            .collect();
        if old.is_empty() {
            return Ok(());
        }
        for name in old {
            let handle = self
                .db
                .keyspace(&name, KeyspaceCreateOptions::default)
                .map_err(engine)?;
            self.db.delete_keyspace(handle).map_err(engine)?;
        }
        self.durable()
    }

    /// Fsyncs the journal now, letting other writers commit meanwhile.
    fn fsync(&self) -> Result<(), StorageError> {
        self.journal.fsync(&self.db)
    }

    /// Fails once a journal fsync has failed: writes must not go on.
    pub fn check_writable(&self) -> Result<(), StorageError> {
        self.journal.check()
    }

    /// Returns once every batch committed before the call is durable,
    /// sharing the fsync with concurrent callers.
    pub fn durable(&self) -> Result<(), StorageError> {
        let ticket = self.group_commit.ticket();
        self.group_commit.wait(ticket, || self.fsync())
    }

    /// Adds the `ttl_in_use` marker to `batch` unless it is stored; true
    /// when added (then call [`EnvShared::ttl_marker_committed`] after the
    /// commit).
    pub fn add_ttl_marker(&self, batch: &mut OwnedWriteBatch) -> bool {
        if self.ttl_marker_stored.load(Ordering::Acquire) {
            return false;
        }
        batch.insert(&self.meta, TTL_MARKER, [1u8]);
        // Before the commit, so no reader of the new entries misses it.
        self.ttl.ttl_in_use.store(true, Ordering::Release);
        true
    }

    /// Records that a batch carrying the marker committed.
    pub fn ttl_marker_committed(&self) {
        self.ttl_marker_stored.store(true, Ordering::Release);
    }

    fn destroy_marker(name: &str) -> String {
        format!("{DESTROY_PREFIX}{name}")
    }

    fn has_destroy_marker(&self, name: &str) -> Result<bool, StorageError> {
        self.meta
            .contains_key(Self::destroy_marker(name))
            .map_err(engine)
    }

    /// Deletes partition `name`'s keyspace, crash-atomically.
    pub fn destroy_partition(&self, name: &str, objects: Keyspace) -> Result<(), StorageError> {
        let marker = Self::destroy_marker(name);
        self.meta.insert(&marker, []).map_err(engine)?;
        self.durable()?;
        self.db.delete_keyspace(objects).map_err(engine)?;
        self.meta.remove(marker).map_err(engine)?;
        self.durable()
    }

    /// Deletes partition `name`'s keyspace if it is still there, then its
    /// destroy marker.
    fn delete_partition_keyspaces(&self, name: &str) -> Result<(), StorageError> {
        if self.db.keyspace_exists(&format!("{name}{OBJECTS_SUFFIX}")) {
            let handle = self.keyspace(name, OBJECTS_SUFFIX)?;
            self.db.delete_keyspace(handle).map_err(engine)?;
        }
        self.meta
            .remove(Self::destroy_marker(name))
            .map_err(engine)?;
        self.durable()
    }

    fn finish_destroys(&self) -> Result<(), StorageError> {
        let mut names = Vec::new();
        for guard in self.meta.prefix(DESTROY_PREFIX) {
            let key = guard.key().map_err(engine)?;
            let name = key.get(DESTROY_PREFIX.len()..).unwrap_or_default();
            names.push(String::from_utf8_lossy(name).into_owned());
        }
        names
            .iter()
            .try_for_each(|name| self.delete_partition_keyspaces(name))
    }
}

impl Drop for EnvShared {
    fn drop(&mut self) {
        if let Some(syncer) = self.interval.get_mut().take() {
            syncer.stop();
        }
    }
}

/// Marks a partition open; dropping it marks it closed again.
pub struct Lease {
    env: Arc<EnvShared>,
    name: String,
}

impl Lease {
    fn take(env: &Arc<EnvShared>, name: &str) -> Result<Lease, StorageError> {
        if !env.open_partitions.lock().insert(name.to_string()) {
            return Err(StorageError::Config(format!(
                "partition {name:?} is already open"
            )));
        }
        Ok(Lease {
            env: env.clone(),
            name: name.to_string(),
        })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.env.open_partitions.lock().remove(&self.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_storage::{Backend, WriteOptions};

    #[test]
    fn an_interrupted_destroy_is_finished_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let config = LsmConfig::default();
        {
            let env = LsmEnv::open(dir.path(), &config).unwrap();
            let p = env.open_partition("p").unwrap();
            p.put(b"b", b"k", b"v", &[], WriteOptions::SYNC).unwrap();
            // As if destroy had made its marker durable and then crashed.
            let marker = EnvShared::destroy_marker("p");
            env.shared.meta.insert(marker, []).unwrap();
            env.sync().unwrap();
        }
        let env = LsmEnv::open(dir.path(), &config).unwrap();
        assert!(!env.shared.has_destroy_marker("p").unwrap());
        let p = env.open_partition("p").unwrap();
        assert!(p.is_empty().unwrap());
    }
}
