//! Eddy's lsm backend: an ordered [`eddy_storage::Backend`] on fjall 3.
//!
//! One [`LsmEnv`] per node holds one fjall database (one journal, one block
//! cache, one set of background threads); each partition opened in it with
//! [`LsmEnv::open_partition`] is an [`LsmBackend`] made of two keyspaces:
//! objects, keyed so that byte order is `(bucket, key)` order and with large
//! values in blob files (key-value separation), and an aux keyspace with each
//! key's terms record and the index entries, keyed `(bucket, field, term,
//! key)`. [`LsmBackend::open`] opens one standalone partition with its own
//! environment. Design: docs/design/003-lsm.md.
//!
//! Invariants:
//! - An op's object, terms record and index entries are written in one fjall
//!   batch, under the key's stripe lock (`write.rs`), so index entries always
//!   match objects, after crashes too.
//! - Every stored value starts with an expiry header (`record.rs`); reads
//!   hide expired entries, and the compaction filter (`filter.rs`) turns them
//!   into tombstones.
//! - A write with `sync: true` returns only after a journal fsync that began
//!   after its commit (group commit: `eddy_storage::GroupCommit`).

mod backend;
mod config;
mod env;
mod error;
mod filter;
mod interval;
mod journal;
mod keys;
mod locks;
mod record;
mod scan;
mod write;

pub use backend::LsmBackend;
pub use config::LsmConfig;
pub use env::{LsmEnv, PARTITION_NAME_BYTES_MAX};
