//! Open-time recovery: rebuilds keydir and file table from the data
//! directory, and reports what it had to skip. The term sets that records
//! and hint entries written when bitcask kept index entries may hold are
//! read past.
//!
//! Files replay in id order; each uses its hint file when that is valid and
//! otherwise a scan of the data file. Temporary files (unfinished merges and
//! hints) and hint files without a data file are deleted. A torn tail of the
//! newest data file is truncated; damage anywhere else is skipped and
//! reported, never loaded. Bucket drops apply after all files are replayed,
//! each removing its bucket's keys whose latest record precedes the drop, so
//! the outcome does not depend on where a merge moved the drop record.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use eddy_storage::{RecoveryReport, StorageError};

use crate::datafile::{DataFile, FileKind, ID_STRIDE, classify, hint_path};
use crate::format::decode_drop_position;
use crate::format::{FILE_HEADER_BYTES, FLAG_DROP, FLAG_TOMBSTONE, KIND_DATA, check_file_header};
use crate::hint::{HintEntry, for_each_entry, read_hint};
use crate::keydir::{Entry, expiry_to_u32};
use crate::scan::{ScanEvent, scan};
use crate::state::{FileInfo, State};

/// A damaged byte range of a data file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    pub file: PathBuf,
    pub offset: u64,
    pub len: u64,
}

/// A file open did not use, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub file: PathBuf,
    pub reason: &'static str,
}

/// What recovery found when the instance was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Data files replayed.
    pub data_files: usize,
    /// Of those, files loaded from their hint file.
    pub hints_used: usize,
    /// Records (or hint entries) replayed.
    pub records: u64,
    /// Byte ranges skipped because they held no record with a valid CRC.
    pub skipped: Vec<Damage>,
    /// Torn tails cut off the newest data file.
    pub truncated: Vec<Damage>,
    /// Hint files that failed validation (their data files were scanned).
    pub rejected_hints: Vec<Rejected>,
    /// Data files not loaded at all (bad header); left on disk.
    pub rejected_files: Vec<Rejected>,
    /// Leftover temporary files deleted.
    pub removed_temp_files: Vec<PathBuf>,
}

impl OpenReport {
    /// True when nothing was skipped, truncated or rejected.
    pub fn is_clean(&self) -> bool {
        self.skipped.is_empty()
            && self.truncated.is_empty()
            && self.rejected_hints.is_empty()
            && self.rejected_files.is_empty()
    }

    /// The engine-neutral summary the node logs and counts. A file cut to
    /// nothing because a crash left it shorter than its header held no
    /// record, so it is not counted as lost.
    pub fn summary(&self) -> RecoveryReport {
        let mut out = RecoveryReport::default();
        let note = |out: &mut RecoveryReport, file: &PathBuf| {
            if !out.files.contains(file) {
                out.files.push(file.clone());
            }
        };
        for d in &self.skipped {
            out.ranges_skipped += 1;
            out.bytes_skipped += d.len;
            note(&mut out, &d.file);
        }
        let lost = |d: &&Damage| d.offset > 0 || d.len >= FILE_HEADER_BYTES as u64;
        for d in self.truncated.iter().filter(lost) {
            out.tails_truncated += 1;
            out.bytes_truncated += d.len;
            note(&mut out, &d.file);
        }
        for r in &self.rejected_files {
            out.files_rejected += 1;
            note(&mut out, &r.file);
        }
        out.hints_rejected = self.rejected_hints.len() as u64;
        out
    }
}

/// The result of recovery.
pub struct Recovered {
    pub state: State,
    pub report: OpenReport,
    /// Id for the new active file.
    pub next_writer_id: u32,
    /// Replayed files without a valid hint file.
    pub unhinted: Vec<u32>,
}

type Drops = HashMap<Vec<u8>, (u32, u32)>;

struct Replay<'a> {
    dir: &'a Path,
    state: State,
    drops: Drops,
    report: OpenReport,
    unhinted: Vec<u32>,
}

/// Rebuilds the state of the instance in `dir`.
pub fn recover(dir: &Path) -> Result<Recovered, StorageError> {
    let (data_ids, hint_ids, removed) = list_dir(dir)?;
    let mut r = Replay {
        dir,
        state: State::default(),
        drops: Drops::new(),
        report: OpenReport {
            removed_temp_files: removed,
            ..OpenReport::default()
        },
        unhinted: Vec::new(),
    };
    for (i, &id) in data_ids.iter().enumerate() {
        let newest = i + 1 == data_ids.len();
        r.load_file(id, newest, hint_ids.contains(&id))?;
    }
    for (bucket, position) in std::mem::take(&mut r.drops) {
        r.state.drop_before(&bucket, position);
    }
    r.state.keydir.shrink_to_fit();
    let max_id = data_ids.last().copied().unwrap_or(0);
    let next_writer_id = (max_id / ID_STRIDE + 1)
        .checked_mul(ID_STRIDE)
        .ok_or_else(|| StorageError::Config("data file ids exhausted".into()))?;
    Ok(Recovered {
        state: r.state,
        report: r.report,
        next_writer_id,
        unhinted: r.unhinted,
    })
}

/// Data file ids in order, hint file ids, and the temporary files deleted.
type Listing = (Vec<u32>, BTreeSet<u32>, Vec<PathBuf>);

