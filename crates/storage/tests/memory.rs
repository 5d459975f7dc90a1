//! The memory and multi backends against the shared conformance suite.

use std::collections::BTreeMap;
use std::path::Path;

use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::multi::MultiBackend;
use eddy_storage::testkit::{BackendFactory, OpenOptions, run_conformance};
use eddy_storage::{Backend, ManualClock, WriteOptions};

struct Memory;

impl BackendFactory for Memory {
    fn open(&self, _dir: &Path, opts: &OpenOptions) -> Box<dyn Backend> {
        Box::new(MemoryBackend::new(MemoryConfig {
            max_memory_bytes: None,
            expiry_secs: opts.expiry_secs,
            clock: opts.clock.clone(),
        }))
    }
}

/// Two memory sub-backends; some of the suite's buckets go to the second.
struct Multi;

impl BackendFactory for Multi {
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Box<dyn Backend> {
        let mut subs: BTreeMap<String, Box<dyn Backend>> = BTreeMap::new();
        subs.insert("mem1".into(), Memory.open(dir, opts));
        subs.insert("mem2".into(), Memory.open(dir, opts));
        let multi = MultiBackend::new(subs, "mem1").unwrap();
        for bucket in [&b"a\x00"[..], b"b", b"kept", b"many"] {
            multi.assign(bucket, Some("mem2")).unwrap();
        }
        Box::new(multi)
    }
}

fn test_opts() -> OpenOptions {
    OpenOptions {
        clock: ManualClock::new(1),
        expiry_secs: 0,
    }
}

/// The key count a multi backend's status reports for sub-backend `name`.
fn sub_backend_keys(status: &eddy_storage::BackendStatus, name: &str) -> Option<String> {
    let wanted = format!("{name}.keys");
    status
        .extra
        .iter()
        .find(|(k, _)| *k == wanted)
        .map(|(_, v)| v.clone())
}

#[test]
fn memory_conforms() {
    run_conformance(&Memory);
}

#[test]
fn multi_conforms() {
    run_conformance(&Multi);
}

#[test]
fn multi_routes_buckets_and_rejects_unknown_names() {
    let opts = test_opts();
    let multi = Multi.open(Path::new("unused"), &opts);
    multi
        .put(b"b", b"k", b"v", &[], WriteOptions::SYNC)
        .unwrap();
    let status = multi.status().unwrap();
    let keys_of = |name: &str| sub_backend_keys(&status, name);
    assert_eq!(keys_of("mem2").as_deref(), Some("1"));
    assert_eq!(keys_of("mem1").as_deref(), Some("0"));
    let subs: BTreeMap<String, Box<dyn Backend>> = BTreeMap::new();
    assert!(MultiBackend::new(subs, "nope").is_err());
}

#[test]
fn multi_asks_its_chooser_and_falls_back_to_the_default() {
    let opts = test_opts();
    let mut subs: BTreeMap<String, Box<dyn Backend>> = BTreeMap::new();
    subs.insert("a".into(), Memory.open(Path::new("unused"), &opts));
    subs.insert("b".into(), Memory.open(Path::new("unused"), &opts));
    let chooser: eddy_storage::multi::BackendChooser =
        std::sync::Arc::new(|bucket: &[u8]| match bucket {
            b"to-b" => Some("b".to_string()),
            b"bogus" => Some("nope".to_string()),
            _ => None,
        });
    let multi = MultiBackend::new(subs, "a").unwrap().with_chooser(chooser);
    for bucket in [&b"to-b"[..], b"bogus", b"plain"] {
        multi
            .put(bucket, b"k", b"v", &[], WriteOptions::SYNC)
            .unwrap();
    }
    let status = multi.status().unwrap();
    let keys_of = |name: &str| sub_backend_keys(&status, name);
    assert_eq!(keys_of("b").as_deref(), Some("1"));
    assert_eq!(
        keys_of("a").as_deref(),
        Some("2"),
        "unknown and unset names go to the default"
    );
    assert!(multi.get(b"to-b", b"k").unwrap().is_some());
}

#[test]
fn memory_evicts_oldest_beyond_its_cap() {
    let backend = MemoryBackend::new(MemoryConfig {
        max_memory_bytes: Some(20_000),
        ..MemoryConfig::default()
    });
    for i in 0..100u32 {
        let value = vec![7u8; 1_000];
        backend
            .put(b"b", &i.to_be_bytes(), &value, &[], WriteOptions::NO_SYNC)
            .unwrap();
    }
    let status = backend.status().unwrap();
    assert!(status.live_bytes <= 20_000, "{status:?}");
    assert!(status.keys >= 10, "evicted too much: {status:?}");
    assert_eq!(
        backend.get(b"b", &0u32.to_be_bytes()).unwrap(),
        None,
        "oldest kept"
    );
    assert!(
        backend.get(b"b", &99u32.to_be_bytes()).unwrap().is_some(),
        "newest evicted"
    );
}
