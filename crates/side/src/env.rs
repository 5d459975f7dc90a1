//! The node's side database: one fjall database (`<data>/side/`) whose
//! keyspaces are the side stores of the node's vnode incarnations, named
//! `side.<partition>.<incarnation>`.
//!
//! One database, not one per vnode, for the reasons of note 003: one
//! journal, one block cache and one set of worker threads for the node.
//! Writes reach fjall's journal buffer unsynced; [`SideEnv::persist`]
//! makes everything committed before it durable (the commit log's
//! checkpoint calls it with the backends' syncs).

use std::path::Path;

use eddy_storage::StorageError;
use fjall::{Database, KeyspaceCreateOptions, PersistMode};

use crate::store::{SideStore, engine};

/// Settings of the side database.
#[derive(Clone, Copy, Debug)]
pub struct SideConfig {
    /// fjall's block cache, shared by every side keyspace.
    pub cache_size_bytes: u64,
    /// Each keyspace's memtable.
    pub memtable_size_bytes: u64,
}

impl Default for SideConfig {
    fn default() -> Self {
        SideConfig {
            cache_size_bytes: 64 << 20,
            memtable_size_bytes: 8 << 20,
        }
    }
}

/// The node's side database.
#[derive(Clone)]
pub struct SideEnv {
    db: Database,
    config: SideConfig,
}

impl SideEnv {
    /// Opens (or creates) the side database in `dir`.
    pub fn open(dir: &Path, config: SideConfig) -> Result<SideEnv, StorageError> {
        let db = Database::builder(dir)
            .cache_size(config.cache_size_bytes)
            .manual_journal_persist(true)
            .open()
            .map_err(|e| match e {
                fjall::Error::Locked => StorageError::Locked(dir.to_path_buf()),
                other => engine(other),
            })?;
        Ok(SideEnv { db, config })
    }

    /// The side store of `partition`'s incarnation `incarnation`, created
    /// empty if it has none; opening it starts a new sequence epoch.
    pub fn open_vnode(&self, partition: u64, incarnation: u64) -> Result<SideStore, StorageError> {
        let memtable = self.config.memtable_size_bytes;
        let ks = self
            .db
            .keyspace(&keyspace_name(partition, incarnation), || {
                KeyspaceCreateOptions::default().max_memtable_size(memtable)
            })
            .map_err(engine)?;
        SideStore::open(self.db.clone(), ks)
    }

    /// Whether `partition`'s incarnation `incarnation` has a side store.
    pub fn has_vnode(&self, partition: u64, incarnation: u64) -> bool {
        self.db
            .keyspace_exists(&keyspace_name(partition, incarnation))
    }

    /// Deletes a side store (its vnode was dropped).
    pub fn destroy_vnode(&self, store: SideStore) -> Result<(), StorageError> {
        self.db
            .delete_keyspace(store.into_keyspace())
            .map_err(engine)
    }

    /// Makes every change committed so far durable.
    pub fn persist(&self) -> Result<(), StorageError> {
        self.db.persist(PersistMode::SyncData).map_err(engine)
    }
}

fn keyspace_name(partition: u64, incarnation: u64) -> String {
    format!("side.{partition}.{incarnation}")
}
