//! Merge: rewrites the live records of chosen immutable files into new
//! files, then deletes the old ones, without blocking reads or writes.
//!
//! Outputs take ids in the gap just below the active file, so replay puts
//! them after every file that existed when the merge began and before every
//! file written since. A merge copies only records the keydir still points
//! at (so the copy is the newest version), and when it is done moves a
//! keydir entry only if it still points at the old location.
//!
//! Deleted keys never come back (Riak's bitcask once resurrected them when
//! a merge dropped a tombstone while an older value survived in a file the
//! merge did not touch). A tombstone, a bucket-drop record, or an expired
//! value is dropped only when no surviving file could hold an older record
//! it hides: that is, when every file older than it is an input of this
//! merge. Otherwise it is kept (an expired value becomes a tombstone).
//!
//! A value record that holds a term set (written when bitcask kept index
//! entries) is copied without it: its terms field empty, the rest the
//! same. Every other record is copied byte for byte.
//!
//! Outputs are synced and renamed into place before any input is deleted,
//! and inputs are deleted oldest first, so a crash part-way leaves a suffix
//! of the inputs, in which every surviving value is still followed by the
//! tombstone that hides it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eddy_storage::{StorageError, retire};

use crate::config::BitcaskConfig;
use crate::datafile::{ActiveFile, DataFile, ID_STRIDE, data_path, hint_path, sync_dir, temp_path};
use crate::engine::{Inner, tstamp};
use crate::format::{FLAG_TOMBSTONE, NewRecord, Record};
use crate::format::{decode_drop_position, decode_record, encode_record};
use crate::hint::HintWriter;
use crate::keydir::Entry;
use crate::scan::{ScanEvent, scan};
use crate::state::{FileInfo, State};

/// What one merge did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Files merged (and deleted).
    pub input_files: usize,
    /// Files written.
    pub output_files: usize,
    /// Live records copied.
    pub records_copied: u64,
    /// Tombstones and bucket drops kept because an older file survives.
    pub tombstones_kept: u64,
    /// Records dropped: overwritten, deleted, expired, or no longer needed.
    pub records_dropped: u64,
    /// Bytes of input records read.
    pub bytes_read: u64,
    /// Bytes written to outputs.
    pub bytes_written: u64,
}

/// The files a merge takes.
struct Plan {
    inputs: Vec<Arc<DataFile>>,
    /// Smallest id of a file that survives the merge (`u32::MAX` if none).
    oldest_survivor: u32,
}

fn frag_percent(f: &FileInfo) -> u64 {
    (f.dead_bytes() * 100)
        .checked_div(f.total_bytes)
        .unwrap_or(0)
}

/// Chooses inputs among the files older than the active one.
fn select(inner: &Inner, force: bool) -> Plan {
    let active = inner.writer.lock().active.id();
    let st = inner.state.read();
    choose(&st.files, active, &inner.config, force)
}

/// Chooses inputs among `files` older than `active` (the active file's id
/// when it was read): every one with `force`, otherwise Riak's triggers
/// and thresholds. Files from `active` on are never taken: a rollover
/// after `active` was read adds a newer file that is the writer's now,
/// and a merge that took it would delete it under the writer.
fn choose(files: &BTreeMap<u32, FileInfo>, active: u32, c: &BitcaskConfig, force: bool) -> Plan {
    let closed = || files.range(..active);
    let triggered = force
        || closed().any(|(_, f)| {
            frag_percent(f) >= c.frag_merge_trigger as u64
                || f.dead_bytes() >= c.dead_bytes_merge_trigger
        });
    let chosen = |f: &FileInfo| {
        force
            || frag_percent(f) >= c.frag_threshold as u64
            || f.dead_bytes() >= c.dead_bytes_threshold
            || f.total_bytes < c.small_file_threshold
    };
    let mut plan = Plan {
        inputs: Vec::new(),
        oldest_survivor: u32::MAX,
    };
    for (id, f) in closed() {
        if triggered && chosen(f) {
            plan.inputs.push(f.file.clone());
        } else {
            plan.oldest_survivor = plan.oldest_survivor.min(*id);
        }
    }
    plan
}

