//! Why a benchmark run failed.

use std::path::PathBuf;

use eddy_storage::StorageError;

/// A benchmark that could not run to the end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// An option's value makes no sense for this run.
    #[error("invalid option: {0}")]
    InvalidOption(&'static str),
    /// The workload needs something this backend does not have.
    #[error("workload {workload} does not apply to the {backend} backend: {why}")]
    Unsupported {
        workload: String,
        backend: String,
        why: &'static str,
    },
    /// The data directory given with `--dir` already holds files.
    #[error("data directory {0} is not empty")]
    DirNotEmpty(PathBuf),
    /// The data directory could not be made, listed or removed.
    #[error("data directory {path}: {source}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The backend failed an operation.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The load generator refused or could not run a phase.
    #[error(transparent)]
    Run(#[from] eddy_bench::BenchError),
    /// Requests of a phase failed (a key written earlier not found, an
    /// engine error), counted by kind.
    #[error("requests failed: {0}")]
    Failed(String),
    /// A full index scan did not see one entry per loaded key.
    #[error("index scan saw {seen} entries, expected {expected}")]
    IndexCount { expected: u64, seen: u64 },
    /// A benchmark thread panicked.
    #[error("a benchmark thread panicked")]
    ThreadPanicked,
}
