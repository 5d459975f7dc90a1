//! The node's settings as typed values, one sub-struct per area. They are
//! built once, when the configuration is loaded ([`super::build`]), from
//! the [`super::schema::Schema`] serde read; the rest of the binary reads
//! these fields and never looks a setting up by its name.
//!
//! Invariant: a `Settings` only exists for a configuration whose every
//! value fit its type (and the rules its type holds, such as a ring size
//! that is a power of two), so its fields need no further validation.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use eddy_bitcask::BitcaskConfig;
use eddy_kv::DeleteMode;
use eddy_lsm::LsmConfig;
use eddy_model::limits::{MetaLimits, MultiLimits};
use eddy_model::props::BucketProps;
use eddy_query::js::JsLimits;
use eddy_ring::NodeName;
use eddy_storage::memory::MemoryConfig;
use eddy_vnode::commitlog::LogOptions;

use super::values::choice;

/// Every setting of a node, typed.
#[derive(Clone, Debug)]
pub struct Settings {
    pub node: NodeSettings,
    pub listeners: Listeners,
    pub cluster: ClusterSettings,
    pub storage: StorageSettings,
    /// `commit_log.*`.
    pub commit_log: LogOptions,
    /// `buckets.default.*`: the default bucket type's properties.
    pub bucket_defaults: BucketProps,
    pub objects: ObjectLimits,
    /// `multi.*`: the bounds of multi-key requests (design note 016); the
    /// batch sizes are not settings and keep their defaults.
    pub multi: MultiLimits,
    /// `datatypes.cache_size`: memory for decoded big data type values.
    pub datatype_cache_bytes: usize,
    pub http: HttpSettings,
    pub protobuf: PbSettings,
    pub request_budget: RequestBudget,
    /// `javascript.*`: the MapReduce JavaScript pool's limits; `None` when
    /// JavaScript is off.
    pub javascript: Option<JsLimits>,
    /// `log.*`.
    pub log: LogSettings,
}

pub use super::schema::{LogConsole, LogLevel};

/// `log.*`: where the node's log goes.
#[derive(Clone, Debug)]
pub struct LogSettings {
    /// `log.level` (`EDDY_LOG`, a tracing filter, overrides it).
    pub level: LogLevel,
    /// `log.console`.
    pub console: LogConsole,
    /// `log.console.file`: relative to the config file's directory.
    pub file: PathBuf,
    /// `log.console.size`.
    pub size_bytes: u64,
    /// `log.console.rotation.keep`.
    pub keep: u32,
}

/// Who the node is and where it keeps its data.
#[derive(Clone, Debug)]
pub struct NodeSettings {
    /// `nodename`: `name@host`.
    pub nodename: NodeName,
    /// `platform_data_dir`.
    pub platform_data_dir: PathBuf,
    /// `ring_size`: a power of two from 8 to 1024.
    pub ring_size: u32,
    /// `delete_mode`.
    pub delete_mode: DeleteMode,
    /// `partition_repair`.
    pub partition_repair: PartitionRepair,
}

choice! {
    /// When partitions found damaged at start are repaired.
    pub enum PartitionRepair {
        /// At once, on a thread of its own.
        Auto = "auto",
        /// When `eddy admin repair` asks.
        Manual = "manual",
    }
}

/// `listener.*.internal`: where the APIs and other nodes reach the node.
#[derive(Clone, Copy, Debug)]
pub struct Listeners {
    pub http: SocketAddr,
    pub protobuf: SocketAddr,
    /// `listener.cluster.internal`: the node-to-node transport.
    pub cluster: SocketAddr,
}

/// How the node takes part in a cluster.
#[derive(Clone, Debug)]
pub struct ClusterSettings {
    /// `distributed_cookie`: the transport's cluster name.
    pub cookie: String,
    /// `transfer_limit`: concurrent handoffs.
    pub transfer_limit: u32,
}

choice! {
    /// The storage engine of every partition (`storage_backend`; its
    /// name is also the one `/stats` reports).
    pub enum StorageBackend {
        Bitcask = "bitcask",
        Lsm = "lsm",
        Memory = "memory",
        /// bitcask by default; each bucket's `backend` property may pick
        /// lsm or memory instead.
        Multi = "multi",
    }
}

impl StorageBackend {
    /// Whether some partition data is lost by every restart (the memory
    /// backend's, also as a sub-backend of multi).
    pub fn forgets_on_restart(self) -> bool {
        matches!(self, StorageBackend::Memory | StorageBackend::Multi)
    }
}

/// `storage_backend` and each engine's own settings.
#[derive(Clone, Debug)]
pub struct StorageSettings {
    pub backend: StorageBackend,
    /// `bitcask.*`.
    pub bitcask: BitcaskConfig,
    /// `lsm.*`.
    pub lsm: LsmConfig,
    /// `memory_backend.*`.
    pub memory: MemoryConfig,
}

/// `object.*`: what one object may hold.
#[derive(Clone, Copy, Debug)]
pub struct ObjectLimits {
    pub size_warn_bytes: usize,
    pub size_max_bytes: usize,
    pub siblings_warn: usize,
    pub siblings_max: usize,
    /// `object.{usermeta,links,index}.*`.
    pub meta: MetaLimits,
}

/// `http.*`.
#[derive(Clone, Copy, Debug)]
pub struct HttpSettings {
    pub body_bytes_max: usize,
    /// At least 1.
    pub connections_max: usize,
    /// `None` (`off`) waits forever.
    pub request_timeout: Option<Duration>,
    /// At least 1.
    pub backlog: u32,
}

/// `protobuf.*`.
#[derive(Clone, Copy, Debug)]
pub struct PbSettings {
    pub frame_bytes_max: usize,
    /// At least 1.
    pub connections_max: usize,
    /// `None` (`off`) waits forever.
    pub idle_timeout: Option<Duration>,
    /// `None` (`off`) waits forever.
    pub request_timeout: Option<Duration>,
    /// At least 1.
    pub backlog: u32,
}

/// `request_budget.*`: bytes of large requests received at once.
#[derive(Clone, Copy, Debug)]
pub struct RequestBudget {
    pub bytes_max: usize,
    pub wait: Duration,
}
