//! Segment files: naming, the header, and reading one back as records.
//! (Creating one is `writer::Segment::create`.)
//!
//! A segment is `commit-<seq as 16 hex digits>.log`; sequence numbers only
//! grow, so name order is log order. A segment is allocated at its full
//! size up front, so its records are followed by zeros. Invariant: a
//! segment is read up to its first frame that is not a whole, intact
//! record; nothing after that point is trusted (lengths past a damaged
//! frame mean nothing).

use std::io;
use std::path::{Path, PathBuf};

use super::record::{Entry, FRAME_HEADER_BYTES, Frame, Version, decode_frame};

/// The first bytes of every segment written now: magic and format version
/// 4 (records name their vnode incarnation; drop records; synced marks).
pub const HEADER: &[u8; 8] = b"EDDYCL\x00\x04";
/// The header of a version 3 segment (no synced marks), still read.
pub const HEADER_V3: &[u8; 8] = b"EDDYCL\x00\x03";
/// The header of a version 2 segment (version 1 plus put-same), still read.
pub const HEADER_V2: &[u8; 8] = b"EDDYCL\x00\x02";
/// The header of a version 1 segment, still read.
pub const HEADER_V1: &[u8; 8] = b"EDDYCL\x00\x01";

/// Every header read, with the version it announces.
const HEADERS: [(&[u8; 8], Version); 4] = [
    (HEADER, Version::V4),
    (HEADER_V3, Version::V3),
    (HEADER_V2, Version::V2),
    (HEADER_V1, Version::V1),
];

/// The path of segment `seq` in `dir`.
pub fn path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("commit-{seq:016x}.log"))
}

/// The sequence number of a segment file name, if it is one.
pub fn seq_of(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("commit-")?.strip_suffix(".log")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok())?
}

/// The segments in `dir`, oldest first.
pub fn list(dir: &Path) -> io::Result<Vec<u64>> {
    let mut seqs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        if let Some(seq) = entry?.file_name().to_str().and_then(seq_of) {
            seqs.push(seq);
        }
    }
    seqs.sort_unstable();
    Ok(seqs)
}

/// How reading a segment ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Every byte was part of a record.
    Clean,
    /// The last frame was cut short (a crash during a write).
    Torn { offset: usize },
    /// A frame was damaged; the rest of the segment was skipped.
    Damaged { offset: usize, reason: &'static str },
}

/// Calls `f` on each entry of a segment's bytes, in order, with the offset
/// of its frame, and says how the segment ended.
pub fn read<'a>(bytes: &'a [u8], mut f: impl FnMut(usize, Entry<'a>)) -> End {
    let rest = HEADERS
        .iter()
        .find_map(|(h, v)| Some((bytes.strip_prefix(h.as_slice())?, *v)));
    let Some((mut rest, version)) = rest else {
        let reason = "segment header missing or of another version";
        let cut_header = HEADERS.iter().any(|(h, _)| h.starts_with(bytes));
        return match bytes.len() < HEADER.len() && cut_header {
            true => End::Torn { offset: 0 },
            false => End::Damaged { offset: 0, reason },
        };
    };
    let mut offset = HEADER.len();
    while !rest.is_empty() {
        if is_zero(rest) {
            // The unwritten rest of a preallocated segment.
            return End::Clean;
        }
        match decode_frame(rest, version) {
            Frame::Entry(entry, used) => {
                f(offset, entry);
                rest = &rest[used..];
                offset += used;
            }
            Frame::Torn => return End::Torn { offset },
            // A record whose copy a crash cut short, with nothing after it.
            Frame::Damaged(_) if cut_short(rest) => return End::Torn { offset },
            Frame::Damaged(reason) => return End::Damaged { offset, reason },
        }
    }
    End::Clean
}

fn is_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| *b == 0)
}