/// True when the merge triggers fire now.
pub fn wanted(inner: &Inner) -> bool {
    !select(inner, false).inputs.is_empty()
}

/// One output file being written.
struct OutFile {
    data: ActiveFile,
    hint: Option<HintWriter>,
    kept_bytes: u64,
}

/// One key's change: `(start in bytes, bucket_len, key_len, from, to)`;
/// `to` is `None` when the key expired and is removed.
type KeyChange = (usize, u16, u16, (u32, u32), Option<Entry>);

/// Keys and locations the merge will move or remove, packed.
#[derive(Default)]
struct KeyList {
    bytes: Vec<u8>,
    items: Vec<KeyChange>,
}

impl KeyList {
    fn push(&mut self, r: &Record<'_>, from: (u32, u32), to: Option<Entry>) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(r.bucket);
        self.bytes.extend_from_slice(r.key);
        let (bl, kl) = (r.bucket.len() as u16, r.key.len() as u16);
        self.items.push((at, bl, kl, from, to));
    }

    fn apply(&self, st: &mut State, range: std::ops::Range<usize>) {
        for &(at, bl, kl, from, to) in &self.items[range] {
            let (bl, kl) = (bl as usize, kl as usize);
            let bucket = &self.bytes[at..at + bl];
            let key = &self.bytes[at + bl..at + bl + kl];
            match to {
                Some(e) => drop(st.move_if_at(bucket, key, from, e)),
                None => drop(st.remove_if_at(bucket, key, from)),
            }
        }
    }
}

struct Merger<'a> {
    inner: &'a Inner,
    plan: Plan,
    now: u64,
    next_id: u32,
    id_limit: u32,
    current: Option<OutFile>,
    done: Vec<OutFile>,
    changes: KeyList,
    damaged: BTreeSet<u32>,
    stats: MergeStats,
}

/// Runs one merge; blocks until it is done. See the module docs.
pub fn merge(inner: &Inner, force: bool) -> Result<MergeStats, StorageError> {
    let (stats, retired) = merge_locked(inner, force)?;
    for r in retired {
        r.free(inner);
    }
    Ok(stats)
}

/// An input a merge made obsolete: out of the file table, renamed to a
/// temporary name (which open deletes), to be freed once no reader holds
/// it.
struct Retired {
    file: Arc<DataFile>,
    path: std::path::PathBuf,
}

/// How long a retired input waits for its last reader before it is
/// unlinked whole (then the trim comes when that reader lets go).
const READERS_WAIT: Duration = Duration::from_secs(10);

impl Retired {
    /// Frees the file a slice at a time ([`eddy_storage::retire`]) once
    /// this is its only use, so a `discard` mount trims it in small
    /// pieces instead of stalling every fdatasync at once.
    fn free(self, inner: &Inner) {
        let Retired { file, path } = self;
        let deadline = Instant::now() + READERS_WAIT;
        while Arc::strong_count(&file) > 1 && Instant::now() < deadline && !inner.stop.requested() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let alone = Arc::strong_count(&file) == 1;
        drop(file);
        // A leftover keeps its temporary name, which the next open deletes.
        let _ = if alone {
            retire::shrink_away(&path, retire::SLICE_BYTES, retire::PAUSE, || {
                inner.stop.requested()
            })
        } else {
            std::fs::remove_file(&path)
        };
    }
}

