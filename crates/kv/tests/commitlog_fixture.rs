//! Pins the commit log formats (docs/formats/commitlog.md): a checked-in
//! segment of each version must read back as the entries below, and
//! encoding the current version's entries must give its bytes exactly.
//! Regenerate the current version's (only for a deliberate new version)
//! with `EDDY_WRITE_FIXTURES=1 cargo test -p eddy-kv --test commitlog_fixture`.

use eddy_vnode::commitlog::segment::{self, End};
use eddy_vnode::commitlog::{Dropped, Entry, FIRST_INCARNATION, Op, Position, Record, Synced};

const V1: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commitlog-v1/commit-0000000000000000.log"
);
const V2: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commitlog-v2/commit-0000000000000000.log"
);
const V3: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commitlog-v3/commit-0000000000000000.log"
);
const V4: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/commitlog-v4/commit-0000000000000000.log"
);

const VALUE: &[u8] = b"\xE0\x0B\x01 stands in for an object";

/// The records of the version 1 fixture: puts and a delete. Versions 1
/// and 2 name no incarnation: their records belong to the first.
fn v1_records() -> Vec<Record<'static>> {
    vec![
        Record {
            partition: 0,
            incarnation: FIRST_INCARNATION,
            bucket: b"\x00\x07defaultcoupons",
            key: b"SAVE10",
            op: Op::Put { value: VALUE },
        },
        Record {
            partition: 63,
            incarnation: FIRST_INCARNATION,
            bucket: b"\x00\x04mapsm",
            key: &[0, 0xff, 7],
            op: Op::Put { value: b"" },
        },
        Record {
            partition: 17,
            incarnation: FIRST_INCARNATION,
            bucket: b"\x00\x07defaultcoupons",
            key: b"SAVE10",
            op: Op::Delete,
        },
    ]
}

/// The length of the first record's frame in a version 1 or 2 segment.
const V2_FIRST_FRAME: u64 = 8 + 1 + 4 + (4 + 16) + (4 + 6) + VALUE.len() as u64;

/// Version 2 adds put-same: a replica of the first put refers to it, just
/// before.
fn v2_records() -> Vec<Record<'static>> {
    let mut records = v1_records();
    records.insert(
        1,
        Record {
            partition: 1,
            incarnation: FIRST_INCARNATION,
            bucket: b"\x00\x07defaultcoupons",
            key: b"SAVE10",
            op: Op::PutSame {
                back: V2_FIRST_FRAME,
            },
        },
    );
    records
}

/// Version 3 names each record's incarnation and adds drop records: the
/// version 2 records (partition 63 in its seventh incarnation), then a
/// drop of partition 17's second incarnation.
fn v3_entries() -> Vec<Entry<'static>> {
    let mut records = v1_records();
    records[1].incarnation = 7;
    records[2].incarnation = 2;
    let mut first = Vec::new();
    records[0].encode_into(&mut first);
    records.insert(
        1,
        Record {
            partition: 1,
            incarnation: u64::MAX,
            bucket: b"\x00\x07defaultcoupons",
            key: b"SAVE10",
            op: Op::PutSame {
                back: first.len() as u64,
            },
        },
    );
    let mut entries: Vec<Entry<'static>> = records.into_iter().map(Entry::Record).collect();
    entries.push(Entry::Dropped(Dropped {
        partition: 17,
        incarnation: 2,
    }));
    entries
}

/// Version 4 adds synced marks: the version 3 entries, then a mark saying
/// that partition 0's first incarnation's records before the second entry
/// were in its backend when it synced.
fn v4_entries() -> Vec<Entry<'static>> {
    let mut entries = v3_entries();
    let mut first = Vec::new();
    entries[0].encode_into(&mut first);
    entries.push(Entry::Synced(Synced {
        partition: 0,
        incarnation: FIRST_INCARNATION,
        upto: Position {
            seq: 0,
            offset: (segment::HEADER.len() + first.len()) as u64,
        },
    }));
    entries
}

fn encoded(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut bytes = segment::HEADER.to_vec();
    for e in entries {
        e.encode_into(&mut bytes);
    }
    bytes
}