/// Lists the directory, deleting temporary files and hint files whose data
/// file is gone.
fn list_dir(dir: &Path) -> Result<Listing, StorageError> {
    let io = |e| StorageError::io(dir, e);
    let (mut data, mut hints, mut removed) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        match classify(&name.to_string_lossy()) {
            Some(FileKind::Data(id)) => drop(data.insert(id)),
            Some(FileKind::Hint(id)) => drop(hints.insert(id)),
            Some(FileKind::Temp) => {
                std::fs::remove_file(entry.path()).map_err(io)?;
                removed.push(entry.path());
            }
            Some(FileKind::Lock) | None => {}
        }
    }
    for orphan in hints.difference(&data).copied().collect::<Vec<_>>() {
        std::fs::remove_file(hint_path(dir, orphan)).map_err(io)?;
        hints.remove(&orphan);
    }
    Ok((data.into_iter().collect(), hints, removed))
}

impl Replay<'_> {
    fn load_file(&mut self, id: u32, newest: bool, has_hint: bool) -> Result<(), StorageError> {
        let file = Arc::new(DataFile::open(self.dir, id)?);
        let len = file.flushed_len();
        if len < FILE_HEADER_BYTES as u64 {
            // Only a crash right after creating a file leaves it this short.
            std::fs::remove_file(&file.path).map_err(|e| StorageError::io(&file.path, e))?;
            let damage = Damage {
                file: file.path.clone(),
                offset: 0,
                len,
            };
            self.report.truncated.push(damage);
            return Ok(());
        }
        let header = file.read_at(0, FILE_HEADER_BYTES)?;
        if let Err(reason) = check_file_header(&header, KIND_DATA, id) {
            let path = file.path.clone();
            self.report
                .rejected_files
                .push(Rejected { file: path, reason });
            return Ok(());
        }
        self.state.files.insert(id, FileInfo::new(file.clone()));
        self.report.data_files += 1;
        self.replay(&file, len, newest, has_hint)?;
        // Mapped only now, after a torn tail was cut: a mapped file is
        // never truncated.
        file.map(file.flushed_len());
        Ok(())
    }

    /// Replays `file` from its hint file when that checks out, else by a scan.
    fn replay(
        &mut self,
        file: &DataFile,
        len: u64,
        newest: bool,
        has_hint: bool,
    ) -> Result<(), StorageError> {
        let id = file.id;
        if has_hint {
            match read_hint(self.dir, id, len) {
                Ok(bytes) => return self.replay_hint(id, &bytes),
                Err(reason) => self.report.rejected_hints.push(Rejected {
                    file: hint_path(self.dir, id),
                    reason,
                }),
            }
        }
        self.unhinted.push(id);
        self.replay_scan(file, len, newest)
    }

    fn replay_hint(&mut self, id: u32, bytes: &[u8]) -> Result<(), StorageError> {
        self.report.hints_used += 1;
        let entries = crate::hint::entry_count(bytes);
        self.state
            .keydir
            .reserve(usize::try_from(entries).unwrap_or(0));
        let corrupt = |reason| StorageError::Corrupt {
            path: hint_path(self.dir, id),
            offset: 0,
            reason,
        };
        let mut result = Ok(());
        for_each_entry(bytes, |e: HintEntry<'_>| {
            let r = self.apply(id, &e);
            result = r;
            r
        })
        .map_err(corrupt)?;
        result.map_err(corrupt)
    }

    fn replay_scan(&mut self, file: &DataFile, len: u64, newest: bool) -> Result<(), StorageError> {
        let mut torn = None;
        scan(file.file(), &file.path, len, |ev| {
            match ev {
                ScanEvent::Record {
                    offset,
                    raw,
                    record: r,
                } => {
                    let e = HintEntry {
                        offset: offset as u32,
                        size: raw.len() as u32,
                        tstamp: r.header.tstamp,
                        expiry: r.header.expiry,
                        flags: r.header.flags,
                        bucket: r.bucket,
                        key: r.key,
                        drop_position: if r.is_drop() { r.value } else { &[] },
                    };
                    self.apply(file.id, &e)
                        .map_err(|reason| StorageError::Corrupt {
                            path: file.path.clone(),
                            offset,
                            reason,
                        })?;
                }
                ScanEvent::Damaged { offset, len } => self.report.skipped.push(Damage {
                    file: file.path.clone(),
                    offset,
                    len,
                }),
                ScanEvent::TornTail { offset, len } => torn = Some((offset, len)),
            }
            Ok(())
        })?;
        let Some((offset, len)) = torn else {
            return Ok(());
        };
        let damage = Damage {
            file: file.path.clone(),
            offset,
            len,
        };
        if newest {
            file.truncate(offset)?;
            self.report.truncated.push(damage);
        } else {
            self.report.skipped.push(damage);
        }
        Ok(())
    }

    /// Applies one record (as a hint entry) of file `id` to the state.
    fn apply(&mut self, id: u32, e: &HintEntry<'_>) -> Result<(), &'static str> {
        self.report.records += 1;
        if e.flags & FLAG_TOMBSTONE != 0 {
            self.state.apply_tombstone(e.bucket, e.key, id, e.size);
        } else if e.flags & FLAG_DROP != 0 {
            let position = decode_drop_position(e.drop_position)?;
            let latest = self.drops.entry(e.bucket.to_vec()).or_insert(position);
            *latest = (*latest).max(position);
            self.state.apply_drop_record(id, e.size);
        } else {
            let entry = Entry {
                file_id: id,
                offset: e.offset,
                size: e.size,
                tstamp: e.tstamp,
                expiry: expiry_to_u32(e.expiry),
            };
            self.state.apply_value(e.bucket, e.key, entry);
        }
        Ok(())
    }
}
