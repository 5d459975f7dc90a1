//! Eddy's storage layer: the one contract every backend implements.
//!
//! A [`Backend`] is the store of one partition (one vnode). It maps
//! `(bucket, key)` to an opaque value, keeps the object's secondary-index
//! entries in step with it, and can fold, scan, drop a bucket and destroy
//! itself. This crate owns the contract ([`backend`]), its request types
//! ([`batch`], [`fold`], [`index`]), the limits every backend enforces
//! ([`limits`]), two backends that need no files: [`memory`] and [`multi`],
//! how a backend destroys its directory crash-atomically ([`destroy`]), and
//! what every durable log shares: the [`Clock`] ([`clock`]) and group commit
//! with its [`SyncPolicy`] ([`group_commit`]), and the order-preserving
//! tuple encoding of the ordered stores ([`tuple`]).
//! The conformance suite every backend must pass lives in `testkit` (feature
//! `testkit`).
//!
//! This crate knows nothing of rings, sockets or Riak objects: buckets, keys,
//! values, index fields and terms are byte strings to it. Upper layers encode
//! bucket types into the bucket bytes and integer terms into order-preserving
//! bytes.
//!
//! Invariants every backend keeps (and the conformance suite checks):
//! - A key's index entries are exactly those its live object has: `put`
//!   applies the remove specs and then the add specs to the key's current
//!   entries, `delete` and `drop_bucket` remove all of them, and an expired
//!   object's entries are invisible.
//! - An expired object (its `expires_at` ≤ the clock's now) is invisible to
//!   `get`, folds and index scans, and a later `put` of its key starts with no
//!   index entries.
//! - A write acknowledged with `sync: true` survives a crash of the process.
//! - `destroy` is crash-atomic: after a crash during it, the partition
//!   opens with all of its data or with none (never part), and the open
//!   finishes the destruction.

pub mod backend;
pub mod batch;
pub mod clock;
pub mod destroy;
pub mod error;
pub mod exhausted;
pub mod fold;
pub mod group_commit;
pub mod index;
pub mod limits;
pub mod memory;
pub mod multi;
pub mod recovery;
pub mod retire;
pub mod status;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod tuple;

pub use backend::{Backend, Capabilities};
pub use batch::{BatchOp, WriteBatch, WriteOptions};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::StorageError;
pub use exhausted::Resource;
pub use fold::{FoldControl, FoldOptions, KeyVisitor, ObjectVisitor};
pub use group_commit::{Answer, GroupCommit, SyncPolicy, SyncWaiter};
pub use index::{IndexQuery, IndexSpec};
pub use recovery::RecoveryReport;
pub use status::BackendStatus;
