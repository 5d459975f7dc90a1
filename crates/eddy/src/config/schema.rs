//! Every setting Eddy knows: its riak.conf name, default, type and meaning,
//! each written once, in [`schema!`] below. The macro makes [`Schema`], a
//! serde struct whose fields are renamed to the riak.conf names (so
//! deserializing it refuses an unknown setting and every value that does
//! not fit its type, naming the setting), and [`SETTINGS`], the same list
//! as data for `eddy config show`, defaults and error messages.

use super::settings::{PartitionRepair, StorageBackend};
use super::values::{
    Addr, DeleteModeValue, Dur, Hour, NVal, NodeNameValue, QuorumValue, RingSize, SettingValue,
    Size, choice,
};

/// How a setting's text is parsed and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Free text.
    Text,
    /// A non-negative integer.
    Int,
    /// A byte size: `512`, `64KB`, `10MB`, `2GB` (powers of 1024).
    Bytes,
    /// A duration: `250ms`, `3s`, `1.5m`, `1h`, `1d`.
    Duration,
    /// `on`/`off` (also `true`/`false`).
    Flag,
    /// `host:port`.
    Addr,
    /// One of the listed words.
    Choice(&'static [&'static str]),
    /// A quorum: `one`, `quorum`, `all` or an integer.
    Quorum,
    /// A byte size, or one of the listed words.
    BytesOr(&'static [&'static str]),
    /// A duration, or one of the listed words.
    DurationOr(&'static [&'static str]),
}

/// One setting.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// Its riak.conf name.
    pub name: &'static str,
    /// Its default, as text (read by the same parser as any other value).
    pub default: &'static str,
    /// The kind of value it takes.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by the test that changes every setting")
    )]
    pub kind: Kind,
    doc: &'static str,
}

impl Setting {
    /// What the setting means, one line.
    pub fn doc(&self) -> &'static str {
        self.doc.trim()
    }
}

/// Declares every setting: doc comment, Rust field, riak.conf name, type
/// and default.
macro_rules! schema {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident $name:literal : $ty:ty = $default:literal;
    )+) => {
        /// Every setting as its type reads it; deserialized from the
        /// effective texts ([`super::de`]) and turned into the typed
        /// [`super::Settings`] ([`super::build`]).
        #[derive(Clone, Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Schema {
            $( $(#[doc = $doc])+ #[serde(rename = $name)] pub $field: $ty, )+
        }

        /// Every setting, in the order `eddy config show` prints them.
        pub const SETTINGS: &[Setting] = &[
            $( Setting {
                name: $name,
                default: $default,
                kind: <$ty as SettingValue>::KIND,
                doc: concat!($($doc),+),
            }, )+
        ];
    };
}

