//! Configuration: riak.conf-style setting names ([`schema`]), value parsing
//! ([`values`]), and loading defaults, file and environment ([`load`]).

pub mod load;
pub mod schema;
pub mod values;

pub use load::Config;
