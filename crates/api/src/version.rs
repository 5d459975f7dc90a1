//! The versions Eddy reports. Riak clients gate features on the server's
//! version, so Eddy reports a Riak compatibility version as plain `X.Y.Z`
//! and its own version separately.

/// The Riak release whose APIs Eddy implements (`riak_kv_version`, PB
/// `server_version`).
pub const RIAK_COMPAT_VERSION: &str = "3.2.0";

/// Eddy's own version (`eddy_version`).
pub const EDDY_VERSION: &str = env!("CARGO_PKG_VERSION");
