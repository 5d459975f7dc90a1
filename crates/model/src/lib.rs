//! Eddy's request model: what a request to the key-value layer says and
//! what it may be answered, with no I/O and no knowledge of rings (beyond a node's name), vnodes
//! or sockets. The API front ends build these values; the coordinators
//! and vnodes (eddy-kv, eddy-vnode) act on them.
//!
//! - [`request`]: the requests and their answers (`PutRequest`,
//!   `GetRequest`, `BucketRef`, …);
//! - [`types`], [`props`], [`metadata`]: bucket types, typed bucket
//!   props, the cluster's registers that keep them and the bucket
//!   registry that serves them;
//! - [`quorum`]: quorum values and their resolution against n_val;
//! - [`limits`]: per-object limits on usermeta, links and index entries,
//!   and the bounds on multi-key requests;
//! - [`keyfilter`]: Riak's key filters, parsed once and run on keys;
//! - [`index`]: secondary-index terms, queries and continuations;
//! - [`error`]: the errors an operation answers.

pub mod error;
pub mod index;
pub mod keyfilter;
pub mod limits;
pub mod metadata;
pub mod props;
pub mod quorum;
pub mod request;
pub mod types;

pub use error::KvError;
pub use quorum::Quorum;
pub use request::*;
