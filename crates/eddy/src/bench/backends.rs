//! Opening the engine a run measures: the one place that knows each engine's
//! constructor and configuration.
//!
//! Workloads see an [`Engine`]: the [`Backend`] contract plus the optional
//! engine-specific hooks some workloads need (a forced merge). Adding an
//! engine is one arm in [`open_backend`].

use std::path::Path;
use std::sync::Arc;

use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};

use super::error::BenchError;
use crate::cli::BackendKind;

/// Engine settings a run can choose.
#[derive(Clone, Debug)]
#[expect(dead_code, reason = "read by the disk engines' arms, which land next")]
pub struct EngineOptions {
    /// Compress values with lz4 where the engine can.
    pub compression: bool,
    /// Data file rollover size, where the engine has one.
    pub max_file_size_bytes: Option<u64>,
    /// Read hint files at open, where the engine has them (false: scan data).
    pub use_hint_files: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            compression: false,
            max_file_size_bytes: None,
            use_hint_files: true,
        }
    }
}

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Bytes of data files read (the files merged).
    pub input_bytes: u64,
    /// Bytes of data files written (the live records kept).
    pub output_bytes: u64,
}

/// An engine's forced compaction (bitcask's merge).
pub trait Merger: Send + Sync {
    /// Compacts every file that holds dead data, now.
    fn merge_now(&self) -> Result<MergeOutcome, BenchError>;
}

/// An opened engine.
pub struct Engine {
    /// The backend under test.
    pub backend: Arc<dyn Backend>,
    /// Forced compaction, for engines that have one.
    pub merger: Option<Arc<dyn Merger>>,
    /// The engine writes hint files and honours `use_hint_files`.
    pub hint_files: bool,
}

impl Engine {
    fn plain(backend: impl Backend + 'static) -> Self {
        Engine {
            backend: Arc::new(backend),
            merger: None,
            hint_files: false,
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
