//! Generates the Protocol Buffers messages from `proto/` (Riak's, package
//! `riak`, and Eddy's own, package `eddy`) with protox
//! (a pure-Rust protobuf compiler, so no `protoc` binary is needed) and
//! prost-build.
//!
//! It also writes `fields.txt` to `OUT_DIR`: one line per message field and
//! enum value, with its number, as the `.proto` files define them. The
//! `pinned` test compares it with a checked-in copy, so a changed field
//! number or type cannot pass unnoticed.

use std::fmt::Write as _;
use std::io::{Error, ErrorKind};
use std::path::PathBuf;

const PROTOS: &[&str] = &[
    "proto/riak.proto",
    "proto/riak_kv.proto",
    "proto/riak_dt.proto",
    "proto/eddy.proto",
];

fn main() -> std::io::Result<()> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors =
        protox::compile(PROTOS, ["proto"]).map_err(|e| Error::new(ErrorKind::InvalidData, e))?;
    let mut listing = String::new();
    for file in &descriptors.file {
        for message in &file.message_type {
            list_message(&mut listing, file.package(), message);
        }
    }
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or(ErrorKind::NotFound)?);
    std::fs::write(out_dir.join("fields.txt"), listing)?;
    prost_build::Config::new().compile_fds(descriptors)
}

/// Appends `message`'s fields, enums and nested messages, one a line:
/// `scope.Message.field = number label type [default]`, and
/// `scope.Message.Enum.VALUE = number`.
fn list_message(out: &mut String, scope: &str, message: &prost_types::DescriptorProto) {
    let scope = format!("{scope}.{}", message.name());
    for field in &message.field {
        let kind = match field.type_name() {
            "" => field.r#type().as_str_name().to_string(),
            name => name.to_string(),
        };
        let _ = write!(
            out,
            "{scope}.{} = {} {} {kind}",
            field.name(),
            field.number(),
            field.label().as_str_name(),
        );
        if let Some(default) = &field.default_value {
            let _ = write!(out, " [default = {default}]");
        }
        out.push('\n');
    }
    for kind in &message.enum_type {
        for value in &kind.value {
            let _ = writeln!(
                out,
                "{scope}.{}.{} = {}",
                kind.name(),
                value.name(),
                value.number()
            );
        }
    }
    for nested in &message.nested_type {
        list_message(out, &scope, nested);
    }
}
