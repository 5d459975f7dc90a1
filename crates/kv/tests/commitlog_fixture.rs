//! Pins commit log format v1 (docs/formats/commitlog.md): a checked-in
//! segment must read back as the records below, and encoding them must give
//! its bytes exactly. Regenerate (only for a deliberate new version) with
//! `EDDY_WRITE_FIXTURES=1 cargo test -p eddy-kv --test commitlog_fixture`.

use eddy_kv::commitlog::segment::{self, End};
use eddy_kv::commitlog::{Op, Record};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commit-0000000000000000.log"
);

fn records() -> Vec<Record<'static>> {
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

fn encoded() -> Vec<u8> {
    let mut bytes = segment::HEADER.to_vec();
    for r in records() {
        r.encode_into(&mut bytes);
    }
    bytes
}

#[test]
fn commit_log_format_v1_is_pinned() {
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some() {
        std::fs::write(PATH, encoded()).unwrap();
    }
    let bytes = std::fs::read(PATH).expect("fixture present");
    let mut read = Vec::new();
    let end = segment::read(&bytes, |r| {
        read.push(format!("{r:?}"));
    });
    assert_eq!(end, End::Clean);
    let expected: Vec<String> = records().iter().map(|r| format!("{r:?}")).collect();
    assert_eq!(read, expected);
    assert_eq!(encoded(), bytes, "encoding is byte for byte the fixture");
    assert_eq!(segment::seq_of("commit-0000000000000000.log"), Some(0));
}
