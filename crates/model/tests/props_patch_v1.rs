//! Pins the stored form of props patches: `fixtures/buckets_v1.json` was
//! written by the registry before patches were typed (client patches with
//! computed keys, nulls, quorum words and numbers, unknown properties, a
//! type patch whose `generation` a client set to a string, drops and a
//! reset), and `fixtures/buckets_v1_props.json` holds the props that code
//! resolved from it. Typed patches must read the file back to the same
//! JSON text. (That the registry resolves the same props from it once it
//! is migrated into the cluster's registers is eddy's `node::migrate`
//! test.)

use std::path::{Path, PathBuf};

use eddy_model::props::PropsPatch;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every patch in a metadata file: the types' and the buckets'.
fn patches(stored: &Value) -> Vec<&Value> {
    let types = stored["types"].as_object().unwrap().values();
    let buckets = stored["buckets"].as_array().unwrap().iter();
    types.chain(buckets).map(|e| &e["patch"]).collect()
}

#[test]
fn every_stored_patch_reads_back_to_the_same_json() {
    let stored = read_json(&fixture("buckets_v1.json"));
    let all = patches(&stored);
    assert_eq!(all.len(), 8);
    for json in all {
        let patch: PropsPatch = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(&Value::Object(patch.to_json()), json);
        // The same text, keys in order: register tie-breaks and state
        // digests hash it.
        let text = serde_json::to_string(&patch).unwrap();
        assert_eq!(text, json.to_string());
    }
}
