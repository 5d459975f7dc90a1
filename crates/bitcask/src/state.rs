//! The in-memory state guarded by one lock: keydir and file table.
//!
//! Both the write path and open's replay change the state only through the
//! `apply_*` methods, so a replay of the data files rebuilds exactly the state
//! the writes built. Invariants:
//! - the keydir holds each key's latest record in replay order (file id,
//!   then offset);
//! - `files[id].live_bytes` is the sum of the sizes of keydir entries in
//!   file `id`, plus the tombstones and drop records a merge had to keep
//!   (those are needed, not dead);
//! - every keydir entry's file is in `files`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::datafile::{DataFile, ID_STRIDE};
use crate::keydir::{Entry, Keydir};

/// One data file and its byte counts.
pub struct FileInfo {
    pub file: Arc<DataFile>,
    pub total_bytes: u64,
    pub live_bytes: u64,
}

impl FileInfo {
    pub fn new(file: Arc<DataFile>) -> Self {
        FileInfo {
            file,
            total_bytes: 0,
            live_bytes: 0,
        }
    }

    /// Bytes held by overwritten, deleted or expired records.
    pub fn dead_bytes(&self) -> u64 {
        self.total_bytes.saturating_sub(self.live_bytes)
    }
}

/// True for files a merge wrote (their ids sit between writer files).
pub fn is_merge_output(file_id: u32) -> bool {
    !file_id.is_multiple_of(ID_STRIDE)
}

/// Keydir and file table.
#[derive(Default)]
pub struct State {
    pub keydir: Keydir,
    pub files: BTreeMap<u32, FileInfo>,
}

impl State {
    fn add_bytes(&mut self, file_id: u32, size: u32, live: bool) {
        if let Some(f) = self.files.get_mut(&file_id) {
            f.total_bytes += size as u64;
            if live {
                f.live_bytes += size as u64;
            }
        }
    }

    fn forget(&mut self, old: Option<Entry>) {
        if let Some(old) = old
            && let Some(f) = self.files.get_mut(&old.file_id)
        {
            f.live_bytes = f.live_bytes.saturating_sub(old.size as u64);
        }
    }

    /// A value record for `(bucket, key)`.
    pub fn apply_value(&mut self, bucket: &[u8], key: &[u8], entry: Entry) {
        self.add_bytes(entry.file_id, entry.size, true);
        let old = self.keydir.insert(bucket, key, entry);
        self.forget(old);
    }

    /// A tombstone record of `size` bytes in `file_id`.
    pub fn apply_tombstone(&mut self, bucket: &[u8], key: &[u8], file_id: u32, size: u32) {
        self.add_bytes(file_id, size, is_merge_output(file_id));
        let old = self.keydir.remove(bucket, key);
        self.forget(old);
    }

    /// A bucket-drop record of `size` bytes in `file_id`; see [`State::drop_before`].
    pub fn apply_drop_record(&mut self, file_id: u32, size: u32) {
        self.add_bytes(file_id, size, is_merge_output(file_id));
    }

    /// Removes every key of `bucket` whose latest record lies before
    /// `position` (a `(file_id, offset)` in replay order).
    pub fn drop_before(&mut self, bucket: &[u8], position: (u32, u32)) {
        let mut removed: Vec<Entry> = Vec::new();
        self.keydir.remove_where(
            |b, _, e| b == bucket && e.location() < position,
            |_, _, e| removed.push(*e),
        );
        for e in removed {
            self.forget(Some(e));
        }
    }

    /// Removes `(bucket, key)` if its entry is still at `location` (merge
    /// dropping an expired record). True when removed.
    pub fn remove_if_at(&mut self, bucket: &[u8], key: &[u8], location: (u32, u32)) -> bool {
        let old = self
            .keydir
            .remove_if(bucket, key, |e| e.location() == location);
        let removed = old.is_some();
        self.forget(old);
        removed
    }

    /// Points `(bucket, key)` at `new` if its entry is still at `location`
    /// (merge moving a record). True when moved.
    pub fn move_if_at(
        &mut self,
        bucket: &[u8],
        key: &[u8],
        location: (u32, u32),
        new: Entry,
    ) -> bool {
        let Some(old) = self.keydir.get(bucket, key) else {
            return false;
        };
        if !self.keydir.replace_if_at(bucket, key, location, new) {
            return false;
        }
        self.forget(Some(old));
        if let Some(f) = self.files.get_mut(&new.file_id) {
            f.live_bytes += new.size as u64;
        }
        true
    }

    /// Counts bytes a merge wrote to `file_id` (live ones are counted by
    /// [`State::move_if_at`]) and the tombstones and drops it kept.
    pub fn add_merge_bytes(&mut self, file_id: u32, total: u64, kept: u64) {
        if let Some(f) = self.files.get_mut(&file_id) {
            f.total_bytes += total;
            f.live_bytes += kept;
        }
    }
}
