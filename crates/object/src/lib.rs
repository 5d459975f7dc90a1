//! Riak objects as Eddy stores them.
//!
//! An object is a set of siblings, each a [`Content`] (value plus metadata)
//! tagged with the [`Dot`] of the write that made it, and a
//! [`VersionVector`] summarising every write the object has seen. This is
//! the dotted-version-vector model Riak uses on typed buckets: a write with a
//! causal context replaces exactly the siblings that context saw, and
//! concurrent writes become siblings instead of being lost.
//!
//! Modules: [`base62`] (the alphabet of keys, vtags and tokens), [`vclock`] (actors, dots, version vectors), [`object`] (objects,
//! contents, metadata), [`merge`] (the pure update, merge and resolve rules),
//! [`codec`] (the versioned binary format on disk and on the wire) and
//! [`context`] (the opaque causal context handed to clients).
//!
//! Invariants (property-tested in `merge`):
//! - every sibling's dot is covered by the object's version vector;
//! - no two siblings share a dot;
//! - merge is commutative, associative and idempotent;
//! - an update with the object's own context leaves exactly one sibling.

pub mod base62;
pub mod codec;
pub mod context;
pub mod merge;
pub mod object;
pub mod vclock;

pub use codec::DecodeError;
pub use object::{Content, Link, Metadata, Pairs, RiakObject, Sibling};
pub use vclock::{Actor, Dot, VersionVector};
