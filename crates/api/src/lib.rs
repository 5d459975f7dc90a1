//! Riak's wire APIs: [`http`] (riak_kv_wm_* resources) and [`pb`] (Protocol
//! Buffers over TCP). Each turns requests into `eddy_kv`'s request model and
//! answers in Riak's formats; nothing below this crate sees a header or a
//! protobuf.

pub mod figures;
pub mod http;
mod items;
mod metadata;
pub mod net;
pub mod pb;
pub mod version;
