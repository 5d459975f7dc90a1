//! Quorum values (`r`, `w`, `dw`, `pr`, `pw`, `rw`) as Riak spells them:
//! `one`, `quorum`, `all`, `default`, or a number of replicas. The one
//! `Quorum` is eddy-units' (the words clients and settings write); the
//! request model resolves it against a bucket's `n_val` with
//! [`Quorum::resolve_checked`].

pub use eddy_units::quorum::{Quorum, QuorumError};
