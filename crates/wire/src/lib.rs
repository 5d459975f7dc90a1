//! Riak's Protocol Buffers wire format, shared by Eddy's server (`eddy-api`),
//! its client (`eddy-client`) and its bench tool (`eddy-bench`), so that
//! none of them can drift from the others and neither the client nor the
//! bench tool depends on the server.
//!
//! What this crate owns:
//! - [`proto`]: every message, generated at build time from `proto/*.proto`
//!   (Eddy's own definitions, field for field those of Riak's PBC API, and
//!   Eddy's own messages in `proto/eddy.proto`);
//! - [`codes`]: every message code Riak uses, and the block reserved for
//!   Eddy's own ([`codes::EDDY_CODES`]);
//! - [`frame`]: the framing (`length ‖ code ‖ message`) and its errors;
//! - [`quorum`]: quorum values as `uint32` fields carry them (the quorum
//!   and its words are eddy-units').
//!
//! What it does not own: what a message means. The server's request model,
//! limits and error texts are `eddy-api`'s; this crate knows nothing of
//! nodes, buckets or sockets beyond an `AsyncRead`.
//!
//! The format, byte by byte: docs/formats/pb.md.
//!
//! Invariants: a released message code, field number, field type or
//! special quorum value never changes (Riak clients, and older Eddy
//! clients, send them); the `pinned` test compares every code and every
//! field number with checked-in fixtures, so such a change fails a test
//! before it can ship.

pub mod codes;
pub mod frame;
pub mod quorum;

/// The generated messages (from `crates/wire/proto`): Riak's, also
/// reachable at this module's root, and Eddy's own in [`proto::eddy`].
#[allow(clippy::all, missing_docs)]
pub mod proto {
    /// Riak's messages (package `riak`).
    pub mod riak {
        include!(concat!(env!("OUT_DIR"), "/riak.rs"));
    }
    /// Eddy's own messages (package `eddy`; codes in [`crate::codes`]'s
    /// Eddy block), which carry objects as Riak's `RpbContent`.
    pub mod eddy {
        include!(concat!(env!("OUT_DIR"), "/eddy.rs"));
    }
    pub use riak::*;
}

pub use frame::{Frame, FrameError};
pub use quorum::{Quorum, QuorumError, WireQuorum};
