//! One commit-log record: what a vnode did to its backend, that a vnode
//! incarnation was dropped, or that its backend synced writes it took
//! without records, framed with its length and a CRC so a torn or
//! damaged record is recognised, never replayed. The layout is
//! docs/formats/commitlog.md.
//!
//! Every record names the vnode **incarnation** it belongs to: a partition
//! that a node gains, loses and gains again (a fallback, a handoff
//! receiver, an owner after a leave) is a new incarnation each time, so
//! replay can tell its records from those of an earlier life whose data
//! was dropped. Records of format versions 1 and 2 carry no incarnation:
//! they belong to the partition's first incarnation, [`FIRST_INCARNATION`].
//!
//! Invariant: `decode_frame(encode(e), CURRENT)` gives back `e`; any other
//! bytes give `Frame::Damaged` or `Frame::Torn`, never a different entry.

use eddy_storage::limits;

/// Bytes before a record's payload: length and CRC, both u32 big-endian.
pub const FRAME_HEADER_BYTES: usize = 8;
/// The largest payload accepted on read: the largest value the storage
/// layer takes plus the largest bucket and key and the fixed fields.
pub const PAYLOAD_BYTES_MAX: usize =
    limits::VALUE_BYTES_MAX + limits::BUCKET_BYTES_MAX + limits::KEY_BYTES_MAX + 32;

/// The incarnation of a partition's first life on a node, and of every
/// record written before records named one (format versions 1 and 2).
/// Incarnation numbers of a partition are never reused on a node.
pub const FIRST_INCARNATION: u64 = 1;

/// The format version a segment's records are written in (its header says
/// which). Versions 1 and 2 have no incarnation field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// Puts and deletes.
    V1,
    /// Version 1 plus put-same.
    V2,
    /// Every record names its incarnation; drop records.
    V3,
    /// Version 3 plus synced marks.
    V4,
}

/// The version every new segment is written in.
pub const CURRENT: Version = Version::V4;

const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;
const OP_PUT_SAME: u8 = 3;
const OP_DROP: u8 = 4;
const OP_SYNCED: u8 = 5;

/// What was done to one key of one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// The key now holds this encoded object.
    Put { value: &'a [u8] },
    /// The key was removed.
    Delete,
    /// The key now holds the value of the put record of the same bucket and
    /// key whose frame starts `back` bytes before this one's (format v2): a
    /// replica that stored the coordinator's object logs it once.
    PutSame { back: u64 },
}

/// A record, borrowing its bytes from the caller (append) or from the
/// segment being read (replay).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub partition: u32,
    /// The vnode incarnation whose backend the write went to.
    pub incarnation: u64,
    pub bucket: &'a [u8],
    pub key: &'a [u8],
    pub op: Op<'a>,
}

/// "Partition `partition`'s incarnation `incarnation` was dropped": replay
/// applies none of that incarnation's records, wherever they are in the
/// log (format v3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dropped {
    pub partition: u32,
    pub incarnation: u64,
}

/// Where a frame lies in the log: its segment and its offset there.
/// Positions order as the log does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub seq: u64,
    pub offset: u64,
}

/// "Every record of partition `partition`'s incarnation `incarnation`
/// before `upto` was in its backend when the backend last synced": replay
/// applies none of them (format v4). A vnode that writes without records
/// (a handoff receiver's merges) appends this after syncing its backend,
/// so that replay cannot put an older record over what the sync made
/// durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Synced {
    pub partition: u32,
    pub incarnation: u64,
    pub upto: Position,
}

/// One entry of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    Record(Record<'a>),
    Dropped(Dropped),
    Synced(Synced),
}

/// What the bytes at one offset of a segment hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A whole, intact entry and the bytes it took.
    Entry(Entry<'a>, usize),
    /// The segment ends inside this frame: a write cut short by a crash.
    Torn,
    /// The frame is whole but wrong (CRC, length or layout): damage.
    Damaged(&'static str),
}

impl Record<'_> {
    /// Appends this record's frame (current version) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let back;
        let (op, value): (u8, &[u8]) = match self.op {
            Op::Put { value } => (OP_PUT, value),
            Op::Delete => (OP_DELETE, &[]),
            Op::PutSame { back: b } => {
                back = b.to_be_bytes();
                (OP_PUT_SAME, &back)
            }
        };
        let fields = Fields {
            op,
            partition: self.partition,
            incarnation: self.incarnation,
            bucket: self.bucket,
            key: self.key,
            value,
        };
        fields.encode_into(out);
    }
}

