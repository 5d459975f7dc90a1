//! Riak's data types (CRDTs) as pure state, with Riak's semantics
//! (design note 019 §3): what an operation does at the coordinating
//! replica, how two replicas' states merge, and the value a client reads.
//! Nothing here knows of backends, PB or HTTP, or vnodes.
//!
//! - [`PnCounter`]: a top-level counter (riak_dt_pncounter): per actor the
//!   increments and decrements it made.
//! - [`GSet`]: a grow-only set (riak_dt_gset).
//! - [`Orswot`]: an add-wins set without tombstones (riak_dt_orswot): a
//!   version vector, one dot per actor per element, and the removes whose
//!   context the set has not seen yet (deferred).
//! - [`Hll`]: a HyperLogLog (riak_kv_hll): an estimate of the number of
//!   distinct elements added, in 2^p one-byte registers.
//! - [`State`]: a value of any of these types, with the operation a
//!   coordinating replica applies ([`Op`]), the value a client reads
//!   ([`Value`]) and the stored envelope; [`encode_context`] makes the
//!   opaque context clients send back with removes.
//! - [`SetRoot`], [`SetSegment`]: a big set stored as a root record and
//!   segment records of contiguous member ranges, so that an operation
//!   reads and writes the root and the segments its members fall in.
//! - [`Map`]: a map (riak_dt_map) of counters, sets, registers, flags and
//!   nested maps, whose contents all share the map's clock;
//!   [`MapRoot`], [`MapSegment`]: a big map stored likewise, in ranges of
//!   its top-level fields.
//! - [`Root`], [`Segment`], [`Delta`]: segmented values and operation
//!   deltas of either type behind one API, for the storage.
//!
//! Each state writes and reads its stored body (`encode`, `decode`) with
//! the building blocks of [`codec`]; docs/formats/datatypes.md describes
//! the bytes.
//!
//! Invariants every type keeps (property-tested in `tests/laws.rs` and
//! `tests/hll_laws.rs`, `tests/map_laws.rs`):
//! merge is commutative, associative and idempotent; applying an
//! operation then merging equals merging then applying; replicas that saw
//! the same operations in any order of delivery read the same value.

pub mod codec;
mod context;
mod counter;
mod gset;
mod hll;
mod map;
mod op;
mod op_codec;
mod orswot;
mod segmented;
mod state;

pub use codec::DecodeError;
pub use context::{CONTEXT_MAX, ContextError, decode_context, encode_context};
pub use counter::{CounterError, PnCounter};
pub use eddy_object::{Actor, Dot, VersionVector};
pub use gset::GSet;
pub use hll::{HLL_PRECISION_DEFAULT, HLL_PRECISION_MAX, HLL_PRECISION_MIN, Hll, HllError};
pub use map::Map;
pub use map::delta::MapDelta;
pub use map::segmented::{MapRoot, MapSegment};
pub use op::{
    DataType, DtError, Field, FieldOp, FieldType, FieldValue, FlagOp, MAP_DEPTH_MAX, MapOp,
    MapUpdate, Op, SetOp, Value,
};
pub use orswot::delta::{NotReady, OrswotDelta};
pub use orswot::segmented::{SetRoot, SetSegment};
pub use orswot::{Orswot, Precondition};
pub use segmented::table::{SEGMENT_MEMBERS, SegmentRecords, SegmentRef, SegmentWrite};
pub use segmented::{Delta, Root, Segment};
pub use state::{FORMAT_VERSION, State};
