//! Hint files: a data file's records without their values, so open can
//! rebuild the keydir without reading values.
//!
//! Layout (docs/formats/bitcask.md): a file header of kind `KIND_HINT`, one
//! entry per data record in file order, and a 24-byte trailer
//! `[entry_count u64][data_len u64][crc32 u32]["HEND"]` whose CRC covers
//! every byte before it. A hint file is used only when its trailer, CRC,
//! entry count and `data_len` (the data file's exact length) all match;
//! otherwise open rejects it and scans the data file. Hints are written to a
//! temporary name, synced, then renamed into place. An entry's terms field
//! is written empty; an entry written when bitcask kept index entries may
//! hold the record's term set there, which parsing reads past.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use eddy_storage::StorageError;

use crate::datafile::{hint_path, temp_path};
use crate::format::{FILE_HEADER_BYTES, FLAG_DROP, KIND_HINT, Record, check_file_header};
use crate::format::{file_header, u16_at, u32_at, u64_at};

const ENTRY_FIXED_BYTES: usize = 29;
const TRAILER_BYTES: usize = 24;
const TRAILER_MAGIC: [u8; 4] = *b"HEND";

/// One hint entry, borrowing the hint file's bytes.
#[derive(Clone, Copy, Debug)]
pub struct HintEntry<'a> {
    pub offset: u32,
    pub size: u32,
    pub tstamp: u32,
    pub expiry: u64,
    pub flags: u8,
    pub bucket: &'a [u8],
    pub key: &'a [u8],
    /// The drop position, for bucket-drop records.
    pub drop_position: &'a [u8],
}

/// Writes one hint file.
pub struct HintWriter {
    out: BufWriter<File>,
    crc: crc32fast::Hasher,
    count: u64,
    tmp: PathBuf,
    path: PathBuf,
}

impl HintWriter {
    /// Starts the hint file of data file `id` under a temporary name.
    pub fn create(dir: &Path, id: u32) -> Result<HintWriter, StorageError> {
        let path = hint_path(dir, id);
        let tmp = temp_path(&path);
        let file = File::create(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
        let mut w = HintWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            count: 0,
            tmp,
            path,
        };
        w.put(&file_header(KIND_HINT, id))?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        self.crc.update(bytes);
        self.out
            .write_all(bytes)
            .map_err(|e| StorageError::io(&self.tmp, e))
    }

    /// Adds the entry of the record at `offset` of `size` bytes.
    pub fn add(&mut self, offset: u32, size: u32, r: &Record<'_>) -> Result<(), StorageError> {
        let h = &r.header;
        let mut fixed = [0u8; ENTRY_FIXED_BYTES];
        fixed[0..4].copy_from_slice(&offset.to_le_bytes());
        fixed[4..8].copy_from_slice(&size.to_le_bytes());
        fixed[8..12].copy_from_slice(&h.tstamp.to_le_bytes());
        fixed[12..20].copy_from_slice(&h.expiry.to_le_bytes());
        fixed[20] = h.flags;
        fixed[21..23].copy_from_slice(&h.bucket_len.to_le_bytes());
        fixed[23..25].copy_from_slice(&h.key_len.to_le_bytes());
        // fixed[25..29], `terms_len`, stays 0.
        self.put(&fixed)?;
        self.put(r.bucket)?;
        self.put(r.key)?;
        if r.is_drop() {
            self.put(r.value)?;
        }
        self.count += 1;
        Ok(())
    }

    /// Writes the trailer, syncs, and renames the file into place.
    pub fn finish(mut self, data_len: u64) -> Result<(), StorageError> {
        let mut trailer = [0u8; TRAILER_BYTES];
        trailer[0..8].copy_from_slice(&self.count.to_le_bytes());
        trailer[8..16].copy_from_slice(&data_len.to_le_bytes());
        self.crc.update(&trailer[..16]);
        let crc = self.crc.clone().finalize();
        trailer[16..20].copy_from_slice(&crc.to_le_bytes());
        trailer[20..24].copy_from_slice(&TRAILER_MAGIC);
        let io = |e| StorageError::io(&self.tmp, e);
        self.out.write_all(&trailer).map_err(io)?;
        let file = self.out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_data().map_err(io)?;
        std::fs::rename(&self.tmp, &self.path).map_err(io)
    }
}

/// Reads and validates the hint file of data file `id`, whose data file is
/// `data_len` bytes long. The error says why the hint cannot be used.
pub fn read_hint(dir: &Path, id: u32, data_len: u64) -> Result<Vec<u8>, &'static str> {
    let bytes = std::fs::read(hint_path(dir, id)).map_err(|_| "unreadable")?;
    check_file_header(&bytes, KIND_HINT, id)?;
    if bytes.len() < FILE_HEADER_BYTES + TRAILER_BYTES {
        return Err("shorter than header and trailer");
    }
    let t = bytes.len() - TRAILER_BYTES;
    if bytes[t + 20..] != TRAILER_MAGIC {
        return Err("no trailer (torn write?)");
    }
    if crc32fast::hash(&bytes[..t + 16]) != u32_at(&bytes, t + 16) {
        return Err("CRC mismatch");
    }
    if u64_at(&bytes, t + 8) != data_len {
        return Err("data file length differs from the hint's");
    }
    let mut count = 0u64;
    for_each_entry(&bytes, |_| {
        count += 1;
        Ok(())
    })?;
    if count != u64_at(&bytes, t) {
        return Err("entry count mismatch");
    }
    Ok(bytes)
}

/// The entry count in the trailer of a hint file read by [`read_hint`].
pub fn entry_count(bytes: &[u8]) -> u64 {
    bytes
        .len()
        .checked_sub(TRAILER_BYTES)
        .map_or(0, |t| u64_at(bytes, t))
}

/// Calls `f` for each entry of a hint file read by [`read_hint`].
pub fn for_each_entry<'a>(
    bytes: &'a [u8],
    mut f: impl FnMut(HintEntry<'a>) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    let end = bytes.len().saturating_sub(TRAILER_BYTES);
    let mut at = FILE_HEADER_BYTES;
    while at < end {
        let (entry, len) = parse_entry(&bytes[at..end])?;
        f(entry)?;
        at += len;
    }
    Ok(())
}

fn parse_entry(b: &[u8]) -> Result<(HintEntry<'_>, usize), &'static str> {
    let short = "hint entry truncated";
    let fixed = b.get(..ENTRY_FIXED_BYTES).ok_or(short)?;
    let flags = fixed[20];
    let bl = u16_at(fixed, 21) as usize;
    let kl = u16_at(fixed, 23) as usize;
    let tl = u32_at(fixed, 25) as usize;
    let dl = if flags & FLAG_DROP != 0 { 8 } else { 0 };
    let len = ENTRY_FIXED_BYTES + bl + kl + tl + dl;
    let body = b.get(ENTRY_FIXED_BYTES..len).ok_or(short)?;
    let entry = HintEntry {
        offset: u32_at(fixed, 0),
        size: u32_at(fixed, 4),
        tstamp: u32_at(fixed, 8),
        expiry: u64_at(fixed, 12),
        flags,
        bucket: &body[..bl],
        key: &body[bl..bl + kl],
        drop_position: &body[bl + kl + tl..],
    };
    Ok((entry, len))
}
