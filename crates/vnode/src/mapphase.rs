//! Map phases run at the vnodes that hold the data (design note 017): the
//! kv layer folds a bucket's live objects at each vnode of a coverage plan
//! and hands them, in batches, to a [`MapRunner`] the node was given. The
//! runner (the query layer's) knows what a phase is; this layer only
//! carries the phase as JSON text and the outputs as JSON list texts.
//!
//! Invariants: a runner is never given a tombstone or an expired object,
//! and is never called while a key lock is held (a fold reads the
//! backend's snapshot, outside the vnode's locks).

use eddy_object::RiakObject;

use eddy_model::request::BucketRef;

/// Objects handed to the runner at a time.
pub const MAP_BATCH: usize = 250;

/// The longest phase text a map fold carries (64 KiB of function source,
/// its argument and the rest).
pub const MAP_PHASE_BYTES_MAX: usize = 1024 * 1024;

/// One object a map phase runs on.
#[derive(Clone, Debug)]
pub struct MapInput {
    pub bucket: BucketRef,
    pub key: Vec<u8>,
    /// The stored object, live (not a tombstone, not expired).
    pub object: RiakObject,
}

/// Runs one map phase over a batch of objects, on the vnode's fold
/// thread (so it may block, e.g. on a JavaScript pool).
pub trait MapRunner: Send + Sync + std::fmt::Debug {
    /// Runs `phase` (the resolved phase as JSON text) over `inputs` and
    /// returns the JSON text of the list of their outputs, or what failed.
    fn run(&self, phase: &[u8], inputs: Vec<MapInput>) -> Result<Vec<u8>, String>;
}
