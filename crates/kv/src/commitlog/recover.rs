//! Replay at start: every record left in the log's segments, oldest first,
//! handed to the caller to apply to its backend.
//!
//! Invariant: only whole, intact records are applied, in log order; a torn
//! tail (a crash mid-write) ends a segment quietly, damage ends it with a
//! report. Segments stay on disk until the caller has synced the backends
//! and calls [`Recovered::remove`].

use std::path::{Path, PathBuf};

use super::record::Record;
use super::segment::{self, End};

/// What replay found.
#[derive(Debug, Default)]
pub struct Recovered {
    dir: PathBuf,
    /// Segments replayed, oldest first.
    pub segments: Vec<u64>,
    /// Records applied.
    pub records: u64,
    /// Segments that ended in damage: which, where and why.
    pub damaged: Vec<String>,
}

impl Recovered {
    /// The sequence number the next log starts at.
    pub fn next_seq(&self) -> u64 {
        self.segments.last().map_or(0, |s| s + 1)
    }

    /// Deletes the replayed segments. Call once the backends they were
    /// applied to have synced.
    pub fn remove(&self) -> std::io::Result<()> {
        for seq in &self.segments {
            std::fs::remove_file(segment::path(&self.dir, *seq))?;
        }
        Ok(())
    }
}

/// Why replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error("commit log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("commit log segment {seq}: applying a record: {reason}")]
    Apply { seq: u64, reason: String },
}

/// Applies every record in `dir`'s segments with `apply`, oldest first. A
/// missing directory holds no records.
pub fn recover(
    dir: &Path,
    mut apply: impl FnMut(&Record<'_>) -> Result<(), String>,
) -> Result<Recovered, RecoverError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RecoverError::Io { path, source }
    };
    let mut out = Recovered {
        dir: dir.to_path_buf(),
        ..Recovered::default()
    };
    if !dir.exists() {
        return Ok(out);
    }
    for seq in segment::list(dir).map_err(io(dir))? {
        let path = segment::path(dir, seq);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let mut failure = None;
        let end = segment::read(&bytes, |record| {
            if failure.is_none() {
                match apply(&record) {
                    Ok(()) => out.records += 1,
                    Err(reason) => failure = Some(reason),
                }
            }
        });
        if let Some(reason) = failure {
            return Err(RecoverError::Apply { seq, reason });
        }
        if let End::Damaged { offset, reason } = end {
            let text = format!("segment {seq}: {reason} at byte {offset}, rest skipped");
            tracing::error!("commit log: {text}");
            out.damaged.push(text);
        }
        out.segments.push(seq);
    }
    Ok(out)
}
