//! Riak's HTTP API (the `riak_kv_wm_*` resources) on axum.
//!
//! Every request goes through one dispatcher ([`routes`]) that decodes the
//! path into a [`routes::Route`] — all three of Riak's URL styles, with
//! bucket, key and type names percent-decoded to bytes — and hands it to
//! the file that owns that resource: [`object_get`], [`object_put`],
//! [`object_delete`], [`keys`], [`index`], [`buckets`], [`props`], [`types`],
//! [`preflist`], [`ping`], [`root`], [`stats`], [`metrics`], the cluster admin
//! resource [`cluster`], Eddy's multi-key requests [`multi`], and data
//! types: [`datatype`] (JSON codec in [`dt_json`]) and Riak 1.4's
//! [`counter`]. Riak's header formats live in
//! [`headers`] and [`multipart`], query parameters in [`params`], transfer
//! codings in [`codings`], and the mapping of errors to status codes and
//! messages in [`error`].
//!
//! Invariants: no handler panics on input; every error answer has a
//! plain-text (or, for props, JSON) body saying what was wrong; request
//! bodies are read up to [`HttpConfig::body_bytes_max`] and refused with
//! 413 beyond it.

pub mod accept;
pub mod admin;
pub mod buckets;
pub mod cluster;
pub mod codings;
pub mod conditional;
pub mod counter;
pub mod datatype;
pub mod drop_bucket;
pub mod dt_json;
pub mod error;
pub mod headers;
pub mod health;
pub mod index;
pub mod keys;
mod listener;
pub mod mapred;
pub mod metrics;
pub mod multi;
pub mod multi_json;
pub mod multipart;
pub mod object_delete;
pub mod object_get;
pub mod object_put;
pub mod params;
pub mod ping;
pub mod preflist;
pub mod props;
pub mod render;
pub mod repair;
pub mod root;
pub mod routes;
pub mod server;
pub mod stats;
mod timed_body;
pub mod types;

pub use server::{HttpConfig, router, serve};
