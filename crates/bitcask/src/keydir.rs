//! The keydir: `(bucket, key)` → where the key's latest record lives.
//!
//! Layout, chosen to keep memory near 35 bytes plus the key (measured in
//! `tests::bytes_per_key_for_one_million_keys` and docs/design/002-bitcask.md):
//! - an arena of 1 MiB chunks holding one slot per key:
//!   `[file_id u32][offset u32][size u32][tstamp u32][expiry u32]`
//!   `[bucket_len u16][key_len u16][bucket][key]`, padded to 4 bytes;
//! - a `hashbrown::HashTable<u32>` of arena offsets / 4, keyed by the xxh3
//!   hash of `(bucket, key)`.
//!
//! Invariants: every table value points at a live slot, no two live slots
//! hold the same `(bucket, key)`, and `garbage_bytes` counts the bytes of
//! slots no longer referenced. Updating a key rewrites its slot in place;
//! removing one leaves garbage, compacted when it exceeds half the arena.

use hashbrown::HashTable;
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// Where and when a key's latest record was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub file_id: u32,
    pub offset: u32,
    /// Whole record size in bytes.
    pub size: u32,
    /// Write time, Unix seconds.
    pub tstamp: u32,
    /// Expiry, Unix seconds; 0 = never (see [`expiry_to_u32`]).
    pub expiry: u32,
}

impl Entry {
    /// True when the entry's object has expired at `now_secs`.
    pub fn is_expired(&self, now_secs: u64) -> bool {
        self.expiry != 0 && self.expiry as u64 <= now_secs
    }

    /// The record's location.
    pub fn location(&self) -> (u32, u32) {
        (self.file_id, self.offset)
    }
}

/// Keydir form of an on-disk expiry (0 = none): clamped into `1..=u32::MAX`.
pub fn expiry_to_u32(expiry_secs: u64) -> u32 {
    match expiry_secs {
        0 => 0,
        e => u32::try_from(e).unwrap_or(u32::MAX),
    }
}

const SLOT_HEADER_BYTES: usize = 24;
const ALIGN_BYTES: usize = 4;
const CHUNK_BYTES: usize = 1 << 20;

/// The in-memory index from keys to record locations.
pub struct Keydir {
    chunks: Vec<Vec<u8>>,
    table: HashTable<u32>,
    garbage_bytes: usize,
    used_bytes: usize,
}

fn hash(bucket: &[u8], key: &[u8]) -> u64 {
    xxh3_64_with_seed(key, xxh3_64(bucket))
}

