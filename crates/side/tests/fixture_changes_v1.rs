//! Change log format v1, pinned: a fixed history's change-log directory,
//! file by file (`fixtures/changes_v1.txt`: each file's name and bytes in
//! hex, in name order), and those files, written raw, read back by this
//! build, which goes on above their reservation. Regenerate only for a new
//! format (`EDDY_WRITE_FIXTURES=1`), keeping v1's file.

use std::path::Path;

use eddy_side::Change;
use eddy_side::sequence::{RESERVE, Sequence};

mod hex;
use hex::{hex, unhex};

const FIXTURE: &str = "tests/fixtures/changes_v1.txt";

/// (deleted, bucket, key): writes, a rewrite, a removal and a bucket's drop.
const HISTORY: [(bool, &[u8], &[u8]); 5] = [
    (false, b"type\x00b", b"k1"),
    (false, b"type\x00b", b"k2"),
    (false, b"type\x00b", b"k1"),
    (true, b"type\x00b", b"k2"),
    (true, b"type\x00gone", b""),
];

/// Every file of `dir` as "name hex" lines, in name order.
fn render(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| format!("{n} {}\n", hex(&std::fs::read(dir.join(n)).unwrap())))
        .collect()
}

#[test]
fn format_v1_is_written_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let seq = Sequence::open(dir.path()).unwrap();
    for (deleted, bucket, key) in HISTORY {
        seq.record(deleted, bucket, key).unwrap();
    }
    seq.mark_seeded().unwrap();
    drop(seq);
    let text = render(dir.path());
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some() {
        std::fs::write(FIXTURE, &text).unwrap();
    }
    assert_eq!(text, std::fs::read_to_string(FIXTURE).unwrap());
}

#[test]
fn format_v1_reads_back_and_goes_on_above_its_reservation() {
    let dir = tempfile::tempdir().unwrap();
    for line in std::fs::read_to_string(FIXTURE).unwrap().lines() {
        let (name, bytes) = line.split_once(' ').unwrap();
        std::fs::write(dir.path().join(name), unhex(bytes)).unwrap();
    }
    let seq = Sequence::open(dir.path()).unwrap();
    assert!(seq.is_seeded());
    let mut got = Vec::new();
    seq.changes_since(None, u64::MAX, &mut |c| {
        got.push(c.clone());
        true
    })
    .unwrap();
    let change = |seq: u64, deleted: bool, bucket: &[u8], key: &[u8]| Change {
        seq,
        deleted,
        bucket: bucket.to_vec(),
        key: key.to_vec(),
    };
    let want = [
        change(3, false, b"type\x00b", b"k1"),
        change(4, true, b"type\x00b", b"k2"),
        change(5, true, b"type\x00gone", b""),
    ];
    assert_eq!(got, want);
    assert!(got[2].is_bucket_drop());
    assert_eq!(seq.record(false, b"type\x00b", b"k3").unwrap(), RESERVE + 1);
}

#[test]
fn another_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(Sequence::open(dir.path()).unwrap());
    std::fs::write(dir.path().join("format"), "2").unwrap();
    let e = Sequence::open(dir.path()).err().expect("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    assert!(e.to_string().contains("change log format"), "{e}");
}
