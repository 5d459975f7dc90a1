//! The node's side database: one fjall database (`<data>/side/`) whose
//! keyspaces are the side stores of the node's vnode incarnations, named
//! `side.<partition>.<incarnation>`.
//!
//! One database, not one per vnode, for the reasons of note 003: one
//! journal, one block cache and one set of worker threads for the node.
//! Writes reach fjall's journal buffer unsynced; [`SideEnv::persist`]
//! makes everything committed before it durable (the commit log's
//! checkpoint calls it with the backends' syncs).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use eddy_storage::StorageError;
use fjall::{Database, KeyspaceCreateOptions};

use crate::sequence::Sequence;
use crate::store::{SideDb, SideStore, engine};
use crate::swept::Marks;

/// Settings of the side database.
#[derive(Clone, Copy, Debug)]
pub struct SideConfig {
    /// fjall's block cache, shared by every side keyspace.
    pub cache_size_bytes: u64,
    /// Each keyspace's memtable.
    pub memtable_size_bytes: u64,
    /// The journals' size, at least 64 MiB: beyond it the oldest
    /// memtables are flushed, which bounds them together.
    pub journal_bytes: u64,
    /// A change log's segments roll past this size.
    pub change_segment_bytes: u64,
}

impl Default for SideConfig {
    fn default() -> Self {
        SideConfig {
            cache_size_bytes: 64 << 20,
            memtable_size_bytes: 8 << 20,
            journal_bytes: 128 << 20,
            change_segment_bytes: crate::changelog::SEGMENT_BYTES_DEFAULT,
        }
    }
}

/// The node's side database.
#[derive(Clone)]
pub struct SideEnv {
    side: SideDb,
    config: SideConfig,
    /// Where each vnode incarnation's change log is (`<partition>.<incarnation>/`).
    changes: PathBuf,
    /// The open stores' swept marks, for their compaction filters.
    marks: Marks,
}

impl SideEnv {
    /// Opens (or creates) the side database in `dir`.
    pub fn open(dir: &Path, config: SideConfig) -> Result<SideEnv, StorageError> {
        let marks = Marks::default();
        let filters = marks.clone();
        let db = Database::builder(dir)
            .cache_size(config.cache_size_bytes)
            .manual_journal_persist(true)
            .max_journaling_size(config.journal_bytes)
            .with_compaction_filter_factories(Arc::new(move |name: &str| {
                name.starts_with(KEYSPACE_PREFIX)
                    .then(|| filters.factory(name))
            }))
            .open()
            .map_err(|e| match e {
                fjall::Error::Locked => StorageError::Locked(dir.to_path_buf()),
                other => engine(other),
            })?;
        let changes = dir.join(CHANGES_DIR);
        std::fs::create_dir_all(&changes).map_err(|e| StorageError::io(&changes, e))?;
        Ok(SideEnv {
            side: SideDb::new(db),
            config,
            changes,
            marks,
        })
    }

    /// The side store of `partition`'s incarnation `incarnation`, created
    /// empty if it has none.
    pub fn open_vnode(&self, partition: u64, incarnation: u64) -> Result<SideStore, StorageError> {
        let memtable = self.config.memtable_size_bytes;
        let name = keyspace_name(partition, incarnation);
        let ks = self
            .side
            .db
            .keyspace(&name, || {
                KeyspaceCreateOptions::default().max_memtable_size(memtable)
            })
            .map_err(engine)?;
        let dir = self.changes.join(changes_name(partition, incarnation));
        let sequence = Sequence::open_with(&dir, self.config.change_segment_bytes);
        let sequence = sequence.map_err(|e| StorageError::io(&dir, e))?;
        let store = SideStore::open(self.side.clone(), ks, sequence)?;
        self.marks.register(&name, store.swept());
        Ok(store)
    }

    /// Whether `partition`'s incarnation `incarnation` has a side store.
    pub fn has_vnode(&self, partition: u64, incarnation: u64) -> bool {
        self.side
            .db
            .keyspace_exists(&keyspace_name(partition, incarnation))
    }

    /// Deletes every side store of `partition` (its data was destroyed);
    /// a handle still open reads on until dropped.
    pub fn destroy_partition(&self, partition: u64) -> Result<(), StorageError> {
        let prefix = format!("{KEYSPACE_PREFIX}{partition}.");
        self.destroy_where(|name| name.starts_with(&prefix))?;
        let prefix = format!("{partition}.");
        self.remove_changes_where(|name| name.starts_with(&prefix))
    }

    /// Deletes every side store but those of `live`'s (partition,
    /// incarnation) pairs: what a crash left between a vnode's data being
    /// destroyed and its side store.
    pub fn keep_only(&self, live: &[(u64, u64)]) -> Result<Vec<String>, StorageError> {
        let keep: Vec<String> = live.iter().map(|(p, i)| keyspace_name(*p, *i)).collect();
        let mut gone = Vec::new();
        self.destroy_where(|name| {
            let orphan = name.starts_with(KEYSPACE_PREFIX) && !keep.iter().any(|k| k == name);
            if orphan {
                gone.push(name.to_string());
            }
            orphan
        })?;
        let keep: Vec<String> = live.iter().map(|(p, i)| changes_name(*p, *i)).collect();
        self.remove_changes_where(|name| {
            let orphan = !keep.iter().any(|k| k == name);
            if orphan {
                gone.push(format!("{CHANGES_DIR}/{name}"));
            }
            orphan
        })?;
        Ok(gone)
    }

    /// Removes the change logs whose directory names `doomed` picks.
    fn remove_changes_where(
        &self,
        mut doomed: impl FnMut(&str) -> bool,
    ) -> Result<(), StorageError> {
        let io = |e| StorageError::io(&self.changes, e);
        for entry in std::fs::read_dir(&self.changes).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if doomed(&name) {
                std::fs::remove_dir_all(&path).map_err(|e| StorageError::io(&path, e))?;
            }
        }
        Ok(())
    }

    fn destroy_where(&self, mut doomed: impl FnMut(&str) -> bool) -> Result<(), StorageError> {
        for name in self.side.db.list_keyspace_names() {
            if doomed(&name) {
                let ks = self
                    .side
                    .db
                    .keyspace(&name, KeyspaceCreateOptions::default)
                    .map_err(engine)?;
                self.side.db.delete_keyspace(ks).map_err(engine)?;
                self.side.written();
                self.marks.forget(&name);
            }
        }
        Ok(())
    }

    /// Makes every change committed so far durable.
    pub fn persist(&self) -> Result<(), StorageError> {
        self.side.persist()
    }
}

/// The directory of the change logs, in the side database's: fjall reads
/// only its own folders there.
const CHANGES_DIR: &str = "changes";

fn changes_name(partition: u64, incarnation: u64) -> String {
    format!("{partition}.{incarnation}")
}

/// Every side store's keyspace name starts with this.
const KEYSPACE_PREFIX: &str = "side.";

fn keyspace_name(partition: u64, incarnation: u64) -> String {
    format!("{KEYSPACE_PREFIX}{partition}.{incarnation}")
}