/// Whether the damaged frame at the start of `rest` is the last thing in
/// the segment: all zero from where it says it ends, or its header itself
/// still zero (the copy had not reached it).
fn cut_short(rest: &[u8]) -> bool {
    let Some(header) = rest.get(..FRAME_HEADER_BYTES) else {
        return true;
    };
    let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let end = FRAME_HEADER_BYTES.saturating_add(len);
    is_zero(header) || rest.get(end..).is_some_and(is_zero)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commitlog::record::{Op, Record};

    /// The key of a record, or nothing for a drop.
    fn key(e: &Entry<'_>) -> Vec<u8> {
        match e {
            Entry::Record(r) => r.key.to_vec(),
            Entry::Dropped(_) | Entry::Synced(_) => Vec::new(),
        }
    }

    #[test]
    fn names_sort_in_log_order() {
        let dir = Path::new("/x");
        let name = |s| {
            path(dir, s)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(seq_of(&name(0x1f)), Some(0x1f));
        assert!(name(9) < name(10) && name(0xff) < name(0x100));
        assert_eq!(seq_of("commit-1.log"), None);
        assert_eq!(seq_of("other"), None);
    }

    #[test]
    fn reading_stops_at_damage_and_reports_it() {
        let mut bytes = HEADER.to_vec();
        let rec = |k: &'static [u8]| Record {
            partition: 1,
            incarnation: 1,
            bucket: b"b",
            key: k,
            op: Op::Put { value: b"v" },
        };
        rec(b"k1").encode_into(&mut bytes);
        let second = bytes.len();
        rec(b"k2").encode_into(&mut bytes);
        rec(b"k3").encode_into(&mut bytes);
        let mut keys = Vec::new();
        assert_eq!(read(&bytes, |_, e| keys.push(key(&e))), End::Clean);
        assert_eq!(keys.len(), 3);

        let mut damaged = bytes.clone();
        damaged[second + 12] ^= 0x40;
        keys.clear();
        let end = read(&damaged, |_, e| keys.push(key(&e)));
        assert!(matches!(end, End::Damaged { offset, .. } if offset == second));
        assert_eq!(keys, vec![b"k1".to_vec()]);

        keys.clear();
        let end = read(&bytes[..bytes.len() - 1], |_, e| keys.push(key(&e)));
        assert!(matches!(end, End::Torn { .. }));
        assert_eq!(keys.len(), 2);
        assert_eq!(read(&HEADER[..3], |_, _| {}), End::Torn { offset: 0 });
        assert!(matches!(read(b"garbage!!", |_, _| {}), End::Damaged { .. }));
    }

    #[test]
    fn a_zero_tail_is_a_clean_end_and_a_record_cut_before_it_is_torn() {
        let rec = |k: &'static [u8]| Record {
            partition: 1,
            incarnation: 1,
            bucket: b"b",
            key: k,
            op: Op::Put { value: b"value" },
        };
        let mut bytes = HEADER.to_vec();
        rec(b"k1").encode_into(&mut bytes);
        let second = bytes.len();
        rec(b"k2").encode_into(&mut bytes);
        let end = bytes.len();
        bytes.resize(end + 4096, 0);
        let mut keys = Vec::new();
        assert_eq!(read(&bytes, |_, e| keys.push(key(&e))), End::Clean);
        assert_eq!(keys.len(), 2, "the zeros after the records hold nothing");

        // The last record's copy cut short: its tail still zero.
        let mut cut = bytes.clone();
        cut[end - 3..end].fill(0);
        keys.clear();
        let got = read(&cut, |_, e| keys.push(key(&e)));
        assert_eq!(got, End::Torn { offset: second });
        assert_eq!(keys, vec![b"k1".to_vec()]);

        // ... or its header not reached yet.
        let mut cut = bytes.clone();
        cut[second..second + 8].fill(0);
        assert_eq!(read(&cut, |_, _| {}), End::Torn { offset: second });

        // A bad record with a good one after it is damage, not a cut.
        let mut bad = bytes.clone();
        bad[second - 2] ^= 1;
        let got = read(&bad, |_, _| {});
        assert!(matches!(got, End::Damaged { offset: 8, .. }), "{got:?}");
    }
}
