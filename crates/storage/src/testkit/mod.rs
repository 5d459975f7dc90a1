//! The test kit every backend runs: a conformance suite checked against a
//! model ([`model`], [`conformance`]) and a kill -9 crash harness ([`crash`]).
//!
//! A backend crate implements [`BackendFactory`] and calls
//! [`run_conformance`] from a test; see `crates/storage/tests/memory.rs`.

pub mod conformance;
pub mod crash;
pub mod model;
pub mod ops;

use std::path::Path;
use std::sync::Arc;

use crate::{Backend, Clock};

pub use conformance::run_conformance;

/// What a factory needs to open a backend for a test.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The clock the backend must use for expiry.
    pub clock: Arc<dyn Clock>,
    /// Instance-wide time to live in seconds (0 = none).
    pub expiry_secs: u64,
}

/// Opens (or reopens) a backend stored in `dir`.
pub trait BackendFactory: Send + Sync {
    /// Opens the backend in `dir`; a directory opened before must show the
    /// data written there (for persistent backends).
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Box<dyn Backend>;
}
