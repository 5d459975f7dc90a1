//! One commit-log record: what a vnode did to its backend, framed with its
//! length and a CRC so a torn or damaged record is recognised, never
//! replayed. The layout is docs/formats/commitlog.md.
//!
//! Invariant: `decode_frame(encode(r))` gives back `r`; any other bytes give
//! `Frame::Damaged` or `Frame::Torn`, never a different record.

use eddy_storage::limits;

/// Bytes before a record's payload: length and CRC, both u32 big-endian.
pub const FRAME_HEADER_BYTES: usize = 8;
/// The largest payload accepted on read: the largest value the storage
/// layer takes plus the largest bucket and key and the fixed fields.
pub const PAYLOAD_BYTES_MAX: usize =
    limits::VALUE_BYTES_MAX + limits::BUCKET_BYTES_MAX + limits::KEY_BYTES_MAX + 16;

const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;
const OP_PUT_SAME: u8 = 3;

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
    pub bucket: &'a [u8],
    pub key: &'a [u8],
    pub op: Op<'a>,
}

/// What the bytes at one offset of a segment hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A whole, intact record and the bytes it took.
    Record(Record<'a>, usize),
    /// The segment ends inside this frame: a write cut short by a crash.
    Torn,
    /// The frame is whole but wrong (CRC, length or layout): damage.
    Damaged(&'static str),
}

impl Record<'_> {
    /// Appends this record's frame to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
        let back;
        let (op, value): (u8, &[u8]) = match self.op {
            Op::Put { value } => (OP_PUT, value),
            Op::Delete => (OP_DELETE, &[]),
            Op::PutSame { back: b } => {
                back = b.to_be_bytes();
                (OP_PUT_SAME, &back)
            }
        };
        out.push(op);
        out.extend_from_slice(&self.partition.to_be_bytes());
        put_bytes(out, self.bucket);
        put_bytes(out, self.key);
        out.extend_from_slice(value);
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

/// Reads the frame at the start of `bytes`.
pub fn decode_frame(bytes: &[u8]) -> Frame<'_> {
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
    match decode_payload(payload) {
        Some(record) => Frame::Record(record, FRAME_HEADER_BYTES + len),
        None => Frame::Damaged("record layout invalid"),
    }
}

fn decode_payload(p: &[u8]) -> Option<Record<'_>> {
    let (&op, rest) = p.split_first()?;
    let partition = be_u32(rest.get(0..4)?);
    let (bucket, rest) = take_bytes(&rest[4..])?;
    let (key, rest) = take_bytes(rest)?;
    let op = match op {
        OP_PUT => Op::Put { value: rest },
        OP_DELETE if rest.is_empty() => Op::Delete,
        OP_PUT_SAME => {
            let back = u64::from_be_bytes(rest.try_into().ok()?);
            Op::PutSame {
                back: (back > 0).then_some(back)?,
            }
        }
        _ => return None,
    };
    Some(Record {
        partition,
        bucket,
        key,
        op,
    })
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

    /// A value (put), a back reference (put-same) or neither (delete).
    type Arb = (u32, Vec<u8>, Vec<u8>, Option<Result<Vec<u8>, u64>>);

    fn arb_record() -> impl Strategy<Value = Arb> {
        let op = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..200).prop_map(Ok),
            (1..u64::MAX).prop_map(Err),
        ];
        (
            any::<u32>(),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::option::of(op),
        )
    }

    fn record<'a>(
        p: u32,
        b: &'a [u8],
        k: &'a [u8],
        v: &'a Option<Result<Vec<u8>, u64>>,
    ) -> Record<'a> {
        Record {
            partition: p,
            bucket: b,
            key: k,
            op: match v {
                Some(Ok(value)) => Op::Put { value },
                Some(Err(back)) => Op::PutSame { back: *back },
                None => Op::Delete,
            },
        }
    }

    proptest! {
        #[test]
        fn frames_round_trip((p, b, k, v) in arb_record()) {
            let rec = record(p, &b, &k, &v);
            let mut buf = Vec::new();
            rec.encode_into(&mut buf);
            prop_assert_eq!(decode_frame(&buf), Frame::Record(rec, buf.len()));
        }

        #[test]
        fn a_cut_frame_is_torn((p, b, k, v) in arb_record(), cut in any::<prop::sample::Index>()) {
            let mut buf = Vec::new();
            record(p, &b, &k, &v).encode_into(&mut buf);
            let cut = cut.index(buf.len());
            prop_assert_eq!(decode_frame(&buf[..cut]), Frame::Torn);
        }

        #[test]
        fn a_flipped_byte_is_never_a_record(
            (p, b, k, v) in arb_record(),
            at in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let mut buf = Vec::new();
            record(p, &b, &k, &v).encode_into(&mut buf);
            let at = at.index(buf.len());
            buf[at] ^= 1 << bit;
            // A flip in the length may make the frame look longer (torn)
            // or shorter (damaged); it never decodes as a record.
            prop_assert!(!matches!(decode_frame(&buf), Frame::Record(..)));
        }
    }
}
