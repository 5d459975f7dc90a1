//! Damaged bitcask files with the real binary: stop a node, damage the
//! newest data file of every partition, start it again. In each key's
//! primary partition the records of its latest value, or of its delete and
//! reap, get a flipped byte (so that partition shows an older value or a
//! deleted key), and every file loses its tail. The damage is logged (one
//! warning per partition) and counted in `/stats`; `eddy admin repair all
//! --wait` repairs every marked partition, after which every acknowledged
//! latest value and every delete holds, and a restart marks nothing again.
//! The node is stopped cleanly, so its commit log is checkpointed and
//! removed and no replay can undo the damage (after a kill -9 the outcome
//! would hang on how far the last checkpoint got). Filler writes to another
//! bucket come last, so the tails cut hold no record of the checked keys.

mod support;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use eddy_bitcask::scan::{ScanEvent, scan};
use serde_json::Value;
use support::{TestNode, http};

const KEYS: usize = 300;

fn deleted(i: usize) -> bool {
    i.is_multiple_of(3)
}

fn value(i: usize, round: &str) -> String {
    format!("{round}-{i}-{}", "x".repeat(3000))
}

fn write_all(node: &TestNode) {
    let headers = [("Content-Type", "text/plain")];
    for round in ["v1", "v2"] {
        for i in 0..KEYS {
            let path = format!("/buckets/b/keys/k{i}?dw=all");
            let r = node.http("PUT", &path, &headers, value(i, round).as_bytes());
            assert_eq!(r.status, 204);
        }
    }
    for i in (0..KEYS).filter(|i| deleted(*i)) {
        let r = node.http("DELETE", &format!("/buckets/b/keys/k{i}?dw=all"), &[], b"");
        assert_eq!(r.status, 204);
    }
}

/// Writes to another bucket, after the checked keys' records in every
/// partition's newest file.
fn write_filler(node: &TestNode) {
    let headers = [("Content-Type", "text/plain")];
    let filler = "f".repeat(8000);
    for i in 0..400 {
        let path = format!("/buckets/filler/keys/f{i}?dw=all");
        assert_eq!(
            node.http("PUT", &path, &headers, filler.as_bytes()).status,
            204
        );
    }
}

/// Each key's primary partition.
fn primaries(node: &TestNode) -> Vec<u64> {
    (0..KEYS)
        .map(|i| {
            let r = node.http("GET", &format!("/buckets/b/keys/k{i}/preflist"), &[], b"");
            let list: Value = serde_json::from_slice(&r.body).unwrap();
            list["preflist"][0]["partition"].as_u64().unwrap()
        })
        .collect()
}

/// In partition `p`'s newest data file, flips a byte in the records that
/// made each key `p` is primary for what it is now (its v2 write, or its
/// delete's tombstone and reap), and cuts the file's tail; false if the
/// partition has no data file.
fn damage_partition(data: &Path, p: u64, primaries: &[u64]) -> bool {
    let dir = data.join("partitions").join(p.to_string()).join("bitcask");
    let Some(path) = newest_data_file(&dir) else {
        return false;
    };
    let _ = std::fs::remove_file(path.with_extension("hint"));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let len = file.metadata().unwrap().len();
    let mut records: Vec<(usize, Vec<(u64, u64)>)> = vec![(0, Vec::new()); KEYS];
    scan(&file, &path, len, |ev| {
        if let ScanEvent::Record {
            offset,
            raw,
            record,
        } = ev
            && record.bucket.ends_with(b"b")
            && let Some(i) = key_index(record.key)
            && primaries[i] == p
        {
            records[i].1.push((offset, raw.len() as u64));
        }
        Ok(())
    })
    .unwrap();
    for (i, (_, recs)) in records.iter().enumerate() {
        // v1, v2, then (deleted keys) the tombstone and the reap.
        let undone = match deleted(i) {
            true => recs.get(2..).unwrap_or_default(),
            false => recs.get(1..2).unwrap_or_default(),
        };
        for (offset, len) in undone {
            file.write_all_at(&[0x5a], offset + len / 2).unwrap();
        }
    }
    file.set_len(len - 100).unwrap();
    true
}

fn key_index(key: &[u8]) -> Option<usize> {
    std::str::from_utf8(key.strip_prefix(b"k")?)
        .ok()?
        .parse()
        .ok()
}

