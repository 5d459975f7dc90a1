//! Opening each partition's backend as the configuration says.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig, MergeWindow, SyncStrategy};
use eddy_lsm::{LsmConfig, LsmEnv};
use eddy_ring::Partition;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::multi::MultiBackend;
use eddy_storage::{Backend, StorageError};

use eddy_kv::BucketRef;
use eddy_kv::types::BucketRegistry;

use crate::config::Config;

/// The sub-backends of a `multi` node, which a bucket's `backend` property
/// names; the first is the default.
pub const MULTI_BACKENDS: &[&str] = &["bitcask", "lsm", "memory"];

/// Opens partitions' backends; holds what partitions share (the lsm env).
pub struct Storage {
    kind: String,
    registry: Arc<BucketRegistry>,
    root: PathBuf,
    bitcask: BitcaskConfig,
    memory: MemoryConfig,
    lsm: Option<LsmEnv>,
}

impl Storage {
    /// Prepares to open backends of `storage_backend` under `root`.
    pub fn new(
        config: &Config,
        root: &Path,
        registry: Arc<BucketRegistry>,
    ) -> Result<Storage, StorageError> {
        let kind = config.text("storage_backend").to_string();
        let needs_lsm = kind == "lsm" || kind == "multi";
        let lsm = match needs_lsm {
            true => Some(LsmEnv::open(&root.join("lsm"), &lsm_config(config))?),
            false => None,
        };
        Ok(Storage {
            kind,
            registry,
            root: root.to_path_buf(),
            bitcask: bitcask_config(config),
            memory: memory_config(config),
            lsm,
        })
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
        Ok(match self.kind.as_str() {
            "bitcask" => Arc::new(self.bitcask(p)?),
            "lsm" => Arc::new(self.lsm(p)?),
            "memory" => Arc::new(MemoryBackend::new(self.memory.clone())),
            _ => Arc::new(self.multi(p)?),
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
            let b = BucketRef::from_storage_bucket(storage_bucket)?;
            let props = registry
                .bucket_props_shared(&b.bucket_type, &b.bucket)
                .ok()?;
            props.backend.clone()
        });
        Ok(MultiBackend::new(subs, MULTI_BACKENDS[0])?.with_chooser(chooser))
    }
}

fn expiry_secs(config: &Config, name: &str) -> u64 {
    config.duration_ms(name).map_or(0, |ms| ms / 1000)
}

fn bitcask_config(c: &Config) -> BitcaskConfig {
    let sync = match c.text("bitcask.sync.strategy") {
        "o_sync" => SyncStrategy::OSync,
        "interval" => SyncStrategy::Interval {
            ms: c.duration_ms("bitcask.sync.interval").unwrap_or(1000),
        },
        _ => SyncStrategy::None,
    };
    let merge_window = match c.text("bitcask.merge.policy") {
        "never" => MergeWindow::Never,
        "window" => MergeWindow::Hours {
            start: c.int("bitcask.merge.window.start") as u8,
            end: c.int("bitcask.merge.window.end") as u8,
        },
        _ => MergeWindow::Always,
    };
    BitcaskConfig {
        max_file_size_bytes: c.bytes("bitcask.max_file_size"),
        sync,
        expiry_secs: expiry_secs(c, "bitcask.expiry"),
        compression: c.flag("bitcask.compression"),
        frag_merge_trigger: c.int("bitcask.merge.triggers.fragmentation").min(100) as u8,
        dead_bytes_merge_trigger: c.bytes("bitcask.merge.triggers.dead_bytes"),
        frag_threshold: c.int("bitcask.merge.thresholds.fragmentation").min(100) as u8,
        dead_bytes_threshold: c.bytes("bitcask.merge.thresholds.dead_bytes"),
        small_file_threshold: c.bytes("bitcask.merge.thresholds.small_file"),
        merge_window,
        ..BitcaskConfig::default()
    }
}

fn lsm_config(c: &Config) -> LsmConfig {
    let threshold = c.bytes("lsm.kv_separation_threshold");
    LsmConfig {
        expiry_secs: expiry_secs(c, "lsm.expiry"),
        compression: c.flag("lsm.compression"),
        kv_separation_threshold_bytes: (threshold > 0)
            .then(|| threshold.min(u64::from(u32::MAX)) as u32),
        cache_size_bytes: c.bytes("lsm.cache_size"),
        ..LsmConfig::default()
    }
}

fn memory_config(c: &Config) -> MemoryConfig {
    let max = c.text("memory_backend.max_memory_per_vnode");
    MemoryConfig {
        max_memory_bytes: (max != "off").then(|| c.bytes("memory_backend.max_memory_per_vnode")),
        expiry_secs: expiry_secs(c, "memory_backend.ttl"),
        ..MemoryConfig::default()
    }
}
