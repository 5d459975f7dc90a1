//! Opening each partition's backend as the storage settings say, and its
//! side store (design note 027: the node's one side database in
//! `<data>/side/`, for every backend that keeps data across restarts).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_lsm::LsmEnv;
use eddy_ring::Partition;
use eddy_side::{SideEnv, SideStore};
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::multi::MultiBackend;
use eddy_storage::{Backend, StorageError};
use eddy_vnode::entries::Stores;

use eddy_model::BucketRef;
use eddy_model::types::BucketRegistry;

use crate::config::settings::{StorageBackend, StorageSettings};

/// The sub-backends of a `multi` node, which a bucket's `backend` property
/// names; the first is the default.
pub const MULTI_BACKENDS: &[&str] = &["bitcask", "lsm", "memory"];

/// Opens partitions' backends; holds what partitions share (the lsm env).
pub struct Storage {
    kind: StorageBackend,
    registry: Arc<BucketRegistry>,
    root: PathBuf,
    bitcask: BitcaskConfig,
    memory: MemoryConfig,
    lsm: Option<LsmEnv>,
    /// The side database; none on a memory node (nothing persists).
    side: Option<SideEnv>,
}

impl Storage {
    /// Prepares to open backends of `settings.backend` under `root`.
    pub fn new(
        settings: &StorageSettings,
        root: &Path,
        registry: Arc<BucketRegistry>,
    ) -> Result<Storage, StorageError> {
        let kind = settings.backend;
        let lsm = match kind {
            StorageBackend::Lsm | StorageBackend::Multi => {
                let dir = root.join("lsm");
                Some(once_unlocked(|| LsmEnv::open(&dir, &settings.lsm))?)
            }
            StorageBackend::Bitcask | StorageBackend::Memory => None,
        };
        let side = match kind {
            StorageBackend::Memory => None,
            _ => {
                let dir = root.join("side");
                Some(once_unlocked(|| SideEnv::open(&dir, Default::default()))?)
            }
        };
        Ok(Storage {
            kind,
            registry,
            root: root.to_path_buf(),
            bitcask: settings.bitcask.clone(),
            memory: settings.memory.clone(),
            lsm,
            side,
        })
    }

    /// Opens the side store of partition `p`'s incarnation `incarnation`
    /// over `backend`, building it from the backend's objects if it is
    /// new or half built (`eddy_vnode::side_build`).
    pub fn open_side(
        &self,
        p: Partition,
        incarnation: u64,
        backend: &Arc<dyn Backend>,
    ) -> Result<Option<Arc<SideStore>>, StorageError> {
        let Some(env) = &self.side else {
            return Ok(None);
        };
        let side = Arc::new(env.open_vnode(u64::from(p.0), incarnation)?);
        let stores = Stores::new(backend.clone(), Some(side.clone()));
        let ttl = |bucket: &[u8]| eddy_kv::node::ttl_of(&self.registry, bucket);
        eddy_vnode::side_build::build_if_needed(&stores, p, &ttl)?;
        Ok(Some(side))
    }

    /// Deletes every side store of partition `p` (its data is destroyed).
    pub fn destroy_side(&self, p: Partition) -> Result<(), StorageError> {
        match &self.side {
            Some(env) => env.destroy_partition(u64::from(p.0)),
            None => Ok(()),
        }
    }

    /// Deletes the side stores of every (partition, incarnation) but
    /// `live`'s: those a crash left behind their destroyed data.
    pub fn keep_sides(&self, live: &[(Partition, u64)]) -> Result<(), StorageError> {
        let Some(env) = &self.side else {
            return Ok(());
        };
        let live: Vec<(u64, u64)> = live.iter().map(|(p, i)| (u64::from(p.0), *i)).collect();
        for name in env.keep_only(&live)? {
            tracing::info!(
                keyspace = name,
                "deleted a side store left by a destroyed vnode"
            );
        }
        Ok(())
    }

    /// The directory holding every partition's directory.
    pub fn partitions_dir(&self) -> PathBuf {
        self.root.join("partitions")
    }

    /// The directory holding partition `p`'s own files (and actor id).
    pub fn partition_dir(&self, p: Partition) -> PathBuf {
        self.partitions_dir().join(p.0.to_string())
    }

    /// Opens partition `p`'s backend.
    pub fn open(&self, p: Partition) -> Result<Arc<dyn Backend>, StorageError> {
        Ok(match self.kind {
            StorageBackend::Bitcask => Arc::new(self.bitcask(p)?),
            StorageBackend::Lsm => Arc::new(self.lsm(p)?),
            StorageBackend::Memory => Arc::new(MemoryBackend::new(self.memory.clone())),
            StorageBackend::Multi => Arc::new(self.multi(p)?),
        })
    }

    fn bitcask(&self, p: Partition) -> Result<Bitcask, StorageError> {
        Bitcask::open(&self.partition_dir(p).join("bitcask"), self.bitcask.clone())
    }

    fn lsm(&self, p: Partition) -> Result<eddy_lsm::LsmBackend, StorageError> {
        let env = self.lsm.as_ref().ok_or(StorageError::Closed)?;
        env.open_partition(&format!("p{}", p.0))
    }

    /// bitcask as the default, with lsm and memory sub-backends that
    /// buckets choose with their `backend` property (read from the cached
    /// bucket props on each operation).
    fn multi(&self, p: Partition) -> Result<MultiBackend, StorageError> {
        let mut subs: std::collections::BTreeMap<String, Box<dyn Backend>> = Default::default();
        subs.insert("bitcask".into(), Box::new(self.bitcask(p)?));
        subs.insert("lsm".into(), Box::new(self.lsm(p)?));
        let memory = MemoryBackend::new(self.memory.clone());
        subs.insert("memory".into(), Box::new(memory));
        let registry = self.registry.clone();
        let chooser = Arc::new(move |storage_bucket: &[u8]| {
            // A value's segments live with the value.
            let owner = eddy_model::request::segments_owner(storage_bucket);
            let b = BucketRef::from_storage_bucket(owner.as_deref().unwrap_or(storage_bucket))?;
            let props = registry
                .bucket_props_shared(&b.bucket_type, &b.bucket)
                .ok()?;
            props.backend.clone()
        });
        Ok(MultiBackend::new(subs, MULTI_BACKENDS[0])?.with_chooser(chooser))
    }
}

/// How long a start waits for a stopping node to let go of a fjall
/// database's lock.
const UNLOCK_WAIT: Duration = Duration::from_secs(30);

/// Opens a fjall database with `open`, trying again while its lock is
/// held: a node that stopped releases the data directory's lock before
/// its process has dropped its last handle to the node-wide databases
/// (`eddy stop` returns at the first), so a start right after a stop may
/// find them locked for a moment.
fn once_unlocked<T>(mut open: impl FnMut() -> Result<T, StorageError>) -> Result<T, StorageError> {
    let deadline = Instant::now() + UNLOCK_WAIT;
    loop {
        match open() {
            Err(StorageError::Locked(dir)) if Instant::now() < deadline => {
                tracing::info!(dir = %dir.display(), "waiting for a stopping node to release");
                std::thread::sleep(Duration::from_millis(100));
            }
            outcome => return outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_still_held_by_a_stopping_node_is_opened_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let held = SideEnv::open(dir.path(), Default::default()).unwrap();
        assert!(matches!(
            SideEnv::open(dir.path(), Default::default()),
            Err(StorageError::Locked(_))
        ));
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let opened = once_unlocked(|| SideEnv::open(dir.path(), Default::default()));
        assert!(opened.is_ok(), "{:?}", opened.err());
        release.join().unwrap();
    }
}
