//! Eddy's MapReduce: Riak's job JSON ([`job`]), the phases' execution
//! ([`exec`]), Riak's Erlang built-ins implemented natively ([`erlang`],
//! with the index functions of Riak 3 in [`index_reduce`]) and the
//! JavaScript sandbox ([`js`]) for Riak's JavaScript built-ins and
//! user functions.
//!
//! A job reads its inputs and objects through a [`exec::Source`]: the kv
//! layer in a node ([`kv_source`]), a map in tests. Map phase 0 over a
//! bucket or key filter runs at the vnodes, through [`vnode_map::Runner`].
//! A node holds one [`jobs::Jobs`]: its JavaScript pool and limits, the
//! runner its front ends run jobs with and its vnodes run map phases with.

pub mod erlang;
pub mod error;
pub mod exec;
pub mod index_reduce;
pub mod job;
pub mod jobs;
pub mod js;
pub mod kv_source;
pub mod object_view;
pub mod term_order;
pub mod vnode_map;

pub use error::MapRedError;
pub use jobs::Jobs;
