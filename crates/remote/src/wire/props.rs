//! The bucket props entries a put carries, and a `props_newer` refusal
//! answers with: each entry's stamp and its JSON, passed on as bytes.

use bytes::Bytes;

use super::WireError;
use crate::codec::{Reader, Writer};
use eddy_model::metadata::entries::{PropsEntries, StampedEntry};
use eddy_model::metadata::register::StampKey;

const HAS_TYPE: u8 = 1;
const HAS_BUCKET: u8 = 2;
/// Longest entry JSON.
pub(super) const ENTRY_BYTES_MAX: usize = 65_536;

/// Roughly the encoded size.
pub(super) fn size_hint(entries: &PropsEntries) -> usize {
    let entry = |e: &Option<StampedEntry>| e.as_ref().map_or(0, |e| 24 + e.json.len());
    1 + entry(&entries.bucket_type) + entry(&entries.bucket)
}

/// Whether every entry is within its limit (entries that are not fail
/// to encode, and a refusal carrying them is sent as `other`).
pub(super) fn fits(entries: &PropsEntries) -> bool {
    let len = |e: &Option<StampedEntry>| e.as_ref().map_or(0, |e| e.json.len());
    len(&entries.bucket_type) <= ENTRY_BYTES_MAX && len(&entries.bucket) <= ENTRY_BYTES_MAX
}

/// Writes the entries; fails, having written nothing, for an entry above
/// its limit.
pub(super) fn encode(w: &mut Writer, entries: &PropsEntries) -> Result<(), WireError> {
    for e in [&entries.bucket_type, &entries.bucket]
        .into_iter()
        .flatten()
    {
        check(e.json.len())?;
    }
    let mut flags = 0;
    if entries.bucket_type.is_some() {
        flags |= HAS_TYPE;
    }
    if entries.bucket.is_some() {
        flags |= HAS_BUCKET;
    }
    w.u8(flags);
    for e in [&entries.bucket_type, &entries.bucket]
        .into_iter()
        .flatten()
    {
        w.u64(e.stamp.time_ms);
        w.u32(e.stamp.counter);
        w.u64(e.stamp.writer);
        w.blob("props entry", &e.json)?;
    }
    Ok(())
}

pub(super) fn decode(r: &mut Reader<'_>) -> Result<PropsEntries, WireError> {
    let flags = r.u8()?;
    if flags & !(HAS_TYPE | HAS_BUCKET) != 0 {
        return Err(WireError::BadByte {
            what: "props entry flags",
            value: flags,
        });
    }
    let bucket_type = match flags & HAS_TYPE != 0 {
        true => Some(entry(r)?),
        false => None,
    };
    let bucket = match flags & HAS_BUCKET != 0 {
        true => Some(entry(r)?),
        false => None,
    };
    Ok(PropsEntries {
        bucket_type,
        bucket,
    })
}

fn entry(r: &mut Reader<'_>) -> Result<StampedEntry, WireError> {
    let stamp = StampKey {
        time_ms: r.u64()?,
        counter: r.u32()?,
        writer: r.u64()?,
    };
    let json: Bytes = r.blob("props entry")?;
    check(json.len())?;
    Ok(StampedEntry { stamp, json })
}

fn check(len: usize) -> Result<(), WireError> {
    match len <= ENTRY_BYTES_MAX {
        true => Ok(()),
        false => Err(WireError::TooLong {
            what: "props entry",
            len,
            max: ENTRY_BYTES_MAX,
        }),
    }
}
