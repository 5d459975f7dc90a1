//! Every setting Eddy knows: its riak.conf-style name, default, kind and
//! meaning. A setting not listed here is refused with a clear error.

/// How a setting's text is parsed and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Free text.
    Text,
    /// A non-negative integer.
    Int,
    /// A byte size: `512`, `64KB`, `10MB`, `2GB` (powers of 1024).
    Bytes,
    /// A duration: `250ms`, `3s`, `5m`, `1h`, `1d`.
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
    pub name: &'static str,
    pub default: &'static str,
    pub kind: Kind,
    pub doc: &'static str,
}

const fn s(name: &'static str, default: &'static str, kind: Kind, doc: &'static str) -> Setting {
    Setting {
        name,
        default,
        kind,
        doc,
    }
}

/// The storage engines a node can use.
pub const BACKENDS: &[&str] = &["bitcask", "lsm", "memory", "multi"];

/// Every setting, in the order `eddy config show` prints them.
pub const SETTINGS: &[Setting] = &[
    s(
        "nodename",
        "eddy@127.0.0.1",
        Kind::Text,
        "This node's name, name@host.",
    ),
    s(
        "listener.http.internal",
        "127.0.0.1:8098",
        Kind::Addr,
        "Address of the HTTP API.",
    ),
    s(
        "listener.protobuf.internal",
        "127.0.0.1:8087",
        Kind::Addr,
        "Address of the Protocol Buffers API.",
    ),
    s(
        "listener.cluster.internal",
        "127.0.0.1:8099",
        Kind::Addr,
        "Address other nodes reach this one at: gossip, vnode requests, handoff.",
    ),
    s(
        "distributed_cookie",
        "eddy",
        Kind::Text,
        "Nodes talk only to nodes with the same cookie (Riak's distributed_cookie).",
    ),
    s(
        "transfer_limit",
        "2",
        Kind::Int,
        "Handoffs this node sends or receives at once (Riak's transfer_limit).",
    ),
    s(
        "platform_data_dir",
        "./eddy-data",
        Kind::Text,
        "Directory holding all of the node's data.",
    ),
    s(
        "ring_size",
        "64",
        Kind::Int,
        "Partitions in the ring (a power of two, 8 to 1024).",
    ),
    s(
        "storage_backend",
        "bitcask",
        Kind::Choice(BACKENDS),
        "Storage engine of every partition.",
    ),
    s(
        "buckets.default.n_val",
        "3",
        Kind::Int,
        "Replicas of each object.",
    ),
    s(
        "buckets.default.r",
        "quorum",
        Kind::Quorum,
        "Default read quorum.",
    ),
    s(
        "buckets.default.w",
        "quorum",
        Kind::Quorum,
        "Default write quorum.",
    ),
    s(
        "buckets.default.dw",
        "quorum",
        Kind::Quorum,
        "Default durable-write quorum.",
    ),
    s(
        "buckets.default.rw",
        "quorum",
        Kind::Quorum,
        "Default delete quorum.",
    ),
    s(
        "buckets.default.pr",
        "0",
        Kind::Quorum,
        "Default primary read quorum.",
    ),
    s(
        "buckets.default.pw",
        "0",
        Kind::Quorum,
        "Default primary write quorum.",
    ),
    s(
        "buckets.default.notfound_ok",
        "on",
        Kind::Flag,
        "A not-found reply counts towards r.",
    ),
    s(
        "buckets.default.basic_quorum",
        "off",
        Kind::Flag,
        "Give up a read once a majority failed.",
    ),
    s(
        "buckets.default.allow_mult",
        "off",
        Kind::Flag,
        "Keep siblings on the default bucket type.",
    ),
    s(
        "buckets.default.last_write_wins",
        "off",
        Kind::Flag,
        "Resolve by timestamp on the default type.",
    ),
    s(
        "delete_mode",
        "3s",
        Kind::DurationOr(&["keep", "immediate"]),
        "When tombstones are reaped.",
    ),
    s(
        "partition_repair",
        "auto",
        Kind::Choice(&["auto", "manual"]),
        "Repair partitions whose files were found damaged at start (auto), or wait for `eddy admin repair` (manual).",
    ),
    s(
        "object.size.warning_threshold",
        "5MB",
        Kind::Bytes,
        "Log a warning for larger objects.",
    ),
    s(
        "object.size.maximum",
        "50MB",
        Kind::Bytes,
        "Refuse larger objects.",
    ),
    s(
        "object.usermeta.entries.maximum",
        "1000",
        Kind::Int,
        "Refuse objects with more usermeta (X-Riak-Meta-*) pairs.",
    ),
    s(
        "object.usermeta.size.maximum",
        "64KB",
        Kind::Bytes,
        "Refuse objects whose usermeta (X-Riak-Meta-*) pairs total more bytes.",
    ),
    s(
        "object.links.entries.maximum",
        "1000",
        Kind::Int,
        "Refuse objects with more links.",
    ),
    s(
        "object.links.size.maximum",
        "64KB",
        Kind::Bytes,
        "Refuse objects whose links total more bytes.",
    ),
    s(
        "object.index.entries.maximum",
        "1000",
        Kind::Int,
        "Refuse objects with more secondary-index entries.",
    ),
    s(
        "object.index.size.maximum",
        "64KB",
        Kind::Bytes,
        "Refuse objects whose secondary-index entries total more bytes.",
    ),
    s(
        "object.siblings.warning_threshold",
        "25",
        Kind::Int,
        "Log a warning for more siblings.",
    ),
    s(
        "object.siblings.maximum",
        "100",
        Kind::Int,
        "Refuse writes leaving more siblings.",
    ),
    s(
        "commit_log.segment_size",
        "64MB",
        Kind::Bytes,
        "Checkpoint (sync every backend) and start a new commit log segment beyond this size.",
    ),
    s(
        "commit_log.sync.strategy",
        "interval",
        Kind::Choice(&["none", "interval", "o_sync"]),
        "What a dw reply waits for: its record in the log file (none, interval) or that record's fdatasync (o_sync).",
    ),
    s(
        "commit_log.sync.interval",
        "1s",
        Kind::Duration,
        "Sync the commit log at least this often (interval, o_sync).",
    ),
    s(
        "bitcask.max_file_size",
        "2GB",
        Kind::Bytes,
        "Roll to a new data file beyond this size.",
    ),
    s(
        "bitcask.sync.strategy",
        "none",
        Kind::Choice(&["none", "o_sync", "interval"]),
        "When bitcask syncs on its own.",
    ),
    s(
        "bitcask.sync.interval",
        "1s",
        Kind::Duration,
        "Sync period with the interval strategy.",
    ),
    s(
        "bitcask.merge.policy",
        "always",
        Kind::Choice(&["always", "never", "window"]),
        "When merges may run.",
    ),
    s(
        "bitcask.merge.window.start",
        "0",
        Kind::Int,
        "First hour of the merge window.",
    ),
    s(
        "bitcask.merge.window.end",
        "23",
        Kind::Int,
        "Last hour of the merge window.",
    ),
    s(
        "bitcask.merge.triggers.fragmentation",
        "60",
        Kind::Int,
        "Merge when a file is this % dead.",
    ),
    s(
        "bitcask.merge.triggers.dead_bytes",
        "512MB",
        Kind::Bytes,
        "Merge when a file has this many dead bytes.",
    ),
    s(
        "bitcask.merge.thresholds.fragmentation",
        "40",
        Kind::Int,
        "Include files at least this % dead.",
    ),
    s(
        "bitcask.merge.thresholds.dead_bytes",
        "128MB",
        Kind::Bytes,
        "Include files with this many dead bytes.",
    ),
    s(
        "bitcask.merge.thresholds.small_file",
        "10MB",
        Kind::Bytes,
        "Include files smaller than this.",
    ),
    s(
        "bitcask.expiry",
        "off",
        Kind::DurationOr(&["off"]),
        "Time to live of every object.",
    ),
    s(
        "bitcask.compression",
        "off",
        Kind::Flag,
        "Compress values with lz4.",
    ),
    s(
        "bitcask.index_memory.maximum_per_vnode",
        "16MB",
        Kind::BytesOr(&["off"]),
        "Refuse writes that would grow a partition's in-memory 2i index beyond this.",
    ),
    s(
        "lsm.expiry",
        "off",
        Kind::DurationOr(&["off"]),
        "Time to live of every object.",
    ),
    s(
        "lsm.compression",
        "on",
        Kind::Flag,
        "Compress blocks with lz4.",
    ),
    s(
        "lsm.kv_separation_threshold",
        "4KB",
        Kind::Bytes,
        "Store larger values apart from keys.",
    ),
    s(
        "lsm.cache_size",
        "256MB",
        Kind::Bytes,
        "Block cache shared by all partitions.",
    ),
    s(
        "memory_backend.max_memory_per_vnode",
        "off",
        Kind::BytesOr(&["off"]),
        "Evict oldest objects beyond this size.",
    ),
    s(
        "memory_backend.ttl",
        "off",
        Kind::DurationOr(&["off"]),
        "Time to live of every object.",
    ),
    s(
        "multi.keys_max",
        "1000",
        Kind::Int,
        "Most keys or objects one multi-key request may name; a request naming more is refused.",
    ),
    s(
        "multi.concurrency",
        "16",
        Kind::Int,
        "Batched vnode messages one multi-key request has in flight to each node at once: its keys run in waves that need at most this many (at least 1).",
    ),
    s(
        "datatypes.cache_size",
        "256MB",
        Kind::Bytes,
        "Memory (estimated) the vnodes may keep big data type values decoded in (sets and maps of 16KB and more), so that the next update of one does not decode it again; 0 keeps none.",
    ),
    s(
        "multi.answer_bytes_max",
        "64MB",
        Kind::Bytes,
        "Object bytes one multi-key answer may hold; further found objects are answered answer_too_large.",
    ),
    s(
        "protobuf.frame_size_maximum",
        "64MB",
        Kind::Bytes,
        "Refuse larger PB frames.",
    ),
    s(
        "http.body_size_maximum",
        "64MB",
        Kind::Bytes,
        "Refuse larger HTTP bodies.",
    ),
    s(
        "protobuf.connections_maximum",
        "4096",
        Kind::Int,
        "PB connections served at once; when full the longest idle one is closed for a newcomer.",
    ),
    s(
        "protobuf.idle_timeout",
        "10m",
        Kind::DurationOr(&["off"]),
        "Close a PB connection waiting this long for its next request.",
    ),
    s(
        "protobuf.request_timeout",
        "60s",
        Kind::DurationOr(&["off"]),
        "Cut off a PB frame not received whole within this time.",
    ),
    s(
        "protobuf.backlog",
        "1024",
        Kind::Int,
        "Listen backlog of the PB listener.",
    ),
    s(
        "http.connections_maximum",
        "4096",
        Kind::Int,
        "HTTP connections served at once; when full the longest idle one is closed for a newcomer.",
    ),
    s(
        "http.request_timeout",
        "60s",
        Kind::DurationOr(&["off"]),
        "Cut off an HTTP request whose head (or kept-alive wait for it), or body, takes longer.",
    ),
    s(
        "http.backlog",
        "1024",
        Kind::Int,
        "Listen backlog of the HTTP listener.",
    ),
    s(
        "request_budget.maximum",
        "256MB",
        Kind::Bytes,
        "Node-wide bytes of PB frames and HTTP bodies over 8KB being received at once.",
    ),
    s(
        "request_budget.wait",
        "5s",
        Kind::Duration,
        "How long a request waits for room in the request budget before it is refused.",
    ),
    s(
        "javascript.enabled",
        "on",
        Kind::Flag,
        "Run MapReduce phases written in JavaScript (Riak's built-ins and user functions).",
    ),
    s(
        "javascript.threads",
        "0",
        Kind::Int,
        "Threads of the JavaScript pool, each with its own runtime; 0 is one per core.",
    ),
    s(
        "javascript.heap_maximum",
        "64MB",
        Kind::Bytes,
        "Heap limit of each JavaScript runtime; a call past it fails with an error.",
    ),
    s(
        "javascript.call_timeout",
        "5s",
        Kind::Duration,
        "The longest one JavaScript map or reduce call may run before it is stopped.",
    ),
    s(
        "log.level",
        "info",
        Kind::Choice(&["error", "warn", "info", "debug", "trace"]),
        "Log verbosity.",
    ),
];

/// The setting named `name`.
pub fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The environment variable that overrides `name`: upper case, dots as
/// underscores, prefixed with `EDDY_`.
pub fn env_name(name: &str) -> String {
    format!("EDDY_{}", name.to_uppercase().replace('.', "_"))
}
