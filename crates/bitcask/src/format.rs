//! The on-disk record format of data files (docs/formats/bitcask.md).
//!
//! This module owns the byte layout: file headers and data records. It does
//! no I/O. Invariants:
//! - every record's CRC32 covers every byte after the CRC field, so a record
//!   whose CRC matches was written exactly as decoded;
//! - a record never contains its own location, so merge copies records
//!   byte for byte;
//! - a record's terms field is written empty (`terms_len` 0). Records
//!   written before bitcask stopped keeping index entries may hold a term
//!   set there; decoding reads past it, and nothing reads what it holds.

/// First bytes of every data and hint file.
pub const MAGIC: [u8; 8] = *b"EDDYBCSK";
/// Format version written by this code.
pub const VERSION: u8 = 1;
/// File kind byte of a data file.
pub const KIND_DATA: u8 = 1;
/// File kind byte of a hint file.
pub const KIND_HINT: u8 = 2;
/// Size of the header at the start of every file.
pub const FILE_HEADER_BYTES: usize = 16;

/// The record is a tombstone (a delete).
pub const FLAG_TOMBSTONE: u8 = 0x01;
/// The value payload is `[raw_len u32][lz4 block]`.
pub const FLAG_LZ4: u8 = 0x02;
/// The record drops a whole bucket; its value is the drop position.
pub const FLAG_DROP: u8 = 0x04;
const FLAGS_KNOWN: u8 = FLAG_TOMBSTONE | FLAG_LZ4 | FLAG_DROP;

/// Size of a data record's fixed header.
pub const RECORD_HEADER_BYTES: usize = 29;

/// A file header: magic, version, kind, two reserved bytes, the file id.
pub fn file_header(kind: u8, file_id: u32) -> [u8; FILE_HEADER_BYTES] {
    let mut h = [0u8; FILE_HEADER_BYTES];
    h[..8].copy_from_slice(&MAGIC);
    h[8] = VERSION;
    h[9] = kind;
    h[12..16].copy_from_slice(&file_id.to_le_bytes());
    h
}

/// Checks a file header; the error says what is wrong.
pub fn check_file_header(bytes: &[u8], kind: u8, file_id: u32) -> Result<(), &'static str> {
    if bytes.len() < FILE_HEADER_BYTES {
        return Err("file shorter than its header");
    }
    if bytes[..8] != MAGIC {
        return Err("bad magic");
    }
    if bytes[8] != VERSION {
        return Err("unknown format version");
    }
    if bytes[9] != kind {
        return Err("wrong file kind");
    }
    if u32_at(bytes, 12) != file_id {
        return Err("file id in header does not match its name");
    }
    Ok(())
}

/// Little-endian u16 at `at`; the caller has checked the length.
pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// Little-endian u32 at `at`; the caller has checked the length.
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Little-endian u64 at `at`; the caller has checked the length.
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    (u32_at(b, at) as u64) | ((u32_at(b, at + 4) as u64) << 32)
}

/// The fixed part of a data record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub crc: u32,
    pub tstamp: u32,
    pub expiry: u64,
    pub flags: u8,
    pub bucket_len: u16,
    pub key_len: u16,
    pub terms_len: u32,
    pub value_len: u32,
}

impl RecordHeader {
    /// Parses the first [`RECORD_HEADER_BYTES`] of `b`.
    pub fn parse(b: &[u8]) -> Option<RecordHeader> {
        if b.len() < RECORD_HEADER_BYTES {
            return None;
        }
        Some(RecordHeader {
            crc: u32_at(b, 0),
            tstamp: u32_at(b, 4),
            expiry: u64_at(b, 8),
            flags: b[16],
            bucket_len: u16_at(b, 17),
            key_len: u16_at(b, 19),
            terms_len: u32_at(b, 21),
            value_len: u32_at(b, 25),
        })
    }

    /// Size of the whole record.
    pub fn total_len(&self) -> u64 {
        RECORD_HEADER_BYTES as u64
            + self.bucket_len as u64
            + self.key_len as u64
            + self.terms_len as u64
            + self.value_len as u64
    }

    /// True when the flags are a combination this version writes.
    pub fn flags_valid(&self) -> bool {
        let f = self.flags;
        f & !FLAGS_KNOWN == 0 && (f & FLAG_TOMBSTONE == 0 || f & FLAG_DROP == 0)
    }
}

