//! Riak's HTTP API (in progress).
