//! Object calls over a node's HTTP API for the cluster tests: a put with
//! w = 2, a get with r = 2 and listing a bucket's keys. Each returns what
//! went wrong as text (`HTTP 503: …`, or the connection error), so a
//! client under load can count its errors by kind.

use std::collections::{BTreeMap, BTreeSet};

use super::http;

/// Puts `value` (text) at `bucket`/`key` on the node at `port` with
/// w = 2; `Err` says why it was not acknowledged.
pub fn put_w2(port: u16, bucket: &str, key: &str, value: &str) -> Result<(), String> {
    let path = format!("/buckets/{bucket}/keys/{key}?w=2");
    let headers = [("Content-Type", "text/plain")];
    match http(port, "PUT", &path, &headers, value.as_bytes()) {
        Ok(r) if r.status == 204 => Ok(()),
        Ok(r) => Err(status_text(r.status, &r.text())),
        Err(e) => Err(io_text(&e)),
    }
}

/// Gets `bucket`/`key` from the node at `port` with r = 2: `Ok(None)` is
/// not found, `Err` a failed read.
pub fn get_r2(port: u16, bucket: &str, key: &str) -> Result<Option<String>, String> {
    let path = format!("/buckets/{bucket}/keys/{key}?r=2");
    match http(port, "GET", &path, &[], b"") {
        Ok(r) if r.status == 200 => Ok(Some(r.text())),
        Ok(r) if r.status == 404 => Ok(None),
        Ok(r) => Err(status_text(r.status, &r.text())),
        Err(e) => Err(io_text(&e)),
    }
}

/// Every key the node at `port` lists in `bucket`, sorted.
pub fn list_keys(port: u16, bucket: &str) -> Vec<String> {
    let path = format!("/buckets/{bucket}/keys?keys=true");
    let r = http(port, "GET", &path, &[], b"").expect("list keys");
    assert_eq!(r.status, 200, "list keys: {}", r.text());
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let mut keys: Vec<String> = body["keys"]
        .as_array()
        .expect("a key list")
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

/// The error text of a node that refused the connection (it has stopped).
pub const REFUSED: &str = "connection refused";

fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => REFUSED.to_string(),
        _ => e.to_string(),
    }
}

/// An error answer in one line: the status and the start of the body.
fn status_text(status: u16, body: &str) -> String {
    let line = body.lines().next().unwrap_or("").trim();
    let short: String = line.chars().take(120).collect();
    format!("HTTP {status}: {short}")
}

/// Asserts that every node on `ports` (read in parallel) reads every key
/// of `acked` in `bucket` with r = 2 and finds its value, and lists every
/// one of them and no key outside `attempted`.
pub fn assert_all_readable(
    ports: &[u16],
    bucket: &str,
    acked: &BTreeMap<String, String>,
    attempted: &[String],
) {
    std::thread::scope(|s| {
        for &port in ports {
            s.spawn(move || {
                assert_readable(port, bucket, acked);
                assert_listed(port, bucket, acked, attempted);
            });
        }
    });
}

fn assert_readable(port: u16, bucket: &str, acked: &BTreeMap<String, String>) {
    let wrong: Vec<(&String, Result<Option<String>, String>)> = acked
        .iter()
        .map(|(k, v)| (k, v, get_r2(port, bucket, k)))
        .filter(|(_, v, got)| got.as_ref().ok() != Some(&Some(v.to_string())))
        .map(|(k, _, got)| (k, got))
        .collect();
    assert!(
        wrong.is_empty(),
        "node on port {port}: {} of {} acknowledged writes unreadable, first: {:?}",
        wrong.len(),
        acked.len(),
        &wrong[..wrong.len().min(5)]
    );
}

fn assert_listed(port: u16, bucket: &str, acked: &BTreeMap<String, String>, attempted: &[String]) {
    let listed = list_keys(port, bucket);
    let missing: Vec<&String> = acked
        .keys()
        .filter(|k| listed.binary_search(k).is_err())
        .collect();
    assert!(
        missing.is_empty(),
        "node on port {port}: listing misses {} keys: {missing:?}",
        missing.len()
    );
    let known: BTreeSet<&String> = attempted.iter().collect();
    let strangers: Vec<&String> = listed.iter().filter(|k| !known.contains(k)).collect();
    assert!(
        strangers.is_empty(),
        "node on port {port}: listing finds keys never written: {strangers:?}"
    );
}
