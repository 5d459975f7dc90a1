//! The recovery report through the storage contract: flipped bytes and a
//! truncated tail in the newest data file show up in
//! `Backend::recovery_report` with their counts and the file's name, and
//! a clean reopen reports nothing.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, RecoveryReport, WriteOptions};

fn config() -> BitcaskConfig {
    BitcaskConfig {
        merge_check_interval_ms: 0,
        ..BitcaskConfig::default()
    }
}

/// Writes 200 keys of 200 bytes each and closes.
fn populate(dir: &Path) {
    let b = Bitcask::open(dir, config()).unwrap();
    for i in 0..200u32 {
        let key = format!("key-{i:04}");
        let value = vec![b'v'; 200];
        b.put(b"b", key.as_bytes(), &value, &[], WriteOptions::NO_SYNC)
            .unwrap();
    }
    b.close().unwrap();
}

/// The data file with the highest id that holds records; its hint file is
/// removed so that the next open scans it.
fn newest_data_file(dir: &Path) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".bitcask.data"))
        .filter(|p| std::fs::metadata(p).unwrap().len() > 1024)
        .collect();
    files.sort();
    let newest = files.pop().expect("a data file with records");
    let hint = newest.with_extension("hint");
    let _ = std::fs::remove_file(hint);
    newest
}

fn reopen_report(dir: &Path) -> RecoveryReport {
    let b = Bitcask::open(dir, config()).unwrap();
    let report = b.recovery_report();
    b.close().unwrap();
    report
}

#[test]
fn a_clean_reopen_reports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let report = reopen_report(dir.path());
    assert_eq!(report, RecoveryReport::default());
    assert!(!report.lost_records());
}

#[test]
fn flipped_bytes_are_reported_as_skipped_ranges() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let file = newest_data_file(dir.path());
    let len = std::fs::metadata(&file).unwrap().len();
    let f = OpenOptions::new().write(true).open(&file).unwrap();
    for at in [len / 3, len / 2] {
        f.write_all_at(b"\xff\x00\xff", at).unwrap();
    }
    drop(f);
    let report = reopen_report(dir.path());
    assert!(report.lost_records(), "{report:?}");
    assert!(report.ranges_skipped >= 1, "{report:?}");
    assert!(report.bytes_skipped > 0, "{report:?}");
    assert_eq!(report.files, vec![file]);
}

#[test]
fn a_truncated_tail_is_reported_with_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path());
    let file = newest_data_file(dir.path());
    let len = std::fs::metadata(&file).unwrap().len();
    // Cut the last record in half.
    let cut_to = len - 100;
    OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(cut_to)
        .unwrap();
    let report = reopen_report(dir.path());
    assert!(report.lost_records(), "{report:?}");
    assert_eq!(report.tails_truncated, 1, "{report:?}");
    assert!(report.bytes_truncated > 0 && report.bytes_truncated < 400);
    assert_eq!(report.files, vec![file.clone()]);
    // The tail is gone now: the next open is clean.
    assert_eq!(reopen_report(dir.path()), RecoveryReport::default());
}
