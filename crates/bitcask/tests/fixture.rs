//! The v1 format fixture: a directory written by the first version of this
//! code, checked in under tests/fixtures/v1, read back key by key so the
//! format can never change silently.
//!
//! That version kept index entries: its value records and hint entries hold
//! term sets (alice's `age_int` and `email_bin`, carol's `age_int`). They
//! are read past, whether open uses the hint files or scans the data
//! files, and a merge copies those records without them. The fixture is
//! frozen: this code writes no term sets, so it cannot write it again.
//!
//! What it holds, in order (files of 1 KiB, lz4 on, the clock at
//! 1,700,000,000): alice with two terms; bob's long, compressible value;
//! two fillers; carol with a term, then deleted; erin expiring at +100 and
//! frank at +1,000,000 in one batch; g1 and g2 in bucket `gone`; two
//! fillers; `gone` dropped, then g3 written to it; two fillers; alice again
//! with one term removed and one added.

use std::path::{Path, PathBuf};

use eddy_bitcask::format::Record;
use eddy_bitcask::scan::{ScanEvent, scan};
use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, FoldControl, FoldOptions, IndexQuery, ManualClock};

const T0: u64 = 1_700_000_000;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1")
}

fn bob_value() -> Vec<u8> {
    b"bob likes long, repetitive values. ".repeat(30)
}

/// The fillers' incompressible bytes, which spread the fixture over
/// several files.
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

fn open(dir: &Path) -> Bitcask {
    let config = BitcaskConfig {
        merge_check_interval_ms: 0,
        clock: ManualClock::new(T0 + 500),
        ..BitcaskConfig::default()
    };
    Bitcask::open(dir, config).unwrap()
}

/// Calls `f` with every record of the directory's data files.
fn for_each_record(dir: &Path, mut f: impl FnMut(&Record<'_>)) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".bitcask.data") {
            continue;
        }
        let file = std::fs::File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        scan(&file, &path, len, |ev| {
            if let ScanEvent::Record { record, .. } = ev {
                f(&record);
            }
            Ok(())
        })
        .unwrap();
    }
}

/// Keys of the records that hold a term set, sorted.
fn keys_with_terms(dir: &Path) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for_each_record(dir, |r| {
        if r.header.terms_len > 0 {
            keys.push(r.key.to_vec());
        }
    });
    keys.sort();
    keys
}

/// Checks every object of the fixture, and that no index entry is answered.
fn check(b: &Bitcask) {
    let get = |bucket: &[u8], key: &[u8]| b.get(bucket, key).unwrap();
    assert_eq!(get(b"users", b"alice"), Some(b"alice v2".to_vec()));
    assert_eq!(get(b"users", b"bob"), Some(bob_value()));
    assert_eq!(get(b"users", b"carol"), None);
    assert_eq!(get(b"users", b"erin"), None, "expired");
    assert_eq!(get(b"users", b"frank"), Some(b"long-lived".to_vec()));
    assert_eq!(get(b"gone", b"g1"), None);
    assert_eq!(get(b"gone", b"g2"), None);
    assert_eq!(get(b"gone", b"g3"), Some(b"after the drop".to_vec()));
    for field in [&b"age_int"[..], b"email_bin"] {
        let q = IndexQuery::range(b"users", field, b"", b"\xff\xff\xff\xff\xff");
        b.index_range(&q, &mut |t, k| panic!("index entry {t:?} {k:?} answered"))
            .unwrap();
    }
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

#[test]
fn the_fixture_holds_term_sets() {
    let tmp = copy_fixture();
    let keys = keys_with_terms(tmp.path());
    assert_eq!(keys, [&b"alice"[..], b"alice", b"carol"]);
}

#[test]
fn v1_fixture_reads_back_from_its_hint_files() {
    let tmp = copy_fixture();
    let b = open(tmp.path());
    let report = b.open_report().clone();
    assert!(report.is_clean(), "{report:?}");
    assert!(report.data_files >= 3 && report.hints_used == report.data_files);
    check(&b);
}

#[test]
fn v1_fixture_reads_back_from_its_data_files() {
    let tmp = copy_fixture();
    for entry in std::fs::read_dir(tmp.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".bitcask.hint") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let b = open(tmp.path());
    let report = b.open_report().clone();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.hints_used, 0);
    check(&b);
}

#[test]
fn a_merge_copies_the_fixture_without_its_term_sets() {
    let tmp = copy_fixture();
    let b = open(tmp.path());
    let stats = b.merge(true).unwrap();
    assert!(stats.input_files >= 4, "{stats:?}");
    check(&b);
    let live_bytes = b.status().unwrap().live_bytes;
    b.close().unwrap();
    drop(b);
    assert!(keys_with_terms(tmp.path()).is_empty());
    let mut on_disk = 0;
    for_each_record(tmp.path(), |r| on_disk += r.header.total_len());
    assert_eq!(
        on_disk, live_bytes,
        "the keydir counts the records as written"
    );
    let b = open(tmp.path());
    assert!(b.open_report().is_clean());
    check(&b);
}
