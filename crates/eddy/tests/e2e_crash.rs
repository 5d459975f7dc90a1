//! kill -9 of the real binary in the middle of concurrent durable writes,
//! on each persistent backend, with commit-log segments small enough that
//! checkpoints run during the load. After a restart every acknowledged
//! write is there: each key holds its last acknowledged value or a value
//! written after it (a write in flight at the kill may or may not land),
//! and the 2i entries (each write indexes its own term, in the vnodes'
//! side stores) are exactly those of the values the keys hold.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{TestNode, http};

const WRITERS: usize = 4;
const KEYS_PER_WRITER: usize = 20;

/// Per key: every value attempted, in order, and how many of them were
/// acknowledged before the first unacknowledged one.
type History = HashMap<String, (Vec<String>, usize)>;

fn writer(port: u16, w: usize, stop: Arc<AtomicBool>, history: Arc<Mutex<History>>) {
    let padding = "x".repeat(2000);
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let key = format!("w{w}-{}", i % KEYS_PER_WRITER);
        let term = format!("{w}-{i}");
        let value = format!("{term}-{padding}");
        history
            .lock()
            .unwrap()
            .entry(key.clone())
            .or_default()
            .0
            .push(value.clone());
        let path = format!("/buckets/crash/keys/{key}?dw=all");
        let headers = [
            ("Content-Type", "text/plain"),
            ("x-riak-index-v_bin", &term),
        ];
        match http(port, "PUT", &path, &headers, value.as_bytes()) {
            Ok(r) if r.status == 204 => {
                let mut h = history.lock().unwrap();
                let entry = h.get_mut(&key).unwrap();
                entry.1 = entry.0.len();
            }
            // The node is gone: this write and the rest are unacknowledged.
            _ => return,
        }
    }
}

fn kill9_mid_load_keeps_acknowledged_writes(backend: &str) {
    let mut node = TestNode::start(&[
        ("EDDY_STORAGE_BACKEND", backend),
        ("EDDY_COMMIT_LOG_SEGMENT_SIZE", "1MB"),
    ]);
    let port = node.http_port;
    let stop = Arc::new(AtomicBool::new(false));
    let history = Arc::new(Mutex::new(History::new()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (stop, history) = (stop.clone(), history.clone());
            std::thread::spawn(move || writer(port, w, stop, history))
        })
        .collect();
    // Let the load run long enough to fill and checkpoint a few segments.
    while history
        .lock()
        .unwrap()
        .values()
        .map(|(_, a)| *a)
        .sum::<usize>()
        < 1500
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    node.kill9();
    stop.store(true, Ordering::Relaxed);
    writers.into_iter().for_each(|w| w.join().unwrap());
    node.restart();

    let history = history.lock().unwrap();
    let mut acked_keys = 0;
    let mut held = std::collections::BTreeSet::new();
    for (key, (attempted, acked)) in history.iter() {
        let r = node.http("GET", &format!("/buckets/crash/keys/{key}"), &[], b"");
        if *acked == 0 {
            assert!(r.status == 404 || r.status == 200, "{key}: {}", r.status);
            continue;
        }
        acked_keys += 1;
        assert_eq!(r.status, 200, "{backend}: acknowledged key {key} lost");
        let stored = r.text();
        assert!(
            attempted[acked - 1..].contains(&stored),
            "{backend}: {key} went back to an older value than its last acknowledged one"
        );
        let term: Vec<&str> = stored.splitn(3, '-').take(2).collect();
        held.insert((term.join("-"), key.clone()));
    }
    assert_eq!(acked_keys, WRITERS * KEYS_PER_WRITER);
    // Keys a write may have created unacknowledged hold entries too.
    for (key, (_, acked)) in history.iter().filter(|(_, (_, a))| *a == 0) {
        let r = node.http("GET", &format!("/buckets/crash/keys/{key}"), &[], b"");
        if r.status == 200 {
            let text = r.text();
            let term: Vec<&str> = text.splitn(3, '-').take(2).collect();
            held.insert((term.join("-"), key.clone()));
        }
        assert_eq!(*acked, 0);
    }
    let r = node.http(
        "GET",
        "/buckets/crash/index/v_bin/0/9~?return_terms=true",
        &[],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let answer: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let indexed: std::collections::BTreeSet<(String, String)> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e.as_object().unwrap().iter())
        .map(|(t, k)| (t.clone(), k.as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        indexed, held,
        "{backend}: 2i entries and the stored values disagree"
    );
}

#[test]
fn kill9_mid_load_keeps_acknowledged_writes_on_bitcask() {
    kill9_mid_load_keeps_acknowledged_writes("bitcask");
}

#[test]
fn kill9_mid_load_keeps_acknowledged_writes_on_lsm() {
    kill9_mid_load_keeps_acknowledged_writes("lsm");
}
