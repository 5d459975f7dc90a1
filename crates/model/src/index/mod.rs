//! Secondary indexes (2i) as requests name them: terms as clients,
//! objects and backends hold them ([`term`]), queries and their pages
//! ([`query`]), continuations ([`continuation`]). The coverage execution
//! is the coordinators' (eddy-kv), a vnode's part the vnode's fold
//! (eddy-vnode).

pub mod continuation;
pub mod query;
pub mod term;

pub use query::{IndexPage, IndexRequest, IndexScan, PreparedQuery, ScanField};