impl Dropped {
    /// Appends this drop record's frame (current version) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let fields = Fields {
            op: OP_DROP,
            partition: self.partition,
            incarnation: self.incarnation,
            bucket: &[],
            key: &[],
            value: &[],
        };
        fields.encode_into(out);
    }
}

impl Synced {
    /// Appends this mark's frame (current version) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let mut upto = [0; 16];
        upto[..8].copy_from_slice(&self.upto.seq.to_be_bytes());
        upto[8..].copy_from_slice(&self.upto.offset.to_be_bytes());
        let fields = Fields {
            op: OP_SYNCED,
            partition: self.partition,
            incarnation: self.incarnation,
            bucket: &[],
            key: &[],
            value: &upto,
        };
        fields.encode_into(out);
    }
}

impl Entry<'_> {
    /// Appends this entry's frame (current version) to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Entry::Record(r) => r.encode_into(out),
            Entry::Dropped(d) => d.encode_into(out),
            Entry::Synced(m) => m.encode_into(out),
        }
    }
}

/// A payload's fields, in the current layout.
struct Fields<'a> {
    op: u8,
    partition: u32,
    incarnation: u64,
    bucket: &'a [u8],
    key: &'a [u8],
    value: &'a [u8],
}

impl Fields<'_> {
    fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
        out.push(self.op);
        out.extend_from_slice(&self.partition.to_be_bytes());
        out.extend_from_slice(&self.incarnation.to_be_bytes());
        put_bytes(out, self.bucket);
        put_bytes(out, self.key);
        out.extend_from_slice(self.value);
        let payload = &out[start + FRAME_HEADER_BYTES..];
        let len = payload.len() as u32;
        let crc = crc32fast::hash(payload);
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Reads the frame at the start of `bytes`, a segment of `version`.
pub fn decode_frame(bytes: &[u8], version: Version) -> Frame<'_> {
    if bytes.len() < FRAME_HEADER_BYTES {
        return Frame::Torn;
    }
    let len = be_u32(&bytes[0..4]) as usize;
    let crc = be_u32(&bytes[4..8]);
    if len > PAYLOAD_BYTES_MAX {
        return Frame::Damaged("record length over the limit");
    }
    let Some(payload) = bytes.get(FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + len) else {
        return Frame::Torn;
    };
    if crc32fast::hash(payload) != crc {
        return Frame::Damaged("record CRC mismatch");
    }
    match decode_payload(payload, version) {
        Some(entry) => Frame::Entry(entry, FRAME_HEADER_BYTES + len),
        None => Frame::Damaged("record layout invalid"),
    }
}

fn decode_payload(p: &[u8], version: Version) -> Option<Entry<'_>> {
    let (&op, rest) = p.split_first()?;
    let partition = be_u32(rest.get(0..4)?);
    let (incarnation, rest) = match version {
        Version::V1 | Version::V2 => (FIRST_INCARNATION, &rest[4..]),
        Version::V3 | Version::V4 => (
            u64::from_be_bytes(rest.get(4..12)?.try_into().ok()?),
            &rest[12..],
        ),
    };
    let (bucket, rest) = take_bytes(rest)?;
    let (key, rest) = take_bytes(rest)?;
    let op = match op {
        OP_PUT => Op::Put { value: rest },
        OP_DELETE if rest.is_empty() => Op::Delete,
        OP_PUT_SAME if version != Version::V1 => {
            let back = u64::from_be_bytes(rest.try_into().ok()?);
            Op::PutSame {
                back: (back > 0).then_some(back)?,
            }
        }
        OP_DROP if version >= Version::V3 => {
            let empty = bucket.is_empty() && key.is_empty() && rest.is_empty();
            let dropped = Dropped {
                partition,
                incarnation,
            };
            return empty.then_some(Entry::Dropped(dropped));
        }
        OP_SYNCED if version >= Version::V4 && bucket.is_empty() && key.is_empty() => {
            let upto: &[u8; 16] = rest.try_into().ok()?;
            let upto = Position {
                seq: u64::from_be_bytes(upto[..8].try_into().ok()?),
                offset: u64::from_be_bytes(upto[8..].try_into().ok()?),
            };
            return Some(Entry::Synced(Synced {
                partition,
                incarnation,
                upto,
            }));
        }
        _ => return None,
    };
    Some(Entry::Record(Record {
        partition,
        incarnation,
        bucket,
        key,
        op,
    }))
}