fn read_back(path: &str) -> (Vec<u8>, Vec<String>) {
    let bytes = std::fs::read(path).expect("fixture present");
    let mut read = Vec::new();
    let end = segment::read(&bytes, |_, e| read.push(format!("{e:?}")));
    assert_eq!(end, End::Clean, "{path}");
    (bytes, read)
}

fn debug(records: &[Record<'_>]) -> Vec<String> {
    records
        .iter()
        .map(|r| format!("{:?}", Entry::Record(r.clone())))
        .collect()
}

#[test]
fn commit_log_format_v1_is_still_read_as_the_first_incarnation() {
    let (bytes, read) = read_back(V1);
    assert!(bytes.starts_with(segment::HEADER_V1));
    assert_eq!(read, debug(&v1_records()));
}

#[test]
fn commit_log_format_v2_is_still_read_as_the_first_incarnation() {
    let (bytes, read) = read_back(V2);
    assert!(bytes.starts_with(segment::HEADER_V2));
    assert_eq!(read, debug(&v2_records()));
}

#[test]
fn commit_log_format_v3_is_still_read() {
    let (bytes, read) = read_back(V3);
    assert!(bytes.starts_with(segment::HEADER_V3));
    let expected: Vec<String> = v3_entries().iter().map(|e| format!("{e:?}")).collect();
    assert_eq!(read, expected);
    // Version 4 lays out version 3's entries the same way.
    assert_eq!(encoded(&v3_entries())[8..], bytes[8..]);
}

#[test]
fn commit_log_format_v4_is_pinned() {
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some() {
        std::fs::create_dir_all(std::path::Path::new(V4).parent().unwrap()).unwrap();
        std::fs::write(V4, encoded(&v4_entries())).unwrap();
    }
    let (bytes, read) = read_back(V4);
    let expected: Vec<String> = v4_entries().iter().map(|e| format!("{e:?}")).collect();
    assert_eq!(read, expected);
    assert_eq!(encoded(&v4_entries()), bytes);
    assert_eq!(segment::seq_of("commit-0000000000000000.log"), Some(0));
}

/// Replays a fixture; what was applied as (partition, incarnation, op).
fn replay(path: &str) -> (Vec<(u32, u64, String)>, eddy_vnode::commitlog::Recovered) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(path, segment::path(dir.path(), 0)).unwrap();
    let mut applied = Vec::new();
    let out = eddy_vnode::commitlog::recover(dir.path(), |r| {
        applied.push((r.partition, r.incarnation, format!("{:?}", r.op)));
        Ok(())
    })
    .unwrap();
    (applied, out)
}

#[test]
fn replay_of_the_v2_fixture_resolves_put_same() {
    let (applied, _) = replay(V2);
    let put = format!("{:?}", Op::Put { value: VALUE });
    assert_eq!(applied[0], (0, FIRST_INCARNATION, put.clone()));
    assert_eq!(applied[1], (1, FIRST_INCARNATION, put), "resolved");
    assert_eq!(applied.len(), 4);
}

#[test]
fn replay_of_the_v4_fixture_skips_what_the_synced_mark_covers() {
    let (applied, out) = replay(V4);
    assert_eq!(applied[0].0, 1, "partition 0's put is covered by the mark");
    assert_eq!(applied.len(), 2, "and partition 17's delete was dropped");
    assert_eq!(out.skipped, 2);
}

#[test]
fn replay_of_the_v3_fixture_skips_the_dropped_incarnation() {
    let (applied, out) = replay(V3);
    let put = format!("{:?}", Op::Put { value: VALUE });
    assert_eq!(applied[0], (0, FIRST_INCARNATION, put.clone()));
    assert_eq!(applied[1], (1, u64::MAX, put), "resolved");
    assert_eq!(applied[2].0, 63);
    assert_eq!(applied.len(), 3, "partition 17's delete was dropped");
    assert_eq!(out.skipped, 1);
    let dropped = Dropped {
        partition: 17,
        incarnation: 2,
    };
    assert_eq!(out.dropped.iter().copied().collect::<Vec<_>>(), [dropped]);
}
