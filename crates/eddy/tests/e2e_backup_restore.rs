//! Backup and restore as docs/user/backup-and-restore.md tells it, with the
//! real binary: a node holds plain objects, objects with 2i entries,
//! siblings on a bucket type with its own props, a bucket with changed
//! props, a set and a counter; it is stopped cleanly (SIGTERM), its data
//! directory copied with `cp -a`; the original is lost (moved away), the
//! copy put in its place without its clean-shutdown marker, and a node
//! started on it reads everything back: values, listings, 2i queries,
//! siblings, bucket and type props, data types. Every partition gets a
//! fresh actor at that start (the marker is gone), so writes after the
//! restore never reuse a version the lost directory had counted.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::TestNode;
use support::kv::list_keys;
use support::queries::index_keys;

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];
const TEXT: [(&str, &str); 1] = [("Content-Type", "text/plain")];
const PLAIN: usize = 100;
const COUPONS: usize = 60;
const SET: &str = "/types/sets/buckets/s/datatypes/members";
const COUNTER: &str = "/types/counters/buckets/c/datatypes/visits";
const SIBLINGS: &str = "/types/typed/buckets/t/keys/both";

/// Runs an `eddy` command of `node` and returns its stdout; panics with
/// its stderr if it fails.
fn eddy(node: &TestNode, args: &[&str]) -> String {
    let out = node.command(args).output().expect("run eddy");
    assert!(
        out.status.success(),
        "eddy {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn put(node: &TestNode, path: &str, headers: &[(&str, &str)], body: &str) {
    let r = node.http("PUT", path, headers, body.as_bytes());
    assert_eq!(r.status, 204, "PUT {path}: {}", r.text());
}

fn post_json(node: &TestNode, path: &str, body: &str) {
    let r = node.http("POST", path, &JSON, body.as_bytes());
    assert_eq!(r.status, 204, "POST {path}: {}", r.text());
}

fn get_json(node: &TestNode, path: &str) -> Value {
    let r = node.http("GET", path, &[], b"");
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// Bucket types made with the CLI, as an operator would.
fn create_types(node: &TestNode) {
    let types = [
        ("typed", r#"{"props":{"n_val":2,"allow_mult":true}}"#),
        ("sets", r#"{"props":{"datatype":"set"}}"#),
        ("counters", r#"{"props":{"datatype":"counter"}}"#),
    ];
    for (name, props) in types {
        eddy(node, &["admin", "bucket-type", "create", name, props]);
        eddy(node, &["admin", "bucket-type", "activate", name]);
    }
}

/// Writes every kind of data the restore must bring back.
fn write_everything(node: &TestNode) {
    create_types(node);
    let props = r#"{"props":{"n_val":2,"notfound_ok":false}}"#;
    put(node, "/buckets/plain/props", &JSON, props);
    for i in 0..PLAIN {
        put(
            node,
            &format!("/buckets/plain/keys/k{i}"),
            &TEXT,
            &format!("v{i}"),
        );
    }
    for i in 0..COUPONS {
        let count = (i % 10).to_string();
        let shop = format!("shop{}", i % 3);
        let headers = [
            ("Content-Type", "application/json"),
            ("X-Riak-Index-count_int", count.as_str()),
            ("X-Riak-Index-shop_bin", shop.as_str()),
        ];
        let body = format!(r#"{{"coupon":{i}}}"#);
        put(
            node,
            &format!("/buckets/coupons/keys/c{i}"),
            &headers,
            &body,
        );
    }
    put(node, SIBLINGS, &TEXT, "one");
    put(node, SIBLINGS, &TEXT, "two");
    post_json(node, SET, r#"{"add_all":["a","b","c"]}"#);
    for _ in 0..5 {
        post_json(node, COUNTER, r#"{"increment":2}"#);
    }
}

/// The coupons whose number `keep` takes.
fn coupons(keep: impl Fn(usize) -> bool) -> BTreeSet<String> {
    (0..COUPONS)
        .filter(|i| keep(*i))
        .map(|i| format!("c{i}"))
        .collect()
}

fn check_objects(node: &TestNode) {
    let plain: Vec<String> = (0..PLAIN).map(|i| format!("k{i}")).collect();
    let mut plain_sorted = plain.clone();
    plain_sorted.sort();
    assert_eq!(list_keys(node.http_port, "plain"), plain_sorted);
    for (i, key) in plain.iter().enumerate() {
        let r = node.http("GET", &format!("/buckets/plain/keys/{key}"), &[], b"");
        assert_eq!((r.status, r.text()), (200, format!("v{i}")), "{key}");
    }
    for i in [0, COUPONS / 2, COUPONS - 1] {
        let r = get_json(node, &format!("/buckets/coupons/keys/c{i}"));
        assert_eq!(r["coupon"], i, "c{i}");
    }
    let siblings = node.http("GET", SIBLINGS, &[], b"");
    assert_eq!(siblings.status, 300, "{}", siblings.text());
    assert_eq!(siblings.text().lines().count(), 3, "{}", siblings.text());
}

fn check_indexes(node: &TestNode) {
    let range = index_keys(node, "/buckets/coupons/index/count_int/2/4");
    assert_eq!(range, coupons(|i| (2..=4).contains(&(i % 10))));
    let exact = index_keys(node, "/buckets/coupons/index/shop_bin/shop1");
    assert_eq!(exact, coupons(|i| i % 3 == 1));
    let all = index_keys(node, "/buckets/coupons/index/$bucket/_");
    assert_eq!(all, coupons(|_| true));
}

fn check_props(node: &TestNode) {
    let props = &get_json(node, "/buckets/plain/props")["props"];
    assert!(
        props["n_val"] == 2 && props["notfound_ok"] == Value::Bool(false),
        "{props}"
    );
    let typed = &get_json(node, "/types/typed/props")["props"];
    assert!(
        typed["n_val"] == 2 && typed["allow_mult"] == Value::Bool(true),
        "{typed}"
    );
    let listed = eddy(node, &["admin", "bucket-type", "list"]);
    for name in ["typed", "sets", "counters"] {
        assert!(listed.contains(&format!("{name} (active)")), "{listed}");
    }
    let status = eddy(node, &["admin", "bucket-type", "status", "typed"]);
    assert!(status.contains("n_val: 2"), "{status}");
}

fn check_datatypes(node: &TestNode) {
    let set = get_json(node, SET);
    assert_eq!(set["value"], serde_json::json!(["a", "b", "c"]), "{set}");
    let counter = get_json(node, COUNTER);
    assert_eq!(counter["value"], 10, "{counter}");
}

fn check_everything(node: &TestNode) {
    check_objects(node);
    check_indexes(node);
    check_props(node);
    check_datatypes(node);
}

/// Each partition's actor id, by partition directory.
fn actors(data: &Path) -> BTreeMap<String, String> {
    let dirs = std::fs::read_dir(data.join("partitions")).expect("partitions");
    dirs.map(|d| d.unwrap().path())
        .filter_map(|p| {
            let actor = std::fs::read_to_string(p.join("actor")).ok()?;
            Some((p.file_name()?.to_string_lossy().into_owned(), actor))
        })
        .collect()
}

/// `cp -a FROM TO`, as the guide does it.
fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("run cp");
    assert!(status.success(), "cp -a {from:?} {to:?}");
}

#[test]
fn a_stopped_nodes_data_dir_copied_restores_everything() {
    let mut node = TestNode::start(&[]);
    write_everything(&node);
    check_everything(&node);
    let status = node.stop();
    assert!(status.success(), "SIGTERM exit: {status}");

    let data = node.data_dir();
    assert!(
        data.join("clean-shutdown").exists(),
        "a clean stop leaves its marker"
    );
    assert!(!data.join("eddy.pid").exists(), "no pid file once stopped");
    let backups = tempfile::tempdir().unwrap();
    let backup = backups.path().join("eddy-data");
    copy_dir(&data, &backup);
    let before = actors(&backup);
    assert!(!before.is_empty(), "the backup holds partitions");

    // The disk is lost; the backup goes where the data was.
    std::fs::rename(&data, backups.path().join("lost")).unwrap();
    copy_dir(&backup, &data);
    std::fs::remove_file(data.join("clean-shutdown")).unwrap();
    node.restart();

    check_everything(&node);
    let after = actors(&data);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let kept: Vec<&String> = after
        .iter()
        .filter(|(p, a)| before.get(*p) == Some(*a))
        .map(|(p, _)| p)
        .collect();
    assert!(kept.is_empty(), "partitions kept their actor: {kept:?}");

    // The restored node takes writes and keeps them across a clean restart.
    put(&node, "/buckets/plain/keys/after", &TEXT, "restored");
    post_json(&node, SET, r#"{"add":"d"}"#);
    assert!(node.stop().success());
    node.restart();
    let r = node.http("GET", "/buckets/plain/keys/after", &[], b"");
    assert_eq!((r.status, r.text()), (200, "restored".to_string()));
    let set = get_json(&node, SET);
    assert_eq!(set["value"], serde_json::json!(["a", "b", "c", "d"]));
    check_indexes(&node);
}
