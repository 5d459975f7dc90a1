//! Settings of an lsm environment and the partitions opened in it.
//!
//! Keyspace settings (compression, key-value separation, memtable size) are
//! fixed when a partition's keyspaces are created: fjall stores them and a
//! reopen with different values keeps the stored ones.

use std::sync::Arc;
use std::time::Duration;

use eddy_storage::{Clock, SyncPolicy, SystemClock};

/// Settings of an [`crate::LsmEnv`] and its partitions.
#[derive(Clone, Debug)]
pub struct LsmConfig {
    /// Instance-wide time to live in seconds (0 = none).
    pub expiry_secs: u64,
    /// lz4 for data blocks (of the deeper levels), blob files and the journal.
    pub compression: bool,
    /// Values of at least this many bytes go to blob files (fjall's key-value
    /// separation); `None` keeps every value in the tree.
    pub kv_separation_threshold_bytes: Option<u32>,
    /// Block cache shared by all partitions of the environment.
    pub cache_size_bytes: u64,
    /// Largest memtable of one partition keyspace before it is flushed.
    /// Memory across all partitions is bounded by fjall's journal cap
    /// (512 MiB): beyond it the oldest memtables are flushed.
    pub memtable_size_bytes: u64,
    /// Background flush and compaction threads (0 = fjall's default).
    pub worker_threads: usize,
    /// When the journal is fsynced, beyond writes that ask for it with
    /// `WriteOptions { sync: true }` (those are always durable on return,
    /// sharing fsyncs with concurrent writers). With `None` other writes
    /// wait in fjall's 8 KiB journal buffer until it fills or a sync
    /// flushes it: a process crash can lose that buffer, as bitcask's
    /// `none` loses its own. `OSync` makes every write durable on return;
    /// `Interval` has a background thread fsync every `sync_interval`.
    pub sync: SyncPolicy,
    /// The period of the `Interval` policy's fsync (at least 1 ms).
    pub sync_interval: Duration,
    /// Time source for expiry.
    pub clock: Arc<dyn Clock>,
}

impl Default for LsmConfig {
    fn default() -> Self {
        LsmConfig {
            expiry_secs: 0,
            compression: true,
            kv_separation_threshold_bytes: Some(4096),
            cache_size_bytes: 256 * 1024 * 1024,
            memtable_size_bytes: 64 * 1024 * 1024,
            worker_threads: 0,
            sync: SyncPolicy::None,
            sync_interval: Duration::from_secs(1),
            clock: Arc::new(SystemClock),
        }
    }
}
