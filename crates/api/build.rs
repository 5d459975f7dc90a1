//! Generates the Riak Protocol Buffers messages from `proto/` with protox
//! (a pure-Rust protobuf compiler, so no `protoc` binary is needed) and
//! prost-build.

use std::io::{Error, ErrorKind};

const PROTOS: &[&str] = &["proto/riak.proto", "proto/riak_kv.proto"];

fn main() -> std::io::Result<()> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors =
        protox::compile(PROTOS, ["proto"]).map_err(|e| Error::new(ErrorKind::InvalidData, e))?;
    prost_build::Config::new().compile_fds(descriptors)
}