fn take_bytes(p: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = be_u32(p.get(0..4)?) as usize;
    let bytes = p.get(4..4 + len)?;
    Some((bytes, &p[4 + len..]))
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A value (put), a back reference (put-same), neither (delete), or,
    /// outside (`None`), a drop of the incarnation or, with a position, a
    /// synced mark.
    type Arb = (
        u32,
        u64,
        Vec<u8>,
        Vec<u8>,
        Option<Option<Result<Vec<u8>, u64>>>,
        Option<(u64, u64)>,
    );

    fn arb_entry() -> impl Strategy<Value = Arb> {
        let op = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200).prop_map(Ok),
            (1..u64::MAX).prop_map(Err),
        ];
        (
            any::<u32>(),
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::option::weighted(0.9, proptest::option::of(op)),
            proptest::option::of((any::<u64>(), any::<u64>())),
        )
    }

    fn entry<'a>((p, i, b, k, v, upto): &'a Arb) -> Entry<'a> {
        let Some(v) = v else {
            return match upto {
                Some((seq, offset)) => Entry::Synced(Synced {
                    partition: *p,
                    incarnation: *i,
                    upto: Position {
                        seq: *seq,
                        offset: *offset,
                    },
                }),
                None => Entry::Dropped(Dropped {
                    partition: *p,
                    incarnation: *i,
                }),
            };
        };
        Entry::Record(Record {
            partition: *p,
            incarnation: *i,
            bucket: b,
            key: k,
            op: match v {
                Some(Ok(value)) => Op::Put { value },
                Some(Err(back)) => Op::PutSame { back: *back },
                None => Op::Delete,
            },
        })
    }

    proptest! {
        #[test]
        fn frames_round_trip(arb in arb_entry()) {
            let e = entry(&arb);
            let mut buf = Vec::new();
            e.encode_into(&mut buf);
            prop_assert_eq!(decode_frame(&buf, CURRENT), Frame::Entry(e, buf.len()));
        }

        #[test]
        fn a_cut_frame_is_torn(arb in arb_entry(), cut in any::<prop::sample::Index>()) {
            let mut buf = Vec::new();
            entry(&arb).encode_into(&mut buf);
            let cut = cut.index(buf.len());
            prop_assert_eq!(decode_frame(&buf[..cut], CURRENT), Frame::Torn);
        }

        #[test]
        fn a_flipped_byte_is_never_an_entry(
            arb in arb_entry(),
            at in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let mut buf = Vec::new();
            entry(&arb).encode_into(&mut buf);
            let at = at.index(buf.len());
            buf[at] ^= 1 << bit;
            // A flip in the length may make the frame look longer (torn)
            // or shorter (damaged); it never decodes as an entry.
            prop_assert!(!matches!(decode_frame(&buf, CURRENT), Frame::Entry(..)));
        }
    }

    #[test]
    fn old_versions_refuse_what_they_did_not_have() {
        let mut put_same = Vec::new();
        Record {
            partition: 1,
            incarnation: FIRST_INCARNATION,
            bucket: b"b",
            key: b"k",
            op: Op::PutSame { back: 9 },
        }
        .encode_into(&mut put_same);
        // Rewritten without the incarnation, as version 2 lays it out.
        let mut v2 = put_same[..FRAME_HEADER_BYTES + 5].to_vec();
        v2.extend_from_slice(&put_same[FRAME_HEADER_BYTES + 13..]);
        let len = (v2.len() - FRAME_HEADER_BYTES) as u32;
        let crc = crc32fast::hash(&v2[FRAME_HEADER_BYTES..]);
        v2[0..4].copy_from_slice(&len.to_be_bytes());
        v2[4..8].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            decode_frame(&v2, Version::V2),
            Frame::Entry(
                Entry::Record(Record {
                    incarnation: FIRST_INCARNATION,
                    ..
                }),
                _
            )
        ));
        assert!(matches!(decode_frame(&v2, Version::V1), Frame::Damaged(_)));
    }

    #[test]
    fn a_synced_mark_is_refused_before_version_4() {
        let mut mark = Vec::new();
        Synced {
            partition: 2,
            incarnation: 3,
            upto: Position { seq: 4, offset: 5 },
        }
        .encode_into(&mut mark);
        assert!(matches!(
            decode_frame(&mark, Version::V4),
            Frame::Entry(Entry::Synced(_), _)
        ));
        assert!(matches!(
            decode_frame(&mark, Version::V3),
            Frame::Damaged(_)
        ));
    }
}
