//! A data directory written by an earlier build starts under this one
//! with everything intact. The fixture `fixtures/datadir-ad9b9d1.tar.gz`
//! was written by ad9b9d1 (the commit issue 27's reshape started from;
//! `fixtures/datadir-ad9b9d1.sh` made it): two bucket types made with the
//! CLI (`custom`: n_val 2, allow_mult; `maps`: datatype map), props set on
//! a default bucket and on a typed one, 50 objects in each bucket with 2i
//! entries on the first, and a map. A node started on a copy of it serves
//! the same types, props, values, listings, 2i answers and map, and takes
//! new writes. The bucket registry's own file (`meta/buckets.json`) is
//! moved into the cluster state at that start (design note 026), also
//! when the cluster state lacks its entries, and renamed.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::TestNode;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/datadir-ad9b9d1.tar.gz"
);

fn unpack(dir: &Path) {
    unpack_from(FIXTURE, dir);
}

fn unpack_from(fixture: &str, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let out = Command::new("tar")
        .arg("-xzf")
        .arg(fixture)
        .arg("-C")
        .arg(dir)
        .output()
        .expect("run tar");
    assert!(
        out.status.success(),
        "tar: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn get(node: &TestNode, path: &str) -> (u16, Vec<u8>) {
    let r = node.http("GET", path, &[], b"");
    (r.status, r.body)
}

fn json(node: &TestNode, path: &str) -> Value {
    let (status, body) = get(node, path);
    assert_eq!(
        status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).unwrap()
}

fn props(node: &TestNode, bucket: &str) -> Value {
    json(node, &format!("/types/{bucket}/props"))["props"].clone()
}

/// [`unpack`], with the bucket types and props taken out of the cluster
/// state, so only `meta/buckets.json` has them (a node whose changes
/// never reached its cluster state).
fn unpack_without_registers(dir: &Path) {
    unpack(dir);
    let path = dir.join("meta/cluster.json");
    let mut saved: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let state = saved["state"].as_object_mut().unwrap();
    assert!(state.remove("bucket_types").is_some());
    assert!(state.remove("bucket_props").is_some());
    state.insert("bucket_types".into(), serde_json::json!({}));
    state.insert("bucket_props".into(), serde_json::json!({}));
    std::fs::write(&path, serde_json::to_vec(&saved).unwrap()).unwrap();
}

#[test]
fn a_data_directory_from_ad9b9d1_starts_with_its_types_props_and_data() {
    let node = TestNode::start_on_data(unpack, &[]);
    serves_the_fixture(&node);
}

#[test]
fn bucket_metadata_only_in_the_registry_file_is_migrated_and_kept_over_a_restart() {
    let mut node = TestNode::start_on_data(unpack_without_registers, &[]);
    let meta = node.data_dir().join("meta");
    assert!(!meta.join("buckets.json").exists());
    assert!(meta.join("buckets.json.migrated").exists());
    serves_the_fixture(&node);
    node.stop();
    node.restart();
    let b2 = props(&node, "custom/buckets/b2");
    assert_eq!(
        (&b2["n_val"], &b2["dw"]),
        (&Value::from(2), &Value::from("all"))
    );
}

/// What the fixture holds, as `node` serves it.
fn serves_the_fixture(node: &TestNode) {
    let b1 = props(node, "default/buckets/b1");
    assert_eq!((b1["n_val"].as_u64(), &b1["r"]), (Some(2), &Value::from(1)));
    assert_eq!(b1["last_write_wins"], true);
    let b2 = props(node, "custom/buckets/b2");
    assert_eq!(b2["n_val"], 2, "the type's n_val: {b2}");
    assert_eq!(b2["allow_mult"], true);
    assert_eq!(
        (&b2["dw"], &b2["notfound_ok"]),
        (&Value::from("all"), &Value::from(false))
    );
    let maps = props(node, "maps/buckets/m");
    assert_eq!(
        (&maps["datatype"], &maps["active"]),
        (&Value::from("map"), &Value::from(true))
    );
    let status = node
        .command(&["admin", "bucket-type", "status", "custom"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&status.stdout).contains("custom is active"));

    for i in [1, 7, 50] {
        let (s, body) = get(node, &format!("/types/default/buckets/b1/keys/k{i}"));
        assert_eq!((s, body), (200, format!("value {i}").into_bytes()));
        let (s, body) = get(node, &format!("/types/custom/buckets/b2/keys/k{i}"));
        assert_eq!((s, body), (200, format!("custom {i}").into_bytes()));
    }
    let keys = json(node, "/types/default/buckets/b1/keys?keys=true");
    assert_eq!(keys["keys"].as_array().unwrap().len(), 50);
    let index = json(node, "/types/default/buckets/b1/index/n_int/10/12");
    assert_eq!(index["keys"], serde_json::json!(["k10", "k11", "k12"]));
    // The entries came into the side store, built at the start.
    assert!(node.data_dir().join("side").is_dir());
    let map = json(node, "/types/maps/buckets/m/datatypes/doc");
    assert_eq!(
        map["value"],
        serde_json::json!({"name_register": "eddy", "tags_set": ["a", "b"], "visits_counter": 3})
    );

    let text = [("Content-Type", "text/plain")];
    let put = node.http("PUT", "/types/custom/buckets/b2/keys/new", &text, b"after");
    assert_eq!(put.status, 204, "{}", put.text());
    assert_eq!(get(node, "/types/custom/buckets/b2/keys/new").1, b"after");
}

/// The data directory `fixtures/datadir-b4809a1-BACKEND.tar.gz` holds
/// (`fixtures/datadir-b4809a1-backends.sh` wrote it with b4809a1, whose
/// lsm kept index entries in its own keyspace and bitcask in hint files):
/// bucket `b1`'s 40 objects, each with `n_int` i and `t_bin` t(i mod 4),
/// and under multi bucket `l` (on lsm) with 20, `n_int` i.
fn b4809a1(backend: &'static str) -> TestNode {
    let fixture = format!(
        "{}/tests/fixtures/datadir-b4809a1-{backend}.tar.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let env = [("EDDY_STORAGE_BACKEND", backend)];
    TestNode::start_on_data(|dir| unpack_from(&fixture, dir), &env)
}

/// What every 2i query of bucket `b1` of the b4809a1 fixtures answers.
fn serves_b1_entries(node: &TestNode) {
    let range = json(node, "/types/default/buckets/b1/index/n_int/10/12");
    assert_eq!(range["keys"], serde_json::json!(["k10", "k11", "k12"]));
    let exact = json(node, "/types/default/buckets/b1/index/t_bin/t1");
    let mut keys: Vec<String> = exact["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    let mut want: Vec<String> = (1..=40)
        .filter(|i| i % 4 == 1)
        .map(|i| format!("k{i}"))
        .collect();
    want.sort();
    assert_eq!(keys, want);
    let page = json(
        node,
        "/types/default/buckets/b1/index/n_int/1/40?max_results=5",
    );
    assert_eq!(
        page["keys"],
        serde_json::json!(["k1", "k2", "k3", "k4", "k5"])
    );
    let next = page["continuation"].as_str().unwrap();
    let path =
        format!("/types/default/buckets/b1/index/n_int/1/40?max_results=5&continuation={next}");
    let page = json(node, &path);
    assert_eq!(
        page["keys"],
        serde_json::json!(["k6", "k7", "k8", "k9", "k10"])
    );
    assert!(node.data_dir().join("side").is_dir());
}

#[test]
fn an_lsm_data_directory_from_b4809a1_serves_its_index_entries_from_the_side_store() {
    let mut node = b4809a1("lsm");
    serves_b1_entries(&node);
    node.stop();
    node.restart();
    serves_b1_entries(&node);
}

#[test]
fn a_multi_data_directory_from_b4809a1_serves_its_index_entries_from_the_side_store() {
    let node = b4809a1("multi");
    serves_b1_entries(&node);
    let on_lsm = json(&node, "/types/default/buckets/l/index/n_int/1/5");
    let mut keys: Vec<&str> = on_lsm["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    keys.sort();
    assert_eq!(keys, ["k1", "k2", "k3", "k4", "k5"]);
}
