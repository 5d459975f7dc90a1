//! Riak's Protocol Buffers API over TCP.
//!
//! Framing is Riak's: a 4-byte big-endian length (counting the code byte and
//! the message), a 1-byte message code, then the protobuf message. Each
//! request gets one answer, or a stream of answers ending with `done`, or an
//! `RpbErrorResp` with Riak's error text and errcode 0.
//!
//! - `server`: admission of the connections `eddy_net::accept` takes, one
//!   task per connection, dispatch;
//! - `eddy_wire`: the messages, their codes and the framing, which the
//!   client and the bench tool share; [`read`]: the server's limits on
//!   reading a frame;
//! - one file per operation (`ping`, `get`, `put`, …): decode the request
//!   into `eddy_kv`'s request model, apply it, encode the answer;
//! - `datatype` and `counter`: data types and Riak 1.4's counters, with
//!   `dt_codec` translating their operations and values;
//! - [`error`]: every failure as the text Riak would send;
//! - `props`, `content`, `request`: translations shared by operations.
//!
//! Invariants: a bad request never closes another connection; a request
//! the server cannot frame (too large, empty) gets an error and then its
//! connection is closed; anything that frames but does not decode gets an
//! error and the connection stays usable.

mod bucket_props;
mod bucket_type;
mod client_id;
mod content;
mod counter;
mod datatype;
mod delete;
mod dt_codec;
pub mod error;
mod get;
mod index;
mod list_buckets;
mod list_keys;
mod mapred;
mod multi;
mod ping;
mod preflist;
mod props;
mod put;
pub mod read;
mod request;
mod server;
mod server_info;

pub use error::PbError;
pub use server::{PbConfig, serve};