/// A decoded record borrowing the bytes it was read from (its terms
/// field, empty or an old term set, is skipped).
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub header: RecordHeader,
    pub bucket: &'a [u8],
    pub key: &'a [u8],
    /// Value payload as stored (compressed when `FLAG_LZ4`).
    pub value: &'a [u8],
}

impl Record<'_> {
    pub fn is_tombstone(&self) -> bool {
        self.header.flags & FLAG_TOMBSTONE != 0
    }

    pub fn is_drop(&self) -> bool {
        self.header.flags & FLAG_DROP != 0
    }
}

/// Decodes and CRC-checks exactly one record occupying all of `b`.
pub fn decode_record(b: &[u8]) -> Result<Record<'_>, &'static str> {
    let header = RecordHeader::parse(b).ok_or("record shorter than its header")?;
    if header.total_len() != b.len() as u64 {
        return Err("record length does not match its header");
    }
    if crc32fast::hash(&b[4..]) != header.crc {
        return Err("CRC mismatch");
    }
    if !header.flags_valid() {
        return Err("unknown flags");
    }
    let mut at = RECORD_HEADER_BYTES;
    let mut take = |n: usize| {
        let s = &b[at..at + n];
        at += n;
        s
    };
    let bucket = take(header.bucket_len as usize);
    let key = take(header.key_len as usize);
    take(header.terms_len as usize);
    let value = take(header.value_len as usize);
    Ok(Record {
        header,
        bucket,
        key,
        value,
    })
}

/// What to write in one record.
pub struct NewRecord<'a> {
    pub tstamp: u32,
    pub expiry: u64,
    pub flags: u8,
    pub bucket: &'a [u8],
    pub key: &'a [u8],
    /// Payload as stored (already compressed when `FLAG_LZ4`).
    pub value: &'a [u8],
}

/// Appends one encoded record, with an empty terms field, to `out` and
/// returns its length, or `None` when a length field would overflow.
pub fn encode_record(out: &mut Vec<u8>, rec: &NewRecord<'_>) -> Option<usize> {
    let lens = (
        u16::try_from(rec.bucket.len()).ok(),
        u16::try_from(rec.key.len()).ok(),
        u32::try_from(rec.value.len()).ok(),
    );
    let (Some(bl), Some(kl), Some(vl)) = lens else {
        return None;
    };
    let start = out.len();
    out.extend_from_slice(&[0u8; RECORD_HEADER_BYTES]);
    out.extend_from_slice(rec.bucket);
    out.extend_from_slice(rec.key);
    out.extend_from_slice(rec.value);
    let h = &mut out[start..start + RECORD_HEADER_BYTES];
    h[4..8].copy_from_slice(&rec.tstamp.to_le_bytes());
    h[8..16].copy_from_slice(&rec.expiry.to_le_bytes());
    h[16] = rec.flags;
    h[17..19].copy_from_slice(&bl.to_le_bytes());
    h[19..21].copy_from_slice(&kl.to_le_bytes());
    // h[21..25], `terms_len`, stays 0.
    h[25..29].copy_from_slice(&vl.to_le_bytes());
    let crc = crc32fast::hash(&out[start + 4..]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    Some(out.len() - start)
}

/// The drop position `(file_id, offset)` carried by a bucket-drop record.
pub fn encode_drop_position(file_id: u32, offset: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&file_id.to_le_bytes());
    b[4..].copy_from_slice(&offset.to_le_bytes());
    b
}

/// Reads a drop position back.
pub fn decode_drop_position(b: &[u8]) -> Result<(u32, u32), &'static str> {
    if b.len() != 8 {
        return Err("drop position must be 8 bytes");
    }
    Ok((u32_at(b, 0), u32_at(b, 4)))
}

/// Smallest value worth trying to compress.
const COMPRESS_MIN_BYTES: usize = 64;

