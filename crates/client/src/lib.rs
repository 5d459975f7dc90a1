//! Clients of Eddy's APIs, used by the `eddy` CLI, the end-to-end tests and
//! the bench tool. [`http`] is a blocking HTTP client (reqwest's); [`pb`] an
//! async client of Riak's Protocol Buffers API; [`multi`] Eddy's
//! multi-key requests for both.

pub mod http;
pub mod multi;
pub mod pb;
