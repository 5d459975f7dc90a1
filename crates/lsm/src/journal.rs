//! Journal fsyncs that do not stop commits while the disk works.
//!
//! fjall's `Database::persist(SyncData)` holds the journal writer's lock
//! through the fdatasync, so no batch can commit during it, and group commit
//! could only gather the writers that came between two fsyncs. Instead the
//! leader of a group commit (`sync.rs`) calls [`JournalSync::fsync`]: under
//! fjall's lock it only hands the journal buffer to the OS
//! (`persist(Buffer)`, one `write`), then fdatasyncs the active journal file
//! through its own descriptor while other writers keep committing.
//!
//! Why syncing the newest journal file covers every batch committed before
//! the `persist(Buffer)` (fjall 3's journal layout, pinned by a test):
//! journals are `<dir>/<id>.jnl` with the active one the highest id, and
//! fjall rotates by fsyncing the old file (`SyncAll`) *before* it creates the
//! next. So if the newest file is still the one the batches went to, it is
//! synced here; if a rotation came in between, that file was synced by it.
//!
//! Invariant: after an fsync fails, every later call fails with
//! [`StorageError::Poisoned`], and [`JournalSync::check`] lets writes refuse
//! to go on.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use eddy_storage::StorageError;
use fjall::{Database, PersistMode};
use parking_lot::Mutex;

use crate::error::engine;

const JOURNAL_SUFFIX: &str = ".jnl";
/// Attempts when the newest journal disappears under us (it was sealed,
/// hence synced, and deleted after its memtables were flushed).
const ATTEMPTS_MAX: usize = 4;

/// The active journal's descriptor, reopened when fjall rotates.
pub struct JournalSync {
    dir: PathBuf,
    active: Mutex<Option<(u64, File)>>,
    failed: AtomicBool,
}

impl JournalSync {
    /// Syncs the journals of the fjall database in `dir`.
    pub fn new(dir: &Path) -> JournalSync {
        JournalSync {
            dir: dir.to_path_buf(),
            active: Mutex::new(None),
            failed: AtomicBool::new(false),
        }
    }

    /// Fails once an fsync has failed.
    pub fn check(&self) -> Result<(), StorageError> {
        if self.failed.load(Ordering::Acquire) {
            return Err(StorageError::Poisoned(
                "an earlier lsm journal fsync failed".into(),
            ));
        }
        Ok(())
    }

    /// Makes every batch committed before the call durable.
    pub fn fsync(&self, db: &Database) -> Result<(), StorageError> {
        self.check()?;
        db.persist(PersistMode::Buffer).map_err(engine)?;
        let result = self.sync_newest();
        if result.is_err() {
            self.failed.store(true, Ordering::Release);
        }
        result
    }

    fn sync_newest(&self) -> Result<(), StorageError> {
        let mut active = self.active.lock();
        for _ in 0..ATTEMPTS_MAX {
            let id = newest_journal_id(&self.dir)?;
            if active.as_ref().is_none_or(|(open, _)| *open != id) {
                let path = journal_path(&self.dir, id);
                match File::open(&path) {
                    Ok(file) => *active = Some((id, file)),
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(StorageError::io(path, e)),
                }
            }
            if let Some((id, file)) = active.as_ref() {
                return file
                    .sync_data()
                    .map_err(|e| StorageError::io(journal_path(&self.dir, *id), e));
            }
        }
        Err(StorageError::io(
            &self.dir,
            std::io::Error::new(ErrorKind::NotFound, "no stable active fjall journal"),
        ))
    }
}

fn journal_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id}{JOURNAL_SUFFIX}"))
}

/// Highest id of a `<id>.jnl` file in `dir`.
pub fn newest_journal_id(dir: &Path) -> Result<u64, StorageError> {
    let entries = std::fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))?;
    let mut newest = None;
    for entry in entries {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        let name = entry.file_name();
        let id = name
            .to_str()
            .and_then(|n| n.strip_suffix(JOURNAL_SUFFIX))
            .and_then(|n| n.parse::<u64>().ok());
        newest = newest.max(id);
    }
    newest.ok_or_else(|| {
        StorageError::io(
            dir,
            std::io::Error::new(ErrorKind::NotFound, "no fjall journal file"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fjall::KeyspaceCreateOptions;

    /// Pins the fjall 3 journal layout this module relies on.
    #[test]
    fn the_newest_journal_is_the_active_one_and_rotation_moves_on() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path())
            .journal_compression(fjall::CompressionType::None)
            .manual_journal_persist(true)
            .open()
            .unwrap();
        let keyspace = db.keyspace("k", KeyspaceCreateOptions::default).unwrap();
        let sync = JournalSync::new(dir.path());
        keyspace.insert("a", "1").unwrap();
        let first = newest_journal_id(dir.path()).unwrap();
        let before = std::fs::metadata(journal_path(dir.path(), first)).unwrap();
        sync.fsync(&db).unwrap();
        // fjall rotates the journal at a flush once it passed 64 MB.
        let big = vec![7u8; 1 << 20];
        for i in 0..66u32 {
            keyspace.insert(i.to_be_bytes(), &big).unwrap();
        }
        keyspace.rotate_memtable_and_wait().unwrap();
        keyspace.insert("b", "2").unwrap();
        let second = newest_journal_id(dir.path()).unwrap();
        assert!(second > first, "rotation starts a higher journal id");
        sync.fsync(&db).unwrap();
        assert_eq!(sync.active.lock().as_ref().map(|(id, _)| *id), Some(second));
        assert!(before.len() > 0);
        sync.check().unwrap();
    }
}