/// The lz4 payload for `value` when it is smaller than the value itself.
pub fn compress_value(value: &[u8]) -> Option<Vec<u8>> {
    if value.len() < COMPRESS_MIN_BYTES {
        return None;
    }
    let raw_len = u32::try_from(value.len()).ok()?;
    let block = lz4_flex::block::compress(value);
    if block.len() + 4 >= value.len() {
        return None;
    }
    let mut out = Vec::with_capacity(block.len() + 4);
    out.extend_from_slice(&raw_len.to_le_bytes());
    out.extend_from_slice(&block);
    Some(out)
}

/// The value a record stores, decompressing when `flags` says so.
pub fn decode_value(flags: u8, payload: Vec<u8>) -> Result<Vec<u8>, &'static str> {
    if flags & FLAG_LZ4 == 0 {
        return Ok(payload);
    }
    let raw_len = u32_at(payload.get(..4).ok_or("lz4 payload truncated")?, 0) as usize;
    if raw_len > eddy_storage::limits::VALUE_BYTES_MAX {
        return Err("lz4 payload claims an oversized value");
    }
    let value = lz4_flex::block::decompress(&payload[4..], raw_len)
        .map_err(|_| "lz4 payload does not decompress")?;
    if value.len() != raw_len {
        return Err("lz4 payload decompresses to the wrong length");
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(value: &[u8]) -> Vec<u8> {
        let rec = NewRecord {
            tstamp: 7,
            expiry: 99,
            flags: 0,
            bucket: b"users",
            key: b"k1",
            value,
        };
        let mut out = Vec::new();
        let n = encode_record(&mut out, &rec).unwrap();
        assert_eq!(n, out.len());
        out
    }

    /// `raw` with `terms` in its terms field, as the code that kept index
    /// entries wrote it (a count, then each field and term with a u16
    /// length), CRC made again.
    fn with_terms(raw: &[u8], terms: &[(&[u8], &[u8])]) -> Vec<u8> {
        let h = RecordHeader::parse(raw).unwrap();
        let body = RECORD_HEADER_BYTES + h.bucket_len as usize + h.key_len as usize;
        let mut set = (terms.len() as u32).to_le_bytes().to_vec();
        for (field, term) in terms {
            for part in [field, term] {
                set.extend_from_slice(&(part.len() as u16).to_le_bytes());
                set.extend_from_slice(part);
            }
        }
        let mut out = raw[..body].to_vec();
        out.extend_from_slice(&set);
        out.extend_from_slice(&raw[body..]);
        out[21..25].copy_from_slice(&(set.len() as u32).to_le_bytes());
        let crc = crc32fast::hash(&out[4..]);
        out[..4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn record_round_trips_and_detects_flips() {
        let out = record(b"hello");
        let r = decode_record(&out).unwrap();
        assert_eq!(
            (r.bucket, r.key, r.value),
            (&b"users"[..], &b"k1"[..], &b"hello"[..])
        );
        assert_eq!((r.header.tstamp, r.header.expiry), (7, 99));
        assert_eq!(r.header.terms_len, 0, "the terms field is written empty");
        for i in 0..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 0x10;
            assert!(decode_record(&bad).is_err(), "flip at {i} not detected");
        }
    }

    #[test]
    fn a_record_holding_a_term_set_reads_past_it() {
        let old = with_terms(
            &record(b"hello"),
            &[(b"age_int", b"\x00\x2a"), (b"email_bin", b"a@b")],
        );
        let r = decode_record(&old).unwrap();
        assert!(r.header.terms_len > 0);
        assert_eq!(r.header.total_len(), old.len() as u64);
        assert_eq!(
            (r.bucket, r.key, r.value),
            (&b"users"[..], &b"k1"[..], &b"hello"[..])
        );
    }

    #[test]
    fn compression_round_trips() {
        let value = vec![b'x'; 1000];
        let payload = compress_value(&value).unwrap();
        assert!(payload.len() < 100);
        assert_eq!(decode_value(FLAG_LZ4, payload).unwrap(), value);
        assert!(compress_value(b"short").is_none());
    }

    #[test]
    fn file_header_checks() {
        let h = file_header(KIND_DATA, 4096);
        assert!(check_file_header(&h, KIND_DATA, 4096).is_ok());
        assert!(check_file_header(&h, KIND_HINT, 4096).is_err());
        assert!(check_file_header(&h, KIND_DATA, 1).is_err());
        assert!(check_file_header(&h[..10], KIND_DATA, 4096).is_err());
    }
}
