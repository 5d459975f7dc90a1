//! Pins the commit log formats (docs/formats/commitlog.md): a checked-in
//! segment of each version must read back as the records below, and
//! encoding them must give its bytes exactly. Regenerate the current
//! version's (only for a deliberate new version) with
//! `EDDY_WRITE_FIXTURES=1 cargo test -p eddy-kv --test commitlog_fixture`.

use eddy_kv::commitlog::segment::{self, End};
use eddy_kv::commitlog::{Op, Record};

const V1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commitlog-v1/commit-0000000000000000.log"
);
const V2: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commitlog-v2/commit-0000000000000000.log"
);

/// The records of the version 1 fixture: puts and a delete.
fn v1_records() -> Vec<Record<'static>> {
    vec![
        Record {
            partition: 0,
            bucket: b"\x00\x07defaultcoupons",
            key: b"SAVE10",
            op: Op::Put {
                value: b"\xE0\x0B\x01 stands in for an object",
            },
        },
        Record {
            partition: 63,
            bucket: b"\x00\x04mapsm",
            key: &[0, 0xff, 7],
            op: Op::Put { value: b"" },
        },
        Record {
            partition: 17,
            bucket: b"\x00\x07defaultcoupons",
            key: b"SAVE10",
            op: Op::Delete,
        },
    ]
}

/// Version 2 adds put-same: a replica of the first put refers to it, just
/// before.
fn v2_records() -> Vec<Record<'static>> {
    let mut records = v1_records();
    let mut first = Vec::new();
    records[0].encode_into(&mut first);
    let first_frame = first.len() as u64;
    records.insert(
        1,
        Record {
            partition: 1,
            bucket: b"\x00\x07defaultcoupons",
            key: b"SAVE10",
            op: Op::PutSame { back: first_frame },
        },
    );
    records
}

fn encoded(header: &[u8], records: &[Record<'_>]) -> Vec<u8> {
    let mut bytes = header.to_vec();
    for r in records {
        r.encode_into(&mut bytes);
    }
    bytes
}

fn read_back(path: &str) -> (Vec<u8>, Vec<String>) {
    let bytes = std::fs::read(path).expect("fixture present");
    let mut read = Vec::new();
    let end = segment::read(&bytes, |_, r| read.push(format!("{r:?}")));
    assert_eq!(end, End::Clean, "{path}");
    (bytes, read)
}

fn debug(records: &[Record<'_>]) -> Vec<String> {
    records.iter().map(|r| format!("{r:?}")).collect()
}

#[test]
fn commit_log_format_v1_is_still_read() {
    let (bytes, read) = read_back(V1);
    assert_eq!(read, debug(&v1_records()));
    assert_eq!(encoded(segment::HEADER_V1, &v1_records()), bytes);
}

#[test]
fn commit_log_format_v2_is_pinned() {
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some() {
        std::fs::write(V2, encoded(segment::HEADER, &v2_records())).unwrap();
    }
    let (bytes, read) = read_back(V2);
    assert_eq!(read, debug(&v2_records()));
    assert_eq!(encoded(segment::HEADER, &v2_records()), bytes);
    assert_eq!(segment::seq_of("commit-0000000000000000.log"), Some(0));
}

#[test]
fn replay_of_the_v2_fixture_resolves_put_same() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(V2, segment::path(dir.path(), 0)).unwrap();
    let mut applied = Vec::new();
    eddy_kv::commitlog::recover(dir.path(), |r| {
        applied.push((r.partition, format!("{:?}", r.op)));
        Ok(())
    })
    .unwrap();
    let value: &[u8] = b"\xE0\x0B\x01 stands in for an object";
    let put = format!("{:?}", Op::Put { value });
    assert_eq!(applied[0], (0, put.clone()));
    assert_eq!(applied[1], (1, put), "resolved to its value");
    assert_eq!(applied.len(), 4);
}
