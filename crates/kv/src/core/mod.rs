//! Pure quorum cores (Riak's `riak_kv_put_core` / `riak_kv_get_core`):
//! replies go in with `add_result`, `enough` says when to stop waiting, and
//! `response` gives the answer. No I/O, no time: the async coordinators
//! drive them, and tests drive them with every reply order.

pub mod get;
pub mod put;
pub mod put_run;
