//! Riak's Protocol Buffers API (in progress).
