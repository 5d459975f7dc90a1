//! Why a run or a comparison could not be done. Failures of single
//! requests during a run are not errors here: they are counted by kind
//! ([`crate::driver::Failure`]) and reported.

use std::path::PathBuf;

/// A run or comparison that could not start or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The config file could not be read.
    #[error("cannot read config {path}: {source}")]
    ReadConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML or has unknown keys or bad types.
    #[error("config {path}: {message}")]
    ParseConfig { path: PathBuf, message: String },
    /// A setting has a value the run cannot use.
    #[error("setting `{setting}`: {problem}")]
    Setting { setting: String, problem: String },
    /// No endpoint answered before the run.
    #[error("node at {endpoint} is not answering: {message}")]
    Unreachable { endpoint: String, message: String },
    /// A weighted operation was refused by the server when probed.
    #[error("operation `{op}` is not served by {endpoint}: {message}")]
    Unsupported {
        op: &'static str,
        endpoint: String,
        message: String,
    },
    /// A weighted operation failed when probed, for another reason than a
    /// refusal (a timeout, a closed connection).
    #[error("probe of operation `{op}` on {endpoint} failed: {message}")]
    ProbeFailed {
        op: &'static str,
        endpoint: String,
        message: String,
    },
    /// Setting the bucket's properties failed.
    #[error("cannot set the bucket properties: {0}")]
    BucketProps(String),
    /// A preload put failed.
    #[error("preload failed at key {key}: {message}")]
    Preload { key: u64, message: String },
    /// A results file could not be written or read.
    #[error("{path}: {source}")]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A chart could not be drawn.
    #[error("chart {path}: {message}")]
    Chart { path: PathBuf, message: String },
    /// A results directory given to `compare` is not one `run` wrote.
    #[error("{path} is not a bench result: {message}")]
    NotAResult { path: PathBuf, message: String },
    /// The loopback baseline could not run.
    #[error("loopback baseline failed: {0}")]
    Baseline(std::io::Error),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

impl BenchError {
    /// An [`BenchError::Output`] for `path`.
    pub fn output(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> BenchError {
        let path = path.into();
        move |source| BenchError::Output { path, source }
    }
}
