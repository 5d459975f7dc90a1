//! Eddy's key-value layer: everything between the API front ends and the
//! storage backends.
//!
//! - [`request`]: the request model the API layer builds;
//! - [`props`], [`quorum`], [`types`]: bucket properties, quorum values and
//!   the bucket-type registry;
//! - [`core`]: the pure quorum cores;
//! - [`bucket_props`]: bucket props requests, with their names and changes checked;
//! - [`vnode`]: the owner of one partition's backend, and the messages it
//!   takes and sends;
//! - [`router`]: delivery of those messages to a vnode here or elsewhere;
//! - [`remote`]: those messages over the network (wire format, requests
//!   awaiting replies, inbound requests off the transport's threads);
//! - [`commitlog`]: the node-wide log that makes writes durable in groups;
//! - [`coordinator`]: the async get/put/delete/list drivers;
//! - [`repair`]: damaged partitions: marks, reads around them, repair;
//! - [`handoff`]: moving a partition's data to another node, resumably;
//! - [`index`]: secondary-index terms, queries and continuations;
//! - [`keyfilter`]: Riak's key filters, parsed once and run on keys at the
//!   vnodes;
//! - [`limits`]: per-object limits on usermeta, links and index entries;
//! - [`mapphase`]: map phases run at the vnodes, by a runner the node is given;
//! - [`metadata`]: the bucket registry as the cluster shares it;
//! - [`metadata_push`]: how far this node's metadata changes were pushed;
//! - [`node`]: the node that ties them together.
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
pub mod handoff;
pub mod index_memory;
pub mod metadata_push;
pub mod node;
pub mod refusal;
pub mod remote;
pub mod repair;
pub mod router;

pub use coordinator::delete::DeleteOutcome;
pub use node::{DeleteMode, Liveness, Node, NodeConfig, StartError, VnodeFactory, VnodeParts};
