//! Why `eddy dev-cluster` stopped: each variant names the node and what to
//! do about it.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A failed `eddy dev-cluster` command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DevError {
    /// A file or directory of the dev cluster could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The `eddy` binary could not be found or started.
    #[error("cannot start {node}: {source}")]
    Spawn {
        node: String,
        #[source]
        source: std::io::Error,
    },
    /// A port a node needs is taken by another process.
    #[error(
        "port {addr} ({setting} of {node}) is in use by another process; stop it (or `eddy dev-cluster stop`) and try again"
    )]
    PortInUse {
        node: String,
        setting: &'static str,
        addr: SocketAddr,
    },
    /// More node directories exist than the command asked for.
    #[error(
        "{root} holds {existing} nodes; ask for at least {existing}, or run `eddy dev-cluster stop` and remove {root}"
    )]
    Surplus { root: PathBuf, existing: usize },
    /// `add` or the join found no dev cluster to work on.
    #[error("no dev cluster in {root}; start one with `eddy dev-cluster N`")]
    NoCluster { root: PathBuf },
    /// `add` would go past the last node.
    #[error("a dev cluster has at most {max} nodes; {root} already has {max}")]
    Full { root: PathBuf, max: u8 },
    /// A node exited before it answered.
    #[error("{node} exited ({status}) before it answered /ping; the end of {log}:\n{tail}")]
    Exited {
        node: String,
        status: String,
        log: PathBuf,
        tail: String,
    },
    /// A node did not answer /ping by the deadline.
    #[error("{node} did not answer /ping at {addr} within {secs} s; see {log}")]
    NotAnswering {
        node: String,
        addr: SocketAddr,
        secs: u64,
        log: PathBuf,
    },
    /// A node's admin request failed.
    #[error("{node}: {what} failed: {message}")]
    Admin {
        node: String,
        what: &'static str,
        message: String,
    },
    /// The ring did not settle by the deadline.
    #[error(
        "the cluster did not settle within {secs} s (ring ready, no transfers pending): {waiting}"
    )]
    NotSettled { secs: u64, waiting: String },
    /// A node did not exit by the deadline after SIGTERM.
    #[error("{node} (pid {pid}) did not stop within {secs} s after SIGTERM")]
    StopTimeout { node: String, pid: i32, secs: u64 },
}

impl DevError {
    /// The error for `path` failing with `source`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> DevError {
        let path = path.into();
        move |source| DevError::Io { path, source }
    }
}
