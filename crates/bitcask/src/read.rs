//! The read path: get, folds, status.
//!
//! Reads look the key up under the state's read lock, clone the file's
//! `Arc`, release the lock and then copy the record out of the file's map
//! (no syscall; `pread` when the file is not mapped, the write buffer when
//! the record is not flushed yet), so merges and writes are never blocked
//! by readers' page faults or I/O. A merge may delete a file a reader still
//! holds: the open handle and the map keep its bytes readable. Every record
//! read is CRC-checked and its bucket and key compared before its value is
//! returned.
//!
//! Folds snapshot the selected keys and locations under the read lock, then
//! read values without it, in file order (bitcask is unordered).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use eddy_storage::{
    BackendStatus, FoldControl, FoldOptions, KeyVisitor, ObjectVisitor, StorageError,
};

use crate::datafile::DataFile;
use crate::engine::Inner;
use crate::format::decode_record;
use crate::format::decode_value;
use crate::keydir::Entry;

/// Keys and locations selected by a fold, packed into one buffer.
struct Snapshot {
    bytes: Vec<u8>,
    items: Vec<(usize, u16, u16, Entry)>,
    files: HashMap<u32, Arc<DataFile>>,
}

impl Snapshot {
    fn item(&self, i: usize) -> (&[u8], &[u8], Entry) {
        let (at, bl, kl, e) = self.items[i];
        let (bl, kl) = (bl as usize, kl as usize);
        (
            &self.bytes[at..at + bl],
            &self.bytes[at + bl..at + bl + kl],
            e,
        )
    }
}

impl Inner {
    /// Copies the raw record `e` points at out of the write buffer or, by
    /// `pread`, out of `file` (for records the map does not serve).
    fn read_record(&self, file: &DataFile, e: &Entry) -> Result<Vec<u8>, StorageError> {
        let end = e.offset as u64 + e.size as u64;
        if end > file.flushed_len() {
            let w = self.writer.lock();
            if w.active.id() == file.id
                && let Some(bytes) = w.active.read_buffered(e.offset as u64, e.size as usize)
            {
                return Ok(bytes);
            }
        }
        file.read_at(e.offset as u64, e.size as usize)
    }

    /// The value of the record `e` points at, checked against its key.
    fn read_value(
        &self,
        file: &DataFile,
        e: &Entry,
        bucket: &[u8],
        key: &[u8],
    ) -> Result<Vec<u8>, StorageError> {
        if let Some(raw) = file.mapped(e.offset as u64, e.size as usize) {
            return value_of(file, e, raw, (bucket, key));
        }
        let raw = self.read_record(file, e)?;
        value_of(file, e, &raw, (bucket, key))
    }

    /// The live value of `(bucket, key)`.
    pub fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.check_open()?;
        let (e, file) = {
            let st = self.state.read();
            let Some(e) = st.keydir.get(bucket, key) else {
                return Ok(None);
            };
            // Read the clock only for keys that can expire.
            if e.expiry != 0 && e.is_expired(self.now()) {
                return Ok(None);
            }
            let Some(info) = st.files.get(&e.file_id) else {
                return Ok(None);
            };
            (e, info.file.clone())
        };
        self.read_value(&file, &e, bucket, key).map(Some)
    }

    fn snapshot(&self, opts: &FoldOptions) -> Result<Snapshot, StorageError> {
        self.check_open()?;
        let now = self.now();
        let st = self.state.read();
        // Sized for every key up front (a fold of a whole partition is the
        // usual one): growing these by doubling copies them again and again.
        let mut snap = Snapshot {
            bytes: Vec::with_capacity(st.keydir.key_bytes()),
            items: Vec::with_capacity(st.keydir.len()),
            files: st
                .files
                .iter()
                .map(|(id, f)| (*id, f.file.clone()))
                .collect(),
        };
        st.keydir.for_each(|bucket, key, e| {
            if e.is_expired(now) || !opts.admits(bucket, key) {
                return;
            }
            let at = snap.bytes.len();
            snap.bytes.extend_from_slice(bucket);
            snap.bytes.extend_from_slice(key);
            snap.items
                .push((at, bucket.len() as u16, key.len() as u16, *e));
        });
        Ok(snap)
    }

    /// Calls `f` for each live key selected by `opts`, in no order.
    pub fn fold_keys(
        &self,
        opts: &FoldOptions,
        f: &mut KeyVisitor<'_>,
    ) -> Result<(), StorageError> {
        let snap = self.snapshot(opts)?;
        for i in 0..snap.items.len() {
            let (bucket, key, _) = snap.item(i);
            if f(bucket, key) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Calls `f` for each live object selected by `opts`, in file order.
    /// Records failing their CRC are skipped and counted.
    pub fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        let mut snap = self.snapshot(opts)?;
        snap.items.sort_unstable_by_key(|item| item.3.location());
        for i in 0..snap.items.len() {
            let (bucket, key, e) = snap.item(i);
            let Some(file) = snap.files.get(&e.file_id) else {
                continue;
            };
            let value = match self.read_value(file, &e, bucket, key) {
                Ok(v) => v,
                Err(StorageError::Corrupt { .. }) => {
                    self.corrupt_reads.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(other) => return Err(other),
            };
            if f(bucket, key, &value) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    /// True when no live, unexpired key exists.
    pub fn is_empty(&self) -> Result<bool, StorageError> {
        self.check_open()?;
        let now = self.now();
        let mut any = false;
        self.state.read().keydir.for_each(|_, _, e| {
            any |= !e.is_expired(now);
        });
        Ok(!any)
    }

    /// Keys, bytes and files.
    pub fn status(&self) -> Result<BackendStatus, StorageError> {
        self.check_open()?;
        let st = self.state.read();
        let live_bytes = st.files.values().map(|f| f.live_bytes).sum();
        let dead_bytes = st.files.values().map(|f| f.dead_bytes()).sum();
        let extra = vec![
            ("keydir_bytes".into(), st.keydir.memory_bytes().to_string()),
            (
                "corrupt_reads".into(),
                self.corrupt_reads.load(Ordering::Relaxed).to_string(),
            ),
            (
                "syncs".into(),
                self.syncs.load(Ordering::Relaxed).to_string(),
            ),
            (
                "flush_failures".into(),
                self.flush_failures.load(Ordering::Relaxed).to_string(),
            ),
        ];
        Ok(BackendStatus {
            keys: st.keydir.len() as u64,
            live_bytes,
            dead_bytes,
            files: st.files.len() as u64,
            extra,
        })
    }
}

/// The value held by `raw`, the record `e` in `file` points at, after its
/// CRC, bucket and key are checked.
fn value_of(
    file: &DataFile,
    e: &Entry,
    raw: &[u8],
    (bucket, key): (&[u8], &[u8]),
) -> Result<Vec<u8>, StorageError> {
    let corrupt = |reason| StorageError::Corrupt {
        path: file.path.clone(),
        offset: e.offset as u64,
        reason,
    };
    let r = decode_record(raw).map_err(corrupt)?;
    if r.bucket != bucket || r.key != key || r.is_tombstone() || r.is_drop() {
        return Err(corrupt("record does not hold the key the keydir expects"));
    }
    decode_value(r.header.flags, r.value.to_vec()).map_err(corrupt)
}
