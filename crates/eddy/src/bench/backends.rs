//! Opening the engine a run measures: the one place that knows each engine's
//! constructor and configuration.
//!
//! Workloads see an [`Engine`]: the [`Backend`] contract plus the optional
//! engine-specific hooks some workloads need (a forced merge). Adding an
//! engine is one arm in [`open_backend`].

use std::path::Path;
use std::sync::Arc;

use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{Backend, StorageError};

use super::error::BenchError;
use crate::cli::BackendKind;

/// Engine settings a run can choose.
#[derive(Clone, Debug, Default)]
#[expect(dead_code, reason = "read by the disk engines' arms, which land next")]
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
    let _ = (dir, opts);
    match kind {
        BackendKind::Memory => Ok(Engine::plain(MemoryBackend::new(MemoryConfig::default()))),
    }
}
