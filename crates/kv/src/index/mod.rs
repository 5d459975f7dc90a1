//! Secondary indexes (2i): terms as clients, objects and backends hold
//! them ([`term`]), queries and their pages ([`query`]), continuations
//! ([`continuation`]), and the memory backends' term indexes take
//! ([`memory`]). The coverage execution is in
//! [`crate::coordinator::index`]; a vnode's part in [`crate::vnode::fold`].

pub mod continuation;
pub mod memory;
pub mod query;
pub mod term;

pub use query::{IndexPage, IndexRequest, IndexScan, PreparedQuery, ScanField};
