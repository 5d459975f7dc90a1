//! Pins the stored form of props patches: `fixtures/buckets_v1.json` was
//! written by the registry before patches were typed (client patches with
//! computed keys, nulls, quorum words and numbers, unknown properties, a
//! type patch whose `generation` a client set to a string, drops and a
//! reset), and `fixtures/buckets_v1_props.json` holds the props that code
//! resolved from it. Typed patches must read the file back to the same
//! JSON, resolve the same props, and write back what they read.

use std::path::{Path, PathBuf};

use eddy_model::props::{BucketProps, PropsPatch};
use eddy_model::types::BucketRegistry;
use serde_json::{Map, Value, json};

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

/// A copy of the fixture in a fresh directory, opened.
fn opened() -> (tempfile::TempDir, PathBuf, BucketRegistry) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta/buckets.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::copy(fixture("buckets_v1.json"), &path).unwrap();
    let registry = BucketRegistry::open(&path, BucketProps::default()).unwrap();
    (dir, path, registry)
}

#[test]
fn every_stored_patch_reads_back_to_the_same_json() {
    let stored = read_json(&fixture("buckets_v1.json"));
    let all = patches(&stored);
    assert_eq!(all.len(), 8);
    for json in all {
        let patch: PropsPatch = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(&Value::Object(patch.to_json()), json);
        let text = serde_json::to_string(&patch).unwrap();
        assert_eq!(&serde_json::from_str::<Value>(&text).unwrap(), json);
    }
}

#[test]
fn the_registry_resolves_the_props_it_resolved_before() {
    let (_dir, _path, registry) = opened();
    let mut resolved = Map::new();
    for t in registry.list_types() {
        let props = Value::Object(t.props.to_json());
        resolved.insert(format!("type {}", t.name), props);
    }
    let buckets: [(&str, &[u8]); 6] = [
        ("default", b"b"),
        ("default", b"dropped"),
        ("default", b"reset"),
        ("sets", &[0xff, 0]),
        ("w1c", b"k"),
        ("sets", b"other"),
    ];
    for (t, b) in buckets {
        let props = registry.bucket_props(t, b).unwrap();
        let name = format!("bucket {t}/{}", String::from_utf8_lossy(b));
        resolved.insert(name, Value::Object(props.to_json()));
    }
    let before = read_json(&fixture("buckets_v1_props.json"));
    assert_eq!(Value::Object(resolved), before);
}

#[test]
fn a_change_writes_the_other_entries_back_as_they_were() {
    let (_dir, path, registry) = opened();
    let change = PropsPatch::from_json(json!({"n_val": 1}).as_object().unwrap()).unwrap();
    registry
        .set_bucket_props("default", b"new", &change)
        .unwrap();
    let mut written = read_json(&path);
    let added = written["buckets"].as_array_mut().unwrap().pop().unwrap();
    assert_eq!(added["patch"], json!({"n_val": 1}));
    assert_eq!(written, read_json(&fixture("buckets_v1.json")));
}