fn merge_locked(inner: &Inner, force: bool) -> Result<(MergeStats, Vec<Retired>), StorageError> {
    let _one_at_a_time = inner.merge_lock.lock();
    inner.check_open()?;
    let plan = select(inner, force);
    if plan.inputs.is_empty() {
        return Ok((MergeStats::default(), Vec::new()));
    }
    let (next_id, id_limit) = output_ids(inner, plan.inputs.len())?;
    let mut m = Merger {
        inner,
        now: inner.now(),
        next_id,
        id_limit,
        current: None,
        done: Vec::new(),
        changes: KeyList::default(),
        damaged: BTreeSet::new(),
        stats: MergeStats {
            input_files: plan.inputs.len(),
            ..MergeStats::default()
        },
        plan,
    };
    let copied = m.copy_all();
    if let Err(e) = copied.and_then(|()| m.finish_outputs()) {
        m.abort();
        return Err(e);
    }
    m.commit()
}

/// The first output id and the (exclusive) limit: the gap below the active
/// file, above every existing file. Rolls the active file over to open a
/// fresh gap when the current one is nearly used up.
fn output_ids(inner: &Inner, inputs: usize) -> Result<(u32, u32), StorageError> {
    let mut w = inner.writer.lock();
    let mut last = inner.last_merge_id.lock();
    let gap_start = |active: u32| {
        let st = inner.state.read();
        let below = st.files.range(..active).next_back().map(|(id, _)| *id);
        below.unwrap_or(0).max(*last).max(active - ID_STRIDE) + 1
    };
    let mut first = gap_start(w.active.id());
    if first as u64 + inputs as u64 + 2 >= w.active.id() as u64 {
        inner.rollover(&mut w)?;
        first = gap_start(w.active.id());
    }
    *last = first;
    Ok((first, w.active.id()))
}

