//! Locking, poisoning, torn tails, group commit and hint files.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, StorageError, WriteOptions};

fn open(dir: &Path) -> Bitcask {
    let config = BitcaskConfig {
        max_file_size_bytes: 8192,
        merge_check_interval_ms: 0,
        ..BitcaskConfig::default()
    };
    Bitcask::open(dir, config).expect("open")
}

fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[test]
fn second_open_of_a_directory_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    let again = Bitcask::open(dir.path(), BitcaskConfig::default());
    assert!(matches!(again, Err(StorageError::Locked(_))));
    b.close().unwrap();
    drop(b);
    open(dir.path());
}

#[test]
fn failed_fsync_poisons_writes_but_not_reads() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    b.put(b"b", b"k", b"v", &[], WriteOptions::SYNC).unwrap();
    b.inject_sync_failure();
    let err = b.put(b"b", b"k2", b"v2", &[], WriteOptions::SYNC);
    assert!(matches!(err, Err(StorageError::Poisoned(_))), "{err:?}");
    let err = b.put(b"b", b"k3", b"v3", &[], WriteOptions::NO_SYNC);
    assert!(matches!(err, Err(StorageError::Poisoned(_))), "{err:?}");
    assert!(matches!(b.sync(), Err(StorageError::Poisoned(_))));
    assert_eq!(b.get(b"b", b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn torn_tail_is_truncated_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    for i in 0..10u32 {
        b.put(
            b"b",
            &i.to_be_bytes(),
            &[i as u8; 300],
            &[],
            WriteOptions::NO_SYNC,
        )
        .unwrap();
    }
    b.close().unwrap();
    drop(b);
    let newest = files_with(dir.path(), ".data").pop().unwrap();
    for hint in files_with(dir.path(), ".hint") {
        std::fs::remove_file(hint).unwrap();
    }
    let len = std::fs::metadata(&newest).unwrap().len();
    let mut f = OpenOptions::new().append(true).open(&newest).unwrap();
    f.write_all(&[0x55; 17]).unwrap(); // half a record header
    drop(f);
    let b = open(dir.path());
    let report = b.open_report();
    assert_eq!(report.truncated.len(), 1, "{report:?}");
    assert_eq!(report.truncated[0].offset, len);
    assert_eq!(std::fs::metadata(&newest).unwrap().len(), len);
    for i in 0..10u32 {
        assert_eq!(
            b.get(b"b", &i.to_be_bytes()).unwrap(),
            Some(vec![i as u8; 300])
        );
    }
}

#[test]
fn concurrent_sync_writers_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(open(dir.path()));
    let threads: Vec<_> = (0..16u32)
        .map(|t| {
            let b = b.clone();
            std::thread::spawn(move || {
                for i in 0..50u32 {
                    let key = format!("{t}-{i}");
                    b.put(b"b", key.as_bytes(), b"v", &[], WriteOptions::SYNC)
                        .unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let st = b.status().unwrap();
    let syncs: u64 = st
        .extra
        .iter()
        .find(|(k, _)| k == "syncs")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap();
    assert_eq!(st.keys, 800);
    assert!(syncs < 800, "{syncs} fsyncs for 800 durable writes");
}

#[test]
fn reopen_uses_hint_files() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    for i in 0..200u32 {
        let value = [i as u8; 100];
        b.put(b"b", &i.to_be_bytes(), &value, &[], WriteOptions::NO_SYNC)
            .unwrap();
    }
    b.close().unwrap();
    drop(b);
    let b = open(dir.path());
    let report = b.open_report().clone();
    assert!(report.is_clean(), "{report:?}");
    assert!(report.data_files > 1, "{report:?}");
    assert_eq!(report.hints_used, report.data_files, "{report:?}");
    for i in 0..200u32 {
        let got = b.get(b"b", &i.to_be_bytes()).unwrap();
        assert_eq!(got, Some(vec![i as u8; 100]));
    }
}