fn newest_data_file(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".bitcask.data"))
        .filter(|p| std::fs::metadata(p).unwrap().len() > 8192)
        .collect();
    files.sort();
    files.pop()
}

/// Starts `eddy start` with its standard error in `log`.
fn start_logging(node: &TestNode, log: &Path) -> Child {
    let child = node
        .command(&["start"])
        .stdout(Stdio::null())
        .stderr(File::create(log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !http(node.http_port, "GET", "/ping", &[], b"").is_ok_and(|r| r.status == 200) {
        assert!(Instant::now() < deadline, "eddy did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

#[allow(unsafe_code, reason = "signals the test's own child")]
fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
}

fn stats(node: &TestNode) -> Value {
    serde_json::from_slice(&node.http("GET", "/stats", &[], b"").body).unwrap()
}

fn check_every_key(node: &TestNode) {
    for i in 0..KEYS {
        let r = node.http("GET", &format!("/buckets/b/keys/k{i}"), &[], b"");
        match deleted(i) {
            true => assert_eq!(r.status, 404, "deleted key k{i} came back"),
            false => {
                assert_eq!(r.status, 200, "k{i}");
                assert_eq!(r.text(), value(i, "v2"), "k{i} is not its latest value");
            }
        }
    }
}

/// A node that wrote, was killed and had its files damaged (not running);
/// returns it and how many partitions were damaged.
fn damaged_node(partition_repair: &str) -> (TestNode, usize) {
    let mut node = TestNode::start(&[
        ("EDDY_PARTITION_REPAIR", partition_repair),
        ("EDDY_DELETE_MODE", "immediate"),
        ("EDDY_COMMIT_LOG_SEGMENT_SIZE", "1MB"),
        ("EDDY_LOG_LEVEL", "info"),
    ]);
    write_all(&node);
    write_filler(&node);
    let primaries = primaries(&node);
    assert!(node.stop().success());
    let damaged = (0..16)
        .filter(|p| damage_partition(&node.data_dir(), *p, &primaries))
        .count();
    assert!(damaged > 0);
    (node, damaged)
}

#[test]
fn with_partition_repair_auto_the_node_repairs_itself() {
    let (node, damaged) = damaged_node("auto");
    let log = node.data_dir().join("..").join("start.log");
    let child = start_logging(&node, &log);
    let deadline = Instant::now() + Duration::from_secs(60);
    while stats(&node)["repair_pending_partitions"] != 0 {
        assert!(Instant::now() < deadline, "automatic repair did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(stats(&node)["repairs_completed_total"], damaged);
    check_every_key(&node);
    stop(child);
}

#[test]
fn damage_is_logged_counted_and_repaired() {
    let (node, damaged) = damaged_node("manual");

    let log = node.data_dir().join("..").join("start.log");
    let child = start_logging(&node, &log);
    let text = std::fs::read_to_string(&log).unwrap();
    let warnings = text.matches("recovery lost records").count();
    assert_eq!(
        warnings, damaged,
        "one warning per damaged partition:\n{text}"
    );
    assert!(
        text.contains(".bitcask.data"),
        "the files are named:\n{text}"
    );
    let s = stats(&node);
    assert_eq!(s["recovery_damaged_partitions"], damaged);
    assert_eq!(s["repair_pending_partitions"], damaged);
    assert!(s["recovery_bytes_truncated"].as_u64().unwrap() > 0);
    assert!(s["recovery_bytes_skipped"].as_u64().unwrap() > 0);
    // Every replica is marked, so reads answer as before repair: the
    // damage shows (a deleted key is back).
    let back = (0..KEYS)
        .filter(|i| deleted(*i))
        .filter(|i| {
            node.http("GET", &format!("/buckets/b/keys/k{i}"), &[], b"")
                .status
                == 200
        })
        .count();
    assert!(back > 0, "the damage must undo deletes");

    let out = node
        .command(&["admin", "repair", "all", "--wait"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("repaired"));
    let s = stats(&node);
    assert_eq!(s["repair_pending_partitions"], 0);
    assert_eq!(s["repairs_completed_total"], damaged);
    assert_eq!(s["repairs_running"], 0);
    check_every_key(&node);
    stop(child);

    // Restarted, nothing is marked again and everything still holds.
    let child = start_logging(&node, &log);
    assert_eq!(stats(&node)["repair_pending_partitions"], 0);
    check_every_key(&node);
    stop(child);
}
