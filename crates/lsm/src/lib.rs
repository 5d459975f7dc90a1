//! Eddy's lsm backend: an ordered [`eddy_storage::Backend`] on fjall 3.
//!
//! One [`LsmEnv`] per node holds one fjall database (one journal, one block
//! cache, one set of background threads); each partition opened in it with
//! [`LsmEnv::open_partition`] is an [`LsmBackend`] over one keyspace of
//! objects, keyed so that byte order is `(bucket, key)` order and with large
//! values in blob files (key-value separation). [`LsmBackend::open`] opens
//! one standalone partition with its own environment. The backend keeps no
//! secondary-index entries: a vnode keeps its 2i entries in its side store
//! (`eddy-side`, design note 027), so the backend's capabilities say
//! `indexes: false` and a write with index specs is refused. Design:
//! docs/design/003-lsm.md.
//!
//! Invariants:
//! - A batch is one fjall batch: all of its ops or none survive a crash.
//! - Every stored value starts with an expiry header (`record.rs`); reads
//!   hide expired objects, and the compaction filter (`filter.rs`) turns
//!   them into tombstones.
//! - A write with `sync: true` returns only after a journal fsync that began
//!   after its commit (group commit: `eddy_storage::GroupCommit`).
//! - No keyspace of an older format's index entries survives an open of
//!   the environment (`env.rs`).

mod backend;
mod config;
mod env;
mod error;
mod filter;
mod interval;
mod journal;
mod keys;
mod record;
mod scan;
mod write;

pub use backend::LsmBackend;
pub use config::LsmConfig;
pub use env::{LsmEnv, PARTITION_NAME_BYTES_MAX};
