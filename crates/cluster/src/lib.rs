//! The cluster's shared state and the claimant's decisions, as plain data
//! and pure functions (design note 010, §2).
//!
//! Every node holds a [`ClusterState`]: the members, the ring with its
//! pending ownership transfers, the staged membership changes, the
//! completed-transfer facts, and the bucket types and props. Gossip moves
//! whole states between nodes and [`ClusterState::merge`] combines them;
//! the merge is commutative, associative and idempotent, so every node
//! that has seen the same states holds the same state (same
//! [`ClusterState::digest`]).
//!
//! - [`state`]: the state, its merge and digest, and the bucket metadata
//!   registers' writes;
//! - `ring_state`: the claimant's part, versioned by `(epoch, claimant)`;
//! - `claimant`: who the claimant is, take-over, down marks, ring-ready;
//! - `staging`: `join`, `leave`, `force-remove`, `replace`,
//!   `force-replace`, `clear`;
//! - `plan`: `plan` and `commit`;
//! - `transfers`: completed-transfer facts and the claimant's round that
//!   applies them;
//! - `views`: `member-status`, `ring-status`, `transfers`;
//! - `persist`: `save` and `load`;
//! - [`service`]: the membership service that runs a node's state over
//!   the transport: gossip, failure detection, the claimant's duties and
//!   the admin operations.
//!
//! Outside [`service`], nothing does I/O but `save`/`load`, reads a clock
//! (times come in as arguments) or draws a random number. Liveness comes
//! in as an `is_up` predicate, other members' epochs as a `peer_epoch`
//! function.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod claimant;
mod digest;
pub mod error;
mod member;
mod persist;
mod plan;
mod ring_state;
pub mod service;
mod staging;
pub mod state;
mod transfers;
mod views;

pub use eddy_model::metadata::register::{BucketMetadata, Register, Registers, Stamp};
pub use eddy_ring::{ClaimParams, NodeName, Partition, Ring, Transfer};
pub use error::{CommitError, PersistError, StageError, TransferError};
pub use member::{Member, MemberStatus};
pub use persist::FORMAT_VERSION;
pub use plan::Plan;
pub use ring_state::RingState;
pub use service::{Membership, MembershipConfig, MembershipError, MetadataApplier, PushReport};
pub use staging::Change;
pub use state::{ClusterState, FACT_EPOCHS_KEPT};
pub use transfers::TransferFact;
pub use views::{MemberStatusRow, NodeTransfers, RingStatus};
