//! Stable content hashes: xxh3-128 of a value's JSON text. serde_json
//! writes maps in key order (every map here is a `BTreeMap`), so equal
//! values hash equally on every node and in every build.

use std::io::{self, Write};

use serde::Serialize;
use xxhash_rust::xxh3::Xxh3Default;

/// Feeds the JSON text straight into the hasher, without building it.
struct HashWriter(Xxh3Default);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The xxh3-128 hash of `value`'s JSON text.
pub fn hash_json<T: Serialize + ?Sized>(value: &T) -> u128 {
    let mut w = HashWriter(Xxh3Default::new());
    // The cluster's types always serialize (string or integer map keys,
    // no floats that JSON refuses); the writer itself never fails.
    if let Err(e) = serde_json::to_writer(&mut w, value) {
        tracing::error!(error = %e, "cluster state did not serialize for hashing");
    }
    w.0.digest128()
}
