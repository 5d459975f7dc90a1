//! The v1 format fixture: a directory written by the first version of this
//! code, checked in under tests/fixtures/v1, read back key by key so the
//! format can never change silently.
//!
//! Regenerate (only for a deliberate format change, with a new version):
//! `EDDY_WRITE_FIXTURE=1 cargo test -p eddy-bitcask --test fixture`.

use std::path::{Path, PathBuf};

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{
    Backend, FoldControl, FoldOptions, IndexQuery, IndexSpec, ManualClock, WriteBatch, WriteOptions,
};

const T0: u64 = 1_700_000_000;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1")
}

fn bob_value() -> Vec<u8> {
    b"bob likes long, repetitive values. ".repeat(30)
}

/// Incompressible bytes, so the fixture spans several files.
fn filler(i: u32) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ i as u64;
    (0..400)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn write_filler(b: &Bitcask, from: u32) {
    for i in from..from + 2 {
        let key = format!("f{i}");
        b.put(
            b"filler",
            key.as_bytes(),
            &filler(i),
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
    }
}

fn write_fixture(dir: &Path) {
    let config = BitcaskConfig {
        max_file_size_bytes: 1024,
        compression: true,
        merge_check_interval_ms: 0,
        clock: ManualClock::new(T0),
        ..BitcaskConfig::default()
    };
    let b = Bitcask::open(dir, config).unwrap();
    let w = WriteOptions::NO_SYNC;
    let age30 = IndexSpec::add(b"age_int", &[0, 0, 0, 30]);
    let email = IndexSpec::add(b"email_bin", b"alice@example.com");
    b.put(b"users", b"alice", b"alice v1", &[age30, email], w)
        .unwrap();
    b.put(b"users", b"bob", &bob_value(), &[], w).unwrap();
    write_filler(&b, 0);
    b.put(
        b"users",
        b"carol",
        b"carol",
        &[IndexSpec::add(b"age_int", &[0, 0, 0, 40])],
        w,
    )
    .unwrap();
    b.delete(b"users", b"carol", w).unwrap();
    let mut batch = WriteBatch::default();
    batch.put(b"users", b"erin", b"short-lived", vec![], Some(T0 + 100));
    batch.put(
        b"users",
        b"frank",
        b"long-lived",
        vec![],
        Some(T0 + 1_000_000),
    );
    b.write(batch, w).unwrap();
    b.put(b"gone", b"g1", b"dropped", &[], w).unwrap();
    b.put(b"gone", b"g2", b"dropped", &[], w).unwrap();
    write_filler(&b, 2);
    b.drop_bucket(b"gone").unwrap();
    b.put(b"gone", b"g3", b"after the drop", &[], w).unwrap();
    let birthday = [
        IndexSpec::remove(b"age_int", &[0, 0, 0, 30]),
        IndexSpec::add(b"age_int", &[0, 0, 0, 31]),
    ];
    write_filler(&b, 4);
    b.put(b"users", b"alice", b"alice v2", &birthday, w)
        .unwrap();
    b.close().unwrap();
    drop(b);
    std::fs::remove_file(dir.join("LOCK")).unwrap();
}

fn copy_fixture() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(fixture_dir()).expect("fixture directory") {
        let path = entry.unwrap().path();
        std::fs::copy(&path, tmp.path().join(path.file_name().unwrap())).unwrap();
        n += 1;
    }
    assert!(n >= 4, "fixture has only {n} files");
    tmp
}

fn index(b: &Bitcask, field: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut hits = Vec::new();
    let q = IndexQuery::range(b"users", field, b"", b"\xff\xff\xff\xff\xff");
    b.index_range(&q, &mut |t, k| {
        hits.push((t.to_vec(), k.to_vec()));
        FoldControl::Continue
    })
    .unwrap();
    hits
}

#[test]
fn v1_fixture_reads_back() {
    if std::env::var("EDDY_WRITE_FIXTURE").is_ok() {
        let dir = fixture_dir();
        let _ = std::fs::remove_dir_all(&dir);
        write_fixture(&dir);
    }
    let tmp = copy_fixture();
    let config = BitcaskConfig {
        merge_check_interval_ms: 0,
        clock: ManualClock::new(T0 + 500),
        ..BitcaskConfig::default()
    };
    let b = Bitcask::open(tmp.path(), config).unwrap();
    let report = b.open_report().clone();
    assert!(report.is_clean(), "{report:?}");
    assert!(report.data_files >= 3 && report.hints_used == report.data_files);
    let get = |bucket: &[u8], key: &[u8]| b.get(bucket, key).unwrap();
    assert_eq!(get(b"users", b"alice"), Some(b"alice v2".to_vec()));
    assert_eq!(get(b"users", b"bob"), Some(bob_value()));
    assert_eq!(get(b"users", b"carol"), None);
    assert_eq!(get(b"users", b"erin"), None, "expired");
    assert_eq!(get(b"users", b"frank"), Some(b"long-lived".to_vec()));
    assert_eq!(get(b"gone", b"g1"), None);
    assert_eq!(get(b"gone", b"g2"), None);
    assert_eq!(get(b"gone", b"g3"), Some(b"after the drop".to_vec()));
    let ages = index(&b, b"age_int");
    assert_eq!(ages, vec![(vec![0, 0, 0, 31], b"alice".to_vec())]);
    let emails = index(&b, b"email_bin");
    assert_eq!(
        emails,
        vec![(b"alice@example.com".to_vec(), b"alice".to_vec())]
    );
    let mut keys = Vec::new();
    b.fold_keys(&FoldOptions::all(), &mut |bk, k| {
        if bk == b"filler" {
            let i: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            assert_eq!(b.get(bk, k).unwrap(), Some(filler(i)));
        } else {
            keys.push((bk.to_vec(), k.to_vec()));
        }
        FoldControl::Continue
    })
    .unwrap();
    keys.sort();
    let want: Vec<(Vec<u8>, Vec<u8>)> = [
        (&b"gone"[..], &b"g3"[..]),
        (b"users", b"alice"),
        (b"users", b"bob"),
        (b"users", b"frank"),
    ]
    .iter()
    .map(|(bk, k)| (bk.to_vec(), k.to_vec()))
    .collect();
    assert_eq!(keys, want);
}
