//! A simulated node's disk: per partition, the objects a sync made
//! durable, under backends that keep their writes in memory (the page
//! cache) until then.
//!
//! A machine crash (power loss) turns the disk's power off: every backend
//! opened before it refuses all calls and its unsynced writes are gone.
//! The next process opens each partition from what was synced.
//!
//! Invariants:
//! - a partition's durable objects change only by a sync of a powered
//!   backend of it, or its destruction by a powered process;
//! - every backend opened gets a new actor and the partition's current
//!   incarnation (a destruction starts the next), as a node's storage
//!   gives them;
//! - index entries are not kept across a crash (the simulation writes
//!   none).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use eddy_kv::{VnodeFactory, VnodeParts};
use eddy_object::Actor;
use eddy_remote::handoff::PartitionStore;
use eddy_ring::Partition;
use eddy_storage::fold::{KeyVisitor, ObjectVisitor};
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{
    Backend, BackendStatus, Capabilities, FoldControl, FoldOptions, IndexQuery, StorageError,
    WriteBatch, WriteOptions,
};
use parking_lot::Mutex;

/// Objects by `(bucket, key)`.
type Objects = BTreeMap<(Vec<u8>, Vec<u8>), Vec<u8>>;

/// One node's disk.
pub struct Disk {
    /// What each partition on the disk synced last.
    durable: Mutex<BTreeMap<u32, Arc<Mutex<Objects>>>>,
    incarnations: Mutex<BTreeMap<u32, u64>>,
    /// Actors for every disk of the cluster: never one twice.
    actors: Arc<AtomicU64>,
    /// Power of the backends opened since the last crash.
    power: Mutex<Arc<AtomicBool>>,
}

impl Disk {
    pub fn new(actors: Arc<AtomicU64>) -> Arc<Disk> {
        Arc::new(Disk {
            durable: Mutex::default(),
            incarnations: Mutex::default(),
            actors,
            power: Mutex::new(Arc::new(AtomicBool::new(true))),
        })
    }

    /// The partitions with data on the disk (a process opens them all).
    pub fn partitions(&self) -> Vec<Partition> {
        self.durable.lock().keys().map(|p| Partition(*p)).collect()
    }

    /// Power loss: every open backend fails from now on, its unsynced
    /// writes lost; backends opened later work.
    pub fn power_off(&self) {
        let mut power = self.power.lock();
        power.store(false, Ordering::SeqCst);
        *power = Arc::new(AtomicBool::new(true));
    }

    /// Opens partition `p` from what it synced last.
    pub fn open(&self, p: Partition) -> VnodeParts {
        let durable = self.durable.lock().entry(p.0).or_default().clone();
        let live = MemoryBackend::new(MemoryConfig::default());
        for ((bucket, key), value) in durable.lock().iter() {
            live.put(bucket, key, value, &[], WriteOptions::NO_SYNC)
                .unwrap();
        }
        let backend = Arc::new(DiskBackend {
            live,
            durable,
            power: self.power.lock().clone(),
        });
        VnodeParts {
            backend,
            side: None,
            actor: Actor(self.actors.fetch_add(1, Ordering::SeqCst)),
            incarnation: *self.incarnations.lock().entry(p.0).or_insert(1),
        }
    }
}

impl VnodeFactory for Disk {
    fn open(&self, p: Partition) -> Result<VnodeParts, String> {
        Ok(Disk::open(self, p))
    }
}

/// The disk as the process running now destroys partitions on it: a
/// process that lost power destroys nothing.
struct Destroyer {
    disk: Arc<Disk>,
    power: Arc<AtomicBool>,
}

impl Disk {
    /// What handoff destroys partitions through, for the process running now.
    pub fn partition_store(self: &Arc<Self>) -> Arc<dyn PartitionStore> {
        Arc::new(Destroyer {
            disk: self.clone(),
            power: self.power.lock().clone(),
        })
    }
}

impl PartitionStore for Destroyer {
    fn destroy(&self, p: Partition) -> Result<(), String> {
        if !self.power.load(Ordering::SeqCst) {
            return Err("the disk lost power".into());
        }
        self.disk.durable.lock().remove(&p.0);
        *self.disk.incarnations.lock().entry(p.0).or_insert(1) += 1;
        Ok(())
    }
}

/// A partition's backend on a simulated disk.
struct DiskBackend {
    live: MemoryBackend,
    durable: Arc<Mutex<Objects>>,
    power: Arc<AtomicBool>,
}

impl DiskBackend {
    fn powered(&self) -> Result<&MemoryBackend, StorageError> {
        match self.power.load(Ordering::SeqCst) {
            true => Ok(&self.live),
            false => Err(StorageError::Closed),
        }
    }
}

impl Backend for DiskBackend {
    fn name(&self) -> &'static str {
        "simdisk"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            persistent: true,
            ..self.live.capabilities()
        }
    }

    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.powered()?.get(bucket, key)
    }

    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError> {
        self.powered()?.write(batch, opts)?;
        if opts.sync {
            self.sync()?;
        }
        Ok(())
    }

    fn fold_keys(&self, opts: &FoldOptions, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.powered()?.fold_keys(opts, f)
    }

    fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.powered()?.fold_objects(opts, f)
    }

    fn index_range(&self, query: &IndexQuery, f: &mut KeyVisitor<'_>) -> Result<(), StorageError> {
        self.powered()?.index_range(query, f)
    }

    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError> {
        self.powered()?.drop_bucket(bucket)
    }

    fn is_empty(&self) -> Result<bool, StorageError> {
        self.powered()?.is_empty()
    }

    /// Makes the durable objects what the page cache holds (under the
    /// durable lock, so two syncs cannot store out of order).
    fn sync(&self) -> Result<(), StorageError> {
        let mut durable = self.durable.lock();
        let mut synced = Objects::new();
        self.powered()?
            .fold_objects(&FoldOptions::all(), &mut |b, k, v| {
                synced.insert((b.to_vec(), k.to_vec()), v.to_vec());
                FoldControl::Continue
            })?;
        *durable = synced;
        Ok(())
    }

    fn status(&self) -> Result<BackendStatus, StorageError> {
        self.powered()?.status()
    }

    fn close(&self) -> Result<(), StorageError> {
        self.sync()?;
        self.live.close()
    }

    fn destroy(self: Box<Self>) -> Result<(), StorageError> {
        self.durable.lock().clear();
        Box::new(self.live).destroy()
    }
}