fn slot_len(bucket_len: usize, key_len: usize) -> usize {
    (SLOT_HEADER_BYTES + bucket_len + key_len).next_multiple_of(ALIGN_BYTES)
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The slot bytes `slot` (arena offset / 4) refers to, to the chunk's end.
fn slot_bytes(chunks: &[Vec<u8>], slot: u32) -> &[u8] {
    let at = slot as usize * ALIGN_BYTES;
    &chunks[at / CHUNK_BYTES][at % CHUNK_BYTES..]
}

fn slot_key(b: &[u8]) -> (&[u8], &[u8]) {
    let bl = u16::from_le_bytes([b[20], b[21]]) as usize;
    let kl = u16::from_le_bytes([b[22], b[23]]) as usize;
    let bucket = &b[SLOT_HEADER_BYTES..SLOT_HEADER_BYTES + bl];
    (
        bucket,
        &b[SLOT_HEADER_BYTES + bl..SLOT_HEADER_BYTES + bl + kl],
    )
}

fn slot_entry(b: &[u8]) -> Entry {
    Entry {
        file_id: read_u32(b, 0),
        offset: read_u32(b, 4),
        size: read_u32(b, 8),
        tstamp: read_u32(b, 12),
        expiry: read_u32(b, 16),
    }
}

fn entry_bytes(e: &Entry) -> [u8; 20] {
    let mut b = [0u8; 20];
    for (i, v) in [e.file_id, e.offset, e.size, e.tstamp, e.expiry]
        .into_iter()
        .enumerate()
    {
        b[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    b
}

impl Default for Keydir {
    fn default() -> Self {
        Self::new()
    }
}

impl Keydir {
    pub fn new() -> Self {
        Keydir {
            chunks: Vec::new(),
            table: HashTable::new(),
            garbage_bytes: 0,
            used_bytes: 0,
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The bytes of every live key with its bucket, or a few more (live
    /// slots less their headers, padding included).
    pub fn key_bytes(&self) -> usize {
        let live = self.used_bytes.saturating_sub(self.garbage_bytes);
        live.saturating_sub(self.table.len() * SLOT_HEADER_BYTES)
    }

    /// Makes room for `additional` more keys without rehashing as they come.
    pub fn reserve(&mut self, additional: usize) {
        let chunks = &self.chunks;
        self.table.reserve(additional, |s| {
            let (b, k) = slot_key(slot_bytes(chunks, *s));
            hash(b, k)
        });
    }

    /// Gives back table capacity beyond what the keys need (after a
    /// generous [`Keydir::reserve`]).
    pub fn shrink_to_fit(&mut self) {
        if self.table.capacity() > 2 * self.table.len().max(1024) {
            let chunks = &self.chunks;
            self.table.shrink_to_fit(|s| {
                let (b, k) = slot_key(slot_bytes(chunks, *s));
                hash(b, k)
            });
        }
    }

    /// Bytes allocated by the arena and the table.
    pub fn memory_bytes(&self) -> usize {
        let arena: usize = self.chunks.iter().map(|c| c.capacity()).sum();
        arena + self.table.allocation_size() + self.chunks.capacity() * size_of::<Vec<u8>>()
    }

    fn find(&self, bucket: &[u8], key: &[u8]) -> Option<u32> {
        let chunks = &self.chunks;
        let eq = |s: &u32| slot_key(slot_bytes(chunks, *s)) == (bucket, key);
        self.table.find(hash(bucket, key), eq).copied()
    }

    /// The entry of `(bucket, key)`, if any.
    pub fn get(&self, bucket: &[u8], key: &[u8]) -> Option<Entry> {
        let slot = self.find(bucket, key)?;
        Some(slot_entry(slot_bytes(&self.chunks, slot)))
    }

    fn write_entry(&mut self, slot: u32, e: &Entry) {
        let at = slot as usize * ALIGN_BYTES;
        let chunk = &mut self.chunks[at / CHUNK_BYTES];
        chunk[at % CHUNK_BYTES..at % CHUNK_BYTES + 20].copy_from_slice(&entry_bytes(e));
    }

    /// Sets the entry of `(bucket, key)`, returning the one it replaces.
    pub fn insert(&mut self, bucket: &[u8], key: &[u8], e: Entry) -> Option<Entry> {
        if let Some(slot) = self.find(bucket, key) {
            let old = slot_entry(slot_bytes(&self.chunks, slot));
            self.write_entry(slot, &e);
            return Some(old);
        }
        let slot = self.append_slot(bucket, key, &e);
        let chunks = &self.chunks;
        let rehash = |s: &u32| {
            let (b, k) = slot_key(slot_bytes(chunks, *s));
            hash(b, k)
        };
        self.table.insert_unique(hash(bucket, key), slot, rehash);
        None
    }

    fn append_slot(&mut self, bucket: &[u8], key: &[u8], e: &Entry) -> u32 {
        let len = slot_len(bucket.len(), key.len());
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.capacity() - c.len() >= len);
        if !fits {
            self.chunks.push(Vec::with_capacity(CHUNK_BYTES));
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        let at = index * CHUNK_BYTES + chunk.len();
        chunk.extend_from_slice(&entry_bytes(e));
        chunk.extend_from_slice(&(bucket.len() as u16).to_le_bytes());
        chunk.extend_from_slice(&(key.len() as u16).to_le_bytes());
        chunk.extend_from_slice(bucket);
        chunk.extend_from_slice(key);
        chunk.resize(chunk.len().next_multiple_of(ALIGN_BYTES), 0);
        self.used_bytes += len;
        (at / ALIGN_BYTES) as u32
    }

    /// Removes `(bucket, key)`, returning its entry.
    pub fn remove(&mut self, bucket: &[u8], key: &[u8]) -> Option<Entry> {
        self.remove_if(bucket, key, |_| true)
    }

    /// Removes `(bucket, key)` when `pred` accepts its current entry.
    pub fn remove_if(
        &mut self,
        bucket: &[u8],
        key: &[u8],
        pred: impl FnOnce(&Entry) -> bool,
    ) -> Option<Entry> {
        let chunks = &self.chunks;
        let eq = |s: &u32| slot_key(slot_bytes(chunks, *s)) == (bucket, key);
        let found = self.table.find_entry(hash(bucket, key), eq).ok()?;
        let old = slot_entry(slot_bytes(chunks, *found.get()));
        if !pred(&old) {
            return None;
        }
        found.remove();
        self.garbage_bytes += slot_len(bucket.len(), key.len());
        self.maybe_compact();
        Some(old)
    }

    /// Replaces the entry of `(bucket, key)` with `new` only when it still
    /// points at `expect` (a merge moving a record). True when replaced.
    pub fn replace_if_at(
        &mut self,
        bucket: &[u8],
        key: &[u8],
        expect: (u32, u32),
        new: Entry,
    ) -> bool {
        match self.find(bucket, key) {
            Some(slot) if slot_entry(slot_bytes(&self.chunks, slot)).location() == expect => {
                self.write_entry(slot, &new);
                true
            }
            _ => false,
        }
    }

    /// Removes every entry `drop` selects, calling `removed` for each.
    pub fn remove_where(
        &mut self,
        mut drop: impl FnMut(&[u8], &[u8], &Entry) -> bool,
        mut removed: impl FnMut(&[u8], &[u8], &Entry),
    ) {
        let chunks = &self.chunks;
        let mut garbage = 0;
        self.table.retain(|s| {
            let b = slot_bytes(chunks, *s);
            let (bucket, key) = slot_key(b);
            let e = slot_entry(b);
            if !drop(bucket, key, &e) {
                return true;
            }
            removed(bucket, key, &e);
            garbage += slot_len(bucket.len(), key.len());
            false
        });
        self.garbage_bytes += garbage;
        self.maybe_compact();
    }

    /// Calls `f` for every key and its entry, in no particular order.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], &[u8], &Entry)) {
        for s in self.table.iter() {
            let b = slot_bytes(&self.chunks, *s);
            let (bucket, key) = slot_key(b);
            f(bucket, key, &slot_entry(b));
        }
    }

    fn maybe_compact(&mut self) {
        if self.garbage_bytes > CHUNK_BYTES && self.garbage_bytes * 2 > self.used_bytes {
            self.compact();
        }
    }

    /// Copies live slots into fresh chunks; hashes do not change, so the
    /// table keeps its layout and only its values are rewritten.
    fn compact(&mut self) {
        let old = std::mem::take(&mut self.chunks);
        self.used_bytes = 0;
        self.garbage_bytes = 0;
        let mut table = std::mem::take(&mut self.table);
        for s in table.iter_mut() {
            let b = slot_bytes(&old, *s);
            let (bucket, key) = slot_key(b);
            *s = self.append_slot(bucket, key, &slot_entry(b));
        }
        let chunks = &self.chunks;
        table.shrink_to_fit(|s| {
            let (b, k) = slot_key(slot_bytes(chunks, *s));
            hash(b, k)
        });
        self.table = table;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(file_id: u32, offset: u32) -> Entry {
        Entry {
            file_id,
            offset,
            size: 40,
            tstamp: 1,
            expiry: 0,
        }
    }

    #[test]
    fn insert_get_update_remove() {
        let mut kd = Keydir::new();
        assert_eq!(kd.insert(b"b", b"k", e(1, 16)), None);
        assert_eq!(kd.insert(b"b", b"k2", e(1, 56)), None);
        assert_eq!(kd.insert(b"b", b"k", e(2, 16)), Some(e(1, 16)));
        assert_eq!(kd.get(b"b", b"k"), Some(e(2, 16)));
        assert_eq!(kd.get(b"bk", b""), None);
        assert!(!kd.replace_if_at(b"b", b"k", (1, 16), e(3, 16)));
        assert!(kd.replace_if_at(b"b", b"k", (2, 16), e(3, 16)));
        assert_eq!(kd.remove(b"b", b"k"), Some(e(3, 16)));
        assert_eq!(kd.get(b"b", b"k"), None);
        assert_eq!(kd.len(), 1);
    }

    #[test]
    fn compaction_keeps_every_live_key() {
        let mut kd = Keydir::new();
        for i in 0..200_000u32 {
            kd.insert(b"bucket", &i.to_be_bytes(), e(i, i));
        }
        for i in (0..200_000u32).filter(|i| i % 4 != 0) {
            assert!(kd.remove(b"bucket", &i.to_be_bytes()).is_some());
        }
        assert!(kd.garbage_bytes * 2 <= kd.used_bytes.max(CHUNK_BYTES * 2));
        for i in 0..200_000u32 {
            let got = kd.get(b"bucket", &i.to_be_bytes());
            assert_eq!(got, (i % 4 == 0).then(|| e(i, i)));
        }
    }

    /// Memory per key for one million keys, from the structure's own
    /// accounting: arena chunk capacity plus the hash table's allocation.
    #[test]
    fn bytes_per_key_for_one_million_keys() {
        let mut kd = Keydir::new();
        let n = 1_000_000u32;
        let key_bytes = 6 + 10; // bucket "bucket" + 10-byte key
        for i in 0..n {
            let key = format!("k{i:09}");
            kd.insert(b"bucket", key.as_bytes(), e(i, i));
        }
        let per_key = kd.memory_bytes() as f64 / n as f64;
        let overhead = per_key - key_bytes as f64;
        eprintln!("keydir: {per_key:.1} bytes/key, {overhead:.1} beyond the key bytes");
        assert!(overhead <= 40.0, "keydir overhead {overhead:.1} bytes/key");
    }
}
