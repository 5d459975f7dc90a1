//! `eddy bench run` and `eddy bench compare`: a basho_bench-class load
//! generator for Eddy and any Riak-compatible server.
//!
//! A run reads a TOML workload ([`config`]), checks the servers and probes
//! each weighted operation ([`probe`]), optionally preloads keys
//! ([`preload`]), measures a loopback echo of the same shape
//! ([`baseline`]) to read the run against, then lets `concurrent` workers
//! ([`worker`]) issue operations ([`ops`]) on keys ([`keygen`]) with values
//! ([`valuegen`]) and index entries ([`index`]) through a PB or HTTP driver
//! ([`driver`]) for the duration (or until `keys.once` uses the keys up), while the
//! collector ([`collector`]) closes a window ([`window`]) at every report
//! interval. The results directory ([`report`]) gets CSV rows per
//! operation, a summary, the config, machine facts and PNG charts;
//! [`compare`] draws several runs side by side. A config may also be built
//! from a few flags ([`preset`]: `eddy bench pb`) and run without a results
//! directory ([`run_config`], [`Output::None`]).
//!
//! Invariants: every request is bounded by the request timeout and every
//! run by its duration plus a few timeouts (or less, when every request
//! fails for `give_up_after`); a config that loads is one the run can
//! execute, and any setting it refuses is named in the error.

pub mod baseline;
pub mod collector;
pub mod compare;
pub mod config;
pub mod driver;
pub mod error;
pub mod index;
pub mod keygen;
pub mod latency;
pub mod ops;
pub mod preload;
pub mod preset;
pub mod probe;
pub mod progress;
pub mod report;
pub mod run;
pub mod timefmt;
pub mod valuegen;
pub mod window;
pub mod worker;
pub mod workload;

pub use compare::{CompareOutcome, compare};
pub use error::BenchError;
pub use run::{Output, RunOptions, RunOutcome, run, run_config};
