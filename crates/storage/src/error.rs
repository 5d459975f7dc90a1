//! Errors a backend returns.

use std::path::PathBuf;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// An input exceeded a limit from [`crate::limits`].
    #[error("{what} of {size} bytes exceeds the limit of {max}")]
    TooLarge {
        what: &'static str,
        size: usize,
        max: usize,
    },
    /// A read or write of a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A stored record failed its checksum or could not be decoded; it is not
    /// returned.
    #[error("corrupt record in {path} at offset {offset}: {reason}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: &'static str,
    },
    /// An earlier fsync (or a write of data already handed to the kernel)
    /// failed, so the instance refuses writes rather than pretend they are
    /// durable; the message names that failure.
    #[error("backend refuses writes until restarted: {0}")]
    Poisoned(String),
    /// A resource the write needs (descriptors, disk space, memory) ran
    /// out. Transient: the write was refused whole, and writes succeed
    /// again once the resource is back (design note 008).
    #[error("{resource} exhausted: {detail}")]
    Exhausted {
        resource: crate::exhausted::Resource,
        /// What was being done, and the OS error.
        detail: String,
    },
    /// A write gave index specs to a backend that keeps no index entries
    /// (its [`crate::Capabilities::indexes`] is false); nothing was written.
    #[error("the {backend} backend keeps no secondary-index entries: a write gave it index specs")]
    NoIndexes {
        /// The backend's name ([`crate::Backend::name`]).
        backend: &'static str,
    },
    /// The instance was closed.
    #[error("backend is closed")]
    Closed,
    /// Another process holds the instance's directory.
    #[error("data directory {0} is locked by another process")]
    Locked(PathBuf),
    /// The configuration is invalid.
    #[error("invalid backend configuration: {0}")]
    Config(String),
    /// The multi backend names a sub-backend that does not exist.
    #[error("no sub-backend named {0:?}")]
    UnknownBackend(String),
    /// An error from an embedded engine (e.g. fjall), with its own message.
    #[error("{engine} engine error: {source}")]
    Engine {
        engine: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl StorageError {
    /// Wraps an I/O error with the path it concerns.
    /// An exhausted resource ([`crate::exhausted::Resource::of`]) becomes
    /// [`StorageError::Exhausted`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if let Some(resource) = crate::exhausted::Resource::of(&source) {
            let detail = format!("{}: {source}", path.display());
            return StorageError::Exhausted { resource, detail };
        }
        StorageError::Io { path, source }
    }
}
