//! Opening the engine a run measures: the one place that knows each engine's
//! constructor and configuration.
//!
//! Workloads see an [`Engine`]: the [`Backend`] contract plus the optional
//! engine-specific hooks some workloads need (a forced merge, hint files).
//! Adding an engine is one arm in [`open_backend`].
//!
//! Disk engines run with their defaults except where a benchmark must
//! control them: bitcask's background merge is off (the merge workload
//! forces one; elsewhere a merge would disturb the figures), and lz4 is on
//! only with `--compression` (lsm's own default is on).

use std::path::Path;
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig, MergeWindow, datafile};
use eddy_lsm::{LsmBackend, LsmConfig};
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{Backend, StorageError};

use super::error::BenchError;
use crate::cli::BackendKind;

/// Engine settings a run can choose.
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// Compress values with lz4 where the engine can.
    pub compression: bool,
    /// Data file rollover size, where the engine has one.
    pub max_file_size_bytes: Option<u64>,
}

/// What a compaction did, where the engine says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Bytes of records read from the files merged.
    pub input_bytes: Option<u64>,
    /// Bytes written to new files (the live records kept).
    pub output_bytes: Option<u64>,
}

/// An engine's forced compaction (bitcask's merge).
pub trait Merger: Send + Sync {
    /// Compacts every file that holds dead data, now.
    fn merge_now(&self) -> Result<MergeOutcome, BenchError>;
}

/// Hint files, for engines that write them to open faster.
#[derive(Clone)]
pub struct HintFiles {
    /// Writes every hint file the open engine still owes.
    pub write_pending: Arc<dyn Fn() -> Result<(), StorageError> + Send + Sync>,
    /// Deletes the hint files of a closed engine's directory, so the next
    /// open scans the data files; returns how many it deleted.
    pub remove: fn(&Path) -> Result<u64, BenchError>,
}

/// An opened engine.
pub struct Engine {
    /// The backend under test.
    pub backend: Arc<dyn Backend>,
    /// Forced compaction, for engines that have one.
    pub merger: Option<Arc<dyn Merger>>,
    /// Hint files, for engines that write them.
    pub hint_files: Option<HintFiles>,
}

impl Engine {
    fn plain(backend: impl Backend + 'static) -> Self {
        Engine {
            backend: Arc::new(backend),
            merger: None,
            hint_files: None,
        }
    }
}

/// Opens (or creates) an engine of `kind` with its data in `dir`.
pub fn open_backend(
    kind: BackendKind,
    dir: &Path,
    opts: &EngineOptions,
) -> Result<Engine, BenchError> {
    match kind {
        BackendKind::Memory => Ok(Engine::plain(MemoryBackend::new(MemoryConfig::default()))),
        BackendKind::Bitcask => open_bitcask(dir, opts),
        BackendKind::Lsm => open_lsm(dir, opts),
    }
}

fn open_bitcask(dir: &Path, opts: &EngineOptions) -> Result<Engine, BenchError> {
    let defaults = BitcaskConfig::default();
    let config = BitcaskConfig {
        compression: opts.compression,
        max_file_size_bytes: opts
            .max_file_size_bytes
            .unwrap_or(defaults.max_file_size_bytes),
        merge_window: MergeWindow::Never,
        ..defaults
    };
    let cask = Arc::new(Bitcask::open(dir, config)?);
    let hinted = Arc::clone(&cask);
    Ok(Engine {
        backend: cask.clone(),
        merger: Some(cask),
        hint_files: Some(HintFiles {
            write_pending: Arc::new(move || hinted.write_pending_hints()),
            remove: remove_bitcask_hints,
        }),
    })
}

impl Merger for Bitcask {
    fn merge_now(&self) -> Result<MergeOutcome, BenchError> {
        let stats = self.merge(true)?;
        Ok(MergeOutcome {
            input_bytes: Some(stats.bytes_read),
            output_bytes: Some(stats.bytes_written),
        })
    }
}

/// Deletes the hint file of every data file in `dir`.
fn remove_bitcask_hints(dir: &Path) -> Result<u64, BenchError> {
    let dir_err = |source| BenchError::Dir {
        path: dir.to_path_buf(),
        source,
    };
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).map_err(dir_err)? {
        let name = entry.map_err(dir_err)?.file_name();
        let Some(id) = data_file_id(&name.to_string_lossy()) else {
            continue;
        };
        let hint = datafile::hint_path(dir, id);
        if hint.exists() {
            std::fs::remove_file(&hint).map_err(dir_err)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The id of a bitcask data file name (`<id>.bitcask.data`).
fn data_file_id(name: &str) -> Option<u32> {
    name.strip_suffix(".bitcask.data")?.parse().ok()
}

fn open_lsm(dir: &Path, opts: &EngineOptions) -> Result<Engine, BenchError> {
    let config = LsmConfig {
        compression: opts.compression,
        ..LsmConfig::default()
    };
    let lsm = Arc::new(LsmBackend::open(dir, config)?);
    Ok(Engine {
        backend: lsm.clone(),
        merger: Some(lsm),
        hint_files: None,
    })
}

impl Merger for LsmBackend {
    /// A major compaction of both keyspaces; fjall does not count its bytes.
    fn merge_now(&self) -> Result<MergeOutcome, BenchError> {
        self.compact()?;
        Ok(MergeOutcome::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_file_ids_follow_bitcask_naming() {
        let path = datafile::data_path(Path::new("/d"), 42);
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(data_file_id(&name), Some(42));
        assert_eq!(data_file_id("0000000042.bitcask.hint"), None);
        assert_eq!(data_file_id("LOCK"), None);
    }
}
