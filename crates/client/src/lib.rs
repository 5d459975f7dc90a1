//! Clients of Eddy's APIs, used by the `eddy` CLI, the end-to-end tests and
//! (later) the bench tool. [`http`] is a small blocking HTTP/1.1 client.

pub mod http;