impl Merger<'_> {
    fn copy_all(&mut self) -> Result<(), StorageError> {
        let inputs = self.plan.inputs.clone();
        for input in &inputs {
            let len = input
                .file()
                .metadata()
                .map_err(|e| StorageError::io(&input.path, e))?
                .len();
            scan(input.file(), &input.path, len, |ev| match ev {
                ScanEvent::Record {
                    offset,
                    raw,
                    record,
                } => {
                    if self.inner.stop.requested() {
                        return Err(StorageError::Closed);
                    }
                    self.stats.bytes_read += raw.len() as u64;
                    self.handle(input.id, offset as u32, raw, &record)
                }
                ScanEvent::Damaged { .. } | ScanEvent::TornTail { .. } => {
                    self.damaged.insert(input.id);
                    Ok(())
                }
            })?;
        }
        Ok(())
    }

    /// True when no surviving file is older than file `id`.
    fn nothing_older_survives(&self, id: u32) -> bool {
        self.plan.oldest_survivor > id
    }

    fn handle(
        &mut self,
        id: u32,
        offset: u32,
        raw: &[u8],
        r: &Record<'_>,
    ) -> Result<(), StorageError> {
        let current = self.inner.state.read().keydir.get(r.bucket, r.key);
        if r.is_drop() {
            let (drop_file, _) = decode_drop_position(r.value).unwrap_or((u32::MAX, 0));
            return self.keep_unless(self.nothing_older_survives(drop_file), raw, r);
        }
        if r.is_tombstone() {
            let needed = current.is_none() && !self.nothing_older_survives(id);
            return self.keep_unless(!needed, raw, r);
        }
        let Some(e) = current.filter(|e| e.location() == (id, offset)) else {
            self.stats.records_dropped += 1;
            return Ok(());
        };
        if e.is_expired(self.now) {
            self.changes.push(r, (id, offset), None);
            return self.expire(id, r);
        }
        let stripped = match r.header.terms_len {
            0 => None,
            _ => Some(self.without_terms(r)?),
        };
        let raw = stripped.as_deref().unwrap_or(raw);
        let (file_id, new_offset) = self.append(raw, r, false)?;
        let moved = Entry {
            file_id,
            offset: new_offset,
            size: raw.len() as u32,
            ..e
        };
        self.changes.push(r, (id, offset), Some(moved));
        self.stats.records_copied += 1;
        Ok(())
    }

    fn keep_unless(
        &mut self,
        droppable: bool,
        raw: &[u8],
        r: &Record<'_>,
    ) -> Result<(), StorageError> {
        if droppable {
            self.stats.records_dropped += 1;
            return Ok(());
        }
        self.append(raw, r, true)?;
        self.stats.tombstones_kept += 1;
        Ok(())
    }

    /// The bytes of value record `r` with its terms field empty.
    fn without_terms(&self, r: &Record<'_>) -> Result<Vec<u8>, StorageError> {
        let rec = NewRecord {
            tstamp: r.header.tstamp,
            expiry: r.header.expiry,
            flags: r.header.flags,
            bucket: r.bucket,
            key: r.key,
            value: r.value,
        };
        let mut raw = Vec::new();
        encode_record(&mut raw, &rec).ok_or(StorageError::Config("key too long".into()))?;
        Ok(raw)
    }

    /// Drops an expired value, leaving a tombstone if an older file survives.
    fn expire(&mut self, id: u32, r: &Record<'_>) -> Result<(), StorageError> {
        self.stats.records_dropped += 1;
        if self.nothing_older_survives(id) {
            return Ok(());
        }
        let tombstone = NewRecord {
            tstamp: tstamp(self.now),
            expiry: 0,
            flags: FLAG_TOMBSTONE,
            bucket: r.bucket,
            key: r.key,
            value: &[],
        };
        let mut raw = Vec::new();
        encode_record(&mut raw, &tombstone).ok_or(StorageError::Config("key too long".into()))?;
        let record = decode_record(&raw).map_err(|reason| StorageError::Corrupt {
            path: self.inner.dir.clone(),
            offset: 0,
            reason,
        })?;
        self.append(&raw, &record, true)?;
        self.stats.tombstones_kept += 1;
        Ok(())
    }

    /// Appends a record to the current output, starting a new one if full.
    fn append(
        &mut self,
        raw: &[u8],
        r: &Record<'_>,
        kept: bool,
    ) -> Result<(u32, u32), StorageError> {
        let full = self.current.as_ref().is_some_and(|o| {
            !o.data.is_empty()
                && o.data.len() + raw.len() as u64 > self.inner.config.max_file_size_bytes
        });
        if full || self.current.is_none() {
            self.start_output()?;
        }
        let Some(out) = self.current.as_mut() else {
            return Err(StorageError::Closed);
        };
        let offset = out.data.append(raw) as u32;
        if let Some(hint) = out.hint.as_mut() {
            hint.add(offset, raw.len() as u32, r)?;
        }
        if kept {
            out.kept_bytes += raw.len() as u64;
        }
        if out.data.wants_flush() {
            out.data
                .flush()
                .map_err(|e| StorageError::io(&out.data.file.path, e))?;
        }
        self.stats.bytes_written += raw.len() as u64;
        Ok((out.data.id(), offset))
    }

    fn start_output(&mut self) -> Result<(), StorageError> {
        if self.next_id >= self.id_limit {
            return Err(StorageError::Config(
                "merge ran out of file ids in its gap".into(),
            ));
        }
        let id = self.next_id;
        self.next_id += 1;
        *self.inner.last_merge_id.lock() = id;
        let path = data_path(&self.inner.dir, id);
        let data = ActiveFile::create_staged(path, id, self.inner.config.max_file_size_bytes)?;
        let hint = HintWriter::create(&self.inner.dir, id)?;
        let out = OutFile {
            data,
            hint: Some(hint),
            kept_bytes: 0,
        };
        if let Some(prev) = self.current.replace(out) {
            self.done.push(prev);
        }
        Ok(())
    }

    /// Syncs every output and renames it (and its hint) into place.
    fn finish_outputs(&mut self) -> Result<(), StorageError> {
        self.done.extend(self.current.take());
        let dir = &self.inner.dir;
        for out in &mut self.done {
            let path = data_path(dir, out.data.id());
            let io = |e| StorageError::io(&path, e);
            out.data.flush().map_err(io)?;
            out.data.file.sync_data()?;
            std::fs::rename(temp_path(&path), &path).map_err(io)?;
        }
        for out in &mut self.done {
            if let Some(hint) = out.hint.take() {
                hint.finish(out.data.len())?;
            }
        }
        sync_dir(dir)?;
        self.stats.output_files = self.done.len();
        Ok(())
    }

    /// Deletes everything this merge wrote.
    fn abort(&mut self) {
        self.done.extend(self.current.take());
        for out in &self.done {
            let path = data_path(&self.inner.dir, out.data.id());
            for p in [
                temp_path(&path),
                path,
                temp_path(&hint_path(&self.inner.dir, out.data.id())),
            ] {
                let _ = std::fs::remove_file(p);
            }
        }
    }

    /// Publishes outputs, moves keydir entries, and retires the inputs
    /// (their hints deleted, their data files renamed to be freed later).
    fn commit(self) -> Result<(MergeStats, Vec<Retired>), StorageError> {
        let inner = self.inner;
        {
            let mut st = inner.state.write();
            for out in &self.done {
                let id = out.data.id();
                st.files.insert(id, FileInfo::new(out.data.file.clone()));
                let total = out
                    .data
                    .len()
                    .saturating_sub(crate::format::FILE_HEADER_BYTES as u64);
                st.add_merge_bytes(id, total, out.kept_bytes);
            }
        }
        const CHUNK: usize = 4096;
        for start in (0..self.changes.items.len()).step_by(CHUNK) {
            let end = (start + CHUNK).min(self.changes.items.len());
            self.changes.apply(&mut inner.state.write(), start..end);
        }
        let removable = self.removable_inputs();
        let removed: Vec<Arc<DataFile>> = {
            let mut st = inner.state.write();
            removable
                .iter()
                .filter_map(|id| st.files.remove(id))
                .map(|info| info.file)
                .collect()
        };
        let mut retired = Vec::with_capacity(removed.len());
        for file in removed {
            let _ = std::fs::remove_file(hint_path(&inner.dir, file.id));
            let path = temp_path(&file.path);
            std::fs::rename(&file.path, &path).map_err(|e| StorageError::io(&file.path, e))?;
            retired.push(Retired { file, path });
        }
        sync_dir(&inner.dir)?;
        Ok((self.stats, retired))
    }

    /// Inputs, oldest first, that may be deleted. A damaged input may still
    /// be referenced (its hint file listed a record the scan could not
    /// read); it is kept, and so is every newer input, since their dropped
    /// tombstones may hide values in it.
    fn removable_inputs(&self) -> Vec<u32> {
        let mut oldest_used = u32::MAX;
        if !self.damaged.is_empty() {
            self.inner.state.read().keydir.for_each(|_, _, e| {
                if self.damaged.contains(&e.file_id) {
                    oldest_used = oldest_used.min(e.file_id);
                }
            });
        }
        let mut ids: Vec<u32> = self.plan.inputs.iter().map(|f| f.id).collect();
        ids.retain(|id| *id < oldest_used);
        ids.sort_unstable();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file table of writer files `ids`, each holding one dead record.
    fn table(dir: &std::path::Path, ids: &[u32]) -> BTreeMap<u32, FileInfo> {
        let file = |id| ActiveFile::create(data_path(dir, id), id, 0).unwrap().file;
        let info = |id| FileInfo {
            file: file(id),
            total_bytes: 100,
            live_bytes: 0,
        };
        ids.iter().map(|&id| (id, info(id))).collect()
    }

    #[test]
    fn a_file_newer_than_the_active_one_read_is_never_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let s = ID_STRIDE;
        // The merge read the active id 2S; a rollover then added 3S, the
        // writer's file now.
        let files = table(dir.path(), &[s, 2 * s, 3 * s]);
        let config = BitcaskConfig::default();
        for force in [true, false] {
            let plan = choose(&files, 2 * s, &config, force);
            let inputs: Vec<u32> = plan.inputs.iter().map(|f| f.id).collect();
            assert_eq!(inputs, vec![s], "force {force}");
        }
    }
}
