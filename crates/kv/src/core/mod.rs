//! Pure quorum cores (Riak's `riak_kv_put_core` / `riak_kv_get_core`):
//! replies go in with `add_result`, `enough` says when to stop waiting, and
//! `response` gives the answer. No I/O, no time: the async coordinators
//! drive them, and tests drive them with every reply order. `put_run` is
//! the put's whole run as a sans-IO state machine (who coordinates, whom
//! the object goes to, when to answer), around its `PutCore`; `get_run`
//! is the get's (when to answer, whom read repair sends what), around its
//! `GetCore`. The single-key coordinators and the multi-key waves step
//! them alike.

pub mod get;
pub mod get_run;
pub mod put;
pub mod put_run;
