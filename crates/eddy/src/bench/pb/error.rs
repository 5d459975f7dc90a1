//! Why a PB benchmark could not run. Failures of single requests during the
//! measured phase are not errors of the run: they are counted by kind and
//! reported.

use eddy_client::pb::PbClientError;

/// A PB benchmark that could not run to the end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PbBenchError {
    /// An option's value makes no sense for this run.
    #[error("invalid option: {0}")]
    InvalidOption(&'static str),
    /// The generator's async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The node did not answer a ping before the run.
    #[error("node at {addr} is not answering: {source}")]
    Unreachable {
        addr: String,
        #[source]
        source: PbClientError,
    },
    /// Loading the key space before a `get` or `mixed` run failed.
    #[error("preload failed at key {key}: {source}")]
    Preload {
        key: u64,
        #[source]
        source: PbClientError,
    },
    /// The loopback baseline could not run.
    #[error("loopback baseline failed: {0}")]
    Baseline(#[source] std::io::Error),
    /// A generator task panicked.
    #[error("a load generator task failed: {0}")]
    Task(String),
}