schema! {
    /// This node's name, name@host.
    nodename "nodename": NodeNameValue = "eddy@127.0.0.1";
    /// Address of the HTTP API.
    listener_http_internal "listener.http.internal": Addr = "127.0.0.1:8098";
    /// Address of the Protocol Buffers API.
    listener_protobuf_internal "listener.protobuf.internal": Addr = "127.0.0.1:8087";
    /// Address other nodes reach this one at: gossip, vnode requests, handoff.
    listener_cluster_internal "listener.cluster.internal": Addr = "127.0.0.1:8099";
    /// Nodes talk only to nodes with the same cookie (Riak's distributed_cookie).
    distributed_cookie "distributed_cookie": String = "eddy";
    /// Handoffs this node sends or receives at once (Riak's transfer_limit).
    transfer_limit "transfer_limit": u32 = "2";
    /// Directory holding all of the node's data.
    platform_data_dir "platform_data_dir": String = "./eddy-data";
    /// Partitions in the ring (a power of two, 8 to 1024).
    ring_size "ring_size": RingSize = "64";
    /// Storage engine of every partition.
    storage_backend "storage_backend": StorageBackend = "bitcask";
    /// Replicas of each object.
    buckets_default_n_val "buckets.default.n_val": NVal = "3";
    /// Default read quorum.
    buckets_default_r "buckets.default.r": QuorumValue = "quorum";
    /// Default write quorum.
    buckets_default_w "buckets.default.w": QuorumValue = "quorum";
    /// Default durable-write quorum.
    buckets_default_dw "buckets.default.dw": QuorumValue = "quorum";
    /// Default delete quorum.
    buckets_default_rw "buckets.default.rw": QuorumValue = "quorum";
    /// Default primary read quorum.
    buckets_default_pr "buckets.default.pr": QuorumValue = "0";
    /// Default primary write quorum.
    buckets_default_pw "buckets.default.pw": QuorumValue = "0";
    /// A not-found reply counts towards r.
    buckets_default_notfound_ok "buckets.default.notfound_ok": bool = "on";
    /// Give up a read once a majority failed.
    buckets_default_basic_quorum "buckets.default.basic_quorum": bool = "off";
    /// Keep siblings on the default bucket type.
    buckets_default_allow_mult "buckets.default.allow_mult": bool = "off";
    /// Resolve by timestamp on the default type.
    buckets_default_last_write_wins "buckets.default.last_write_wins": bool = "off";
    /// When tombstones are reaped.
    delete_mode "delete_mode": DeleteModeValue = "3s";
    /// Repair partitions whose files were found damaged at start (auto), or wait for `eddy
    /// admin repair` (manual).
    partition_repair "partition_repair": PartitionRepair = "auto";
    /// Log a warning for larger objects.
    object_size_warning_threshold "object.size.warning_threshold": Size = "5MB";
    /// Refuse larger objects.
    object_size_maximum "object.size.maximum": Size = "50MB";
    /// Refuse objects with more usermeta (X-Riak-Meta-*) pairs.
    object_usermeta_entries_maximum "object.usermeta.entries.maximum": u64 = "1000";
    /// Refuse objects whose usermeta (X-Riak-Meta-*) pairs total more bytes.
    object_usermeta_size_maximum "object.usermeta.size.maximum": Size = "64KB";
    /// Refuse objects with more links.
    object_links_entries_maximum "object.links.entries.maximum": u64 = "1000";
    /// Refuse objects whose links total more bytes.
    object_links_size_maximum "object.links.size.maximum": Size = "64KB";
    /// Refuse objects with more secondary-index entries.
    object_index_entries_maximum "object.index.entries.maximum": u64 = "1000";
    /// Refuse objects whose secondary-index entries total more bytes.
    object_index_size_maximum "object.index.size.maximum": Size = "64KB";
    /// Log a warning for more siblings.
    object_siblings_warning_threshold "object.siblings.warning_threshold": u64 = "25";
    /// Refuse writes leaving more siblings.
    object_siblings_maximum "object.siblings.maximum": u64 = "100";
    /// Checkpoint (sync every backend) and start a new commit log segment beyond this size.
    commit_log_segment_size "commit_log.segment_size": Size = "64MB";
    /// What a dw reply waits for: its record in the log file (none, interval) or that
    /// record's fdatasync (o_sync).
    commit_log_sync_strategy "commit_log.sync.strategy": CommitLogSync = "interval";
    /// Sync the commit log at least this often (interval, o_sync).
    commit_log_sync_interval "commit_log.sync.interval": Dur = "1s";
    /// Roll to a new data file beyond this size.
    bitcask_max_file_size "bitcask.max_file_size": Size = "2GB";
    /// When merges may run.
    bitcask_merge_policy "bitcask.merge.policy": MergePolicy = "always";
    /// First hour of the merge window.
    bitcask_merge_window_start "bitcask.merge.window.start": Hour = "0";
    /// Last hour of the merge window.
    bitcask_merge_window_end "bitcask.merge.window.end": Hour = "23";
    /// Merge when a file is this % dead.
    bitcask_merge_triggers_fragmentation "bitcask.merge.triggers.fragmentation": u64 = "60";
    /// Merge when a file has this many dead bytes.
    bitcask_merge_triggers_dead_bytes "bitcask.merge.triggers.dead_bytes": Size = "512MB";
    /// Include files at least this % dead.
    bitcask_merge_thresholds_fragmentation "bitcask.merge.thresholds.fragmentation": u64 = "40";
    /// Include files with this many dead bytes.
    bitcask_merge_thresholds_dead_bytes "bitcask.merge.thresholds.dead_bytes": Size = "128MB";
    /// Include files smaller than this.
    bitcask_merge_thresholds_small_file "bitcask.merge.thresholds.small_file": Size = "10MB";
    /// Time to live of every object.
    bitcask_expiry "bitcask.expiry": Option<Dur> = "off";
    /// Compress values with lz4.
    bitcask_compression "bitcask.compression": bool = "off";
    /// Time to live of every object.
    lsm_expiry "lsm.expiry": Option<Dur> = "off";
    /// Compress blocks with lz4.
    lsm_compression "lsm.compression": bool = "on";
    /// Store larger values apart from keys.
    lsm_kv_separation_threshold "lsm.kv_separation_threshold": Size = "4KB";
    /// Block cache shared by all partitions.
    lsm_cache_size "lsm.cache_size": Size = "256MB";
    /// Evict oldest objects beyond this size.
    memory_backend_max_memory_per_vnode "memory_backend.max_memory_per_vnode": Option<Size> = "off";
    /// Time to live of every object.
    memory_backend_ttl "memory_backend.ttl": Option<Dur> = "off";
    /// Most keys or objects one multi-key request may name; a request naming more is
    /// refused.
    multi_keys_max "multi.keys_max": u64 = "1000";
    /// Batched vnode messages one multi-key request has in flight to each node at once: its
    /// keys run in waves that need at most this many (at least 1).
    multi_concurrency "multi.concurrency": u64 = "16";
    /// Memory (estimated) the vnodes may keep big data type values decoded in (sets and
    /// maps of 16KB and more), so that the next update of one does not decode it again; 0
    /// keeps none.
    datatypes_cache_size "datatypes.cache_size": Size = "256MB";
    /// Object bytes one multi-key answer may hold; further found objects are answered
    /// answer_too_large.
    multi_answer_bytes_max "multi.answer_bytes_max": Size = "64MB";
    /// Refuse larger PB frames.
    protobuf_frame_size_maximum "protobuf.frame_size_maximum": Size = "64MB";
    /// Refuse larger HTTP bodies.
    http_body_size_maximum "http.body_size_maximum": Size = "64MB";
    /// PB connections served at once; when full the longest idle one is closed for a
    /// newcomer.
    protobuf_connections_maximum "protobuf.connections_maximum": u64 = "4096";
    /// Close a PB connection waiting this long for its next request.
    protobuf_idle_timeout "protobuf.idle_timeout": Option<Dur> = "10m";
    /// Cut off a PB frame not received whole within this time.
    protobuf_request_timeout "protobuf.request_timeout": Option<Dur> = "60s";
    /// Listen backlog of the PB listener.
    protobuf_backlog "protobuf.backlog": u64 = "1024";
    /// HTTP connections served at once; when full the longest idle one is closed for a
    /// newcomer.
    http_connections_maximum "http.connections_maximum": u64 = "4096";
    /// Cut off an HTTP request whose head (or kept-alive wait for it), or body, takes
    /// longer.
    http_request_timeout "http.request_timeout": Option<Dur> = "60s";
    /// Listen backlog of the HTTP listener.
    http_backlog "http.backlog": u64 = "1024";
    /// Node-wide bytes of PB frames and HTTP bodies over 8KB being received at once.
    request_budget_maximum "request_budget.maximum": Size = "256MB";
    /// How long a request waits for room in the request budget before it is refused.
    request_budget_wait "request_budget.wait": Dur = "5s";
    /// Run MapReduce phases written in JavaScript (Riak's built-ins and user functions).
    javascript_enabled "javascript.enabled": bool = "on";
    /// Threads of the JavaScript pool, each with its own runtime; 0 is one per core.
    javascript_threads "javascript.threads": u64 = "0";
    /// Heap limit of each JavaScript runtime; a call past it fails with an error.
    javascript_heap_maximum "javascript.heap_maximum": Size = "64MB";
    /// The longest one JavaScript map or reduce call may run before it is stopped.
    javascript_call_timeout "javascript.call_timeout": Dur = "5s";
    /// Log verbosity.
    log_level "log.level": LogLevel = "info";
    /// Where the log goes: file (log.console.file), console (stderr), both, or off.
    log_console "log.console": LogConsole = "both";
    /// The log file; a relative path is read from the config file's directory (else the
    /// current one).
    log_console_file "log.console.file": String = "./log/console.log";
    /// Rotate the log file beyond this size: it becomes console.log.0, and older ones move
    /// up one.
    log_console_size "log.console.size": Size = "10MB";
    /// Rotated log files kept (console.log.0 to console.log.N-1).
    log_console_rotation_keep "log.console.rotation.keep": u32 = "5";
}

choice! {
    /// `commit_log.sync.strategy`: what a dw reply waits for.
    pub enum CommitLogSync {
        None = "none",
        Interval = "interval",
        OSync = "o_sync",
    }
}

choice! {
    /// `bitcask.merge.policy`.
    pub enum MergePolicy {
        Always = "always",
        Never = "never",
        Window = "window",
    }
}

choice! {
    /// `log.level`.
    pub enum LogLevel {
        Error = "error",
        Warn = "warn",
        Info = "info",
        Debug = "debug",
        Trace = "trace",
    }
}

choice! {
    /// `log.console`: where the log goes.
    pub enum LogConsole {
        /// `log.console.file`, rotated.
        File = "file",
        /// stderr.
        Console = "console",
        /// Both.
        Both = "both",
        /// Nowhere.
        Off = "off",
    }
}

/// The setting named `name`.
pub fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The environment variable that overrides `name`: upper case, dots as
/// underscores, prefixed with `EDDY_`.
pub fn env_name(name: &str) -> String {
    format!("EDDY_{}", name.to_uppercase().replace('.', "_"))
}
