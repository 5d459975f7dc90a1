//! Actor identity across restarts with the real binary (Riak's kv679).
//!
//! A clean stop leaves a `clean-shutdown` marker and the next start keeps
//! every partition's actor; a start without it (after a kill -9) gives
//! every partition a fresh one. The kv679 scenario shows why: a write is
//! acknowledged and its context kept by the client, then lost by a crash
//! (reproduced by deleting, while the node is down after a kill -9, the
//! commit log and the key's partition files, which is what a machine crash
//! with the default `interval` sync can take). A later write without
//! context is acknowledged; a write with the old context must then become
//! its sibling. The control case, a clean stop followed by the same loss,
//! keeps the old actor and shows the later write vanishing: that is what
//! every crash would do without the renewal.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use eddy_object::context;
use serde_json::Value;
use support::{HttpResponse, TestNode};

/// Every partition's actor file, by partition.
fn actors(node: &TestNode) -> BTreeMap<String, String> {
    let dir = node.data_dir().join("partitions");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter_map(|e| {
            let id = std::fs::read_to_string(e.path().join("actor")).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), id))
        })
        .collect()
}

fn clean_marker(node: &TestNode) -> bool {
    node.data_dir().join("clean-shutdown").exists()
}

fn put(node: &TestNode, path: &str, value: &str, vclock: Option<&str>) -> HttpResponse {
    let mut headers = vec![("Content-Type", "text/plain")];
    headers.extend(vclock.map(|v| ("X-Riak-Vclock", v)));
    node.http("PUT", path, &headers, value.as_bytes())
}

#[test]
fn a_clean_restart_keeps_every_actor_and_a_kill9_renews_them_all() {
    let mut node = TestNode::start(&[]);
    assert!(!clean_marker(&node), "a running node has no marker");
    assert_eq!(put(&node, "/buckets/b/keys/k", "v", None).status, 204);
    let first = actors(&node);
    assert_eq!(first.len(), 16, "one actor per partition");

    assert!(node.stop().success());
    assert!(clean_marker(&node), "a clean stop leaves the marker");
    node.restart();
    assert!(!clean_marker(&node), "a start takes the marker");
    assert_eq!(actors(&node), first, "a clean restart keeps the actors");

    node.kill9();
    assert!(!clean_marker(&node));
    node.restart();
    let renewed = actors(&node);
    assert_eq!(renewed.len(), 16);
    for (p, actor) in &first {
        assert_ne!(&renewed[p], actor, "partition {p} kept its actor");
    }
    let r = node.http("GET", "/buckets/b/keys/k", &[], b"");
    assert_eq!((r.status, r.text()), (200, "v".to_string()));
}

/// How the node goes down before its copy of v1 is deleted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Down {
    Kill9,
    CleanStop,
}

/// What the client sees at the end of the kv679 scenario, and the
/// partition's actor before and after the restart.
struct Outcome {
    last: HttpResponse,
    actor_before: String,
    actor_after: String,
}

const KEY: &str = "/types/default/buckets/kv679/keys/k";

fn kv679(down: Down) -> Outcome {
    let mut node = TestNode::start(&[]);
    let props = r#"{"props":{"allow_mult":true,"n_val":1}}"#;
    let headers = [("Content-Type", "application/json")];
    let r = node.http("PUT", "/buckets/kv679/props", &headers, props.as_bytes());
    assert_eq!(r.status, 204, "{}", r.text());

    assert_eq!(put(&node, KEY, "v1", None).status, 204);
    let r = node.http("GET", KEY, &[], b"");
    assert_eq!((r.status, r.text()), (200, "v1".to_string()));
    let v1_context = r.header("X-Riak-Vclock").expect("vclock").to_string();
    let partition = preflist_partition(&node);
    let actor_file = node
        .data_dir()
        .join(format!("partitions/{partition}/actor"));
    let actor_before = std::fs::read_to_string(&actor_file).unwrap();
    let v1_clock = context::from_base64(&v1_context).unwrap();
    assert_eq!(
        v1_clock.entries(),
        [(actor_of(&actor_before), 1)],
        "v1 counted once by its partition's actor"
    );

    match down {
        Down::Kill9 => node.kill9(),
        Down::CleanStop => assert!(node.stop().success()),
    }
    lose_partition_data(&node.data_dir(), partition);
    node.restart();
    let actor_after = std::fs::read_to_string(&actor_file).unwrap();
    assert_eq!(
        node.http("GET", KEY, &[], b"").status,
        404,
        "v1 is lost, as a crash can lose it"
    );

    assert_eq!(put(&node, KEY, "v2", None).status, 204, "v2 acknowledged");
    assert_eq!(put(&node, KEY, "v3", Some(&v1_context)).status, 204);
    let accept = [("Accept", "multipart/mixed, */*;q=0.5")];
    let last = node.http("GET", KEY, &accept, b"");
    Outcome {
        last,
        actor_before,
        actor_after,
    }
}

/// The key's only partition (n_val 1), from its preflist.
fn preflist_partition(node: &TestNode) -> u64 {
    let r = node.http("GET", &format!("{KEY}/preflist"), &[], b"");
    let list: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(list["preflist"].as_array().map(Vec::len), Some(1));
    list["preflist"][0]["partition"].as_u64().unwrap()
}

fn actor_of(file_text: &str) -> eddy_object::Actor {
    eddy_object::Actor(u64::from_str_radix(file_text.trim(), 16).unwrap())
}

/// Deletes the commit log's segments and partition `p`'s data files,
/// keeping its actor file.
fn lose_partition_data(data: &Path, p: u64) {
    for entry in std::fs::read_dir(data.join("commit_log")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "log") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let partition = data.join(format!("partitions/{p}"));
    for entry in std::fs::read_dir(&partition).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == "actor" {
            continue;
        }
        match entry.file_type().unwrap().is_dir() {
            true => std::fs::remove_dir_all(entry.path()).unwrap(),
            false => std::fs::remove_file(entry.path()).unwrap(),
        }
    }
}

#[test]
fn kv679_a_context_from_before_a_kill9_cannot_hide_a_later_write() {
    let outcome = kv679(Down::Kill9);
    let r = outcome.last;
    assert_eq!(r.status, 300, "v2 and v3 are siblings: {}", r.text());
    let body = r.text();
    assert!(body.contains("v2") && body.contains("v3"), "{body}");
    assert_ne!(outcome.actor_before, outcome.actor_after, "actor renewed");
    let clock = context::from_base64(r.header("X-Riak-Vclock").unwrap()).unwrap();
    let fresh = actor_of(&outcome.actor_after);
    assert_eq!(clock.get(fresh), 2, "v2 and v3 counted by the new actor");
    assert_eq!(
        clock.get(actor_of(&outcome.actor_before)),
        1,
        "v1's context"
    );
}

/// The control: the same loss after a clean stop keeps the actor (a clean
/// stop loses nothing, so nothing renews it), and the old context then
/// covers v2's dot: v2, acknowledged, vanishes. Every crash would end this
/// way without the renewal.
#[test]
fn kv679_without_a_new_actor_the_old_context_hides_the_later_write() {
    let outcome = kv679(Down::CleanStop);
    assert_eq!(outcome.actor_before, outcome.actor_after, "actor kept");
    let r = outcome.last;
    assert_eq!((r.status, r.text()), (200, "v3".to_string()), "v2 vanished");
}
