//! Eddy's key-value layer: the coordinators and the node between the API
//! front ends and the vnodes (design note 021).
//!
//! - [`core`]: the pure quorum cores;
//! - [`coordinator`]: the async get/put/delete/list, 2i, key-filter, map,
//!   multi-key and data type drivers;
//! - [`node`]: the node that ties them together: its vnodes, ring, registry
//!   and counters, and what it is given, when built, to reach beyond itself
//!   ([`NodeLinks`]: other nodes' vnodes, liveness, a vnode factory, the
//!   transfers under way);
//! - [`router`]: delivery of vnode messages to a vnode here or elsewhere
//!   (through the [`router::RemoteVnodes`] the node is given; the network
//!   adapter is eddy-remote's);
//! - [`repair`]: damaged partitions: marks, reads around them, repair;
//! - [`bucket_props`]: bucket props requests, with their names and changes checked;
//! - [`refusal`]: the last write refused for lack of a resource;
//! - [`metadata_push`]: how far this node's metadata changes were pushed;
//! - [`metrics`]: the kv layer's figures (gets, puts, deletes and their FSM times).
//!
//! The request model (bucket types, props, quorum values, limits, key
//! filters, 2i) is eddy-model's; the vnode, its commit log and folds are
//! eddy-vnode's; vnode messages over the network and handoff are
//! eddy-remote's, above this crate, so nothing here depends on the
//! transport.
//!
//! # Threads: the one rule
//! A storage call that can wait on the disk for long never runs on the
//! async runtime's threads: syncs (fsync/fdatasync), folds (listing,
//! repair, handoff), opening, closing or destroying a backend, replaying
//! the commit log. These run on threads of their own (the commit log's
//! syncer and checkpointer, `spawn_blocking`, repair's and handoff's
//! threads, the transport's inbound workers).
//!
//! A vnode's point operations may run on the caller's thread, runtime or
//! not: a get (a keydir lookup and a read of cached pages), a put or delete
//! written without sync (a copy into the page cache) and its commit-log
//! append (a copy into a mapped segment). They are bounded: none syncs,
//! none folds, and each holds a key lock only for its own work. This is
//! the fast path a one-member ring keeps (design note 005). A put that
//! asks for durability does not wait on the caller's thread: its reply is
//! sent when the commit log's syncer has made the write durable.

pub mod bucket_props;
pub mod coordinator;
pub mod core;
pub mod expiry;
pub mod metadata_push;
pub mod metrics;
pub mod node;
pub mod refusal;
pub mod repair;
pub mod router;

pub use coordinator::delete::DeleteOutcome;
pub use node::{
    DeleteMode, Liveness, Node, NodeConfig, NodeLinks, StartError, Transfers, VnodeFactory,
    VnodeParts,
};
