//! What the term index costs in memory: an estimate kept entry by entry
//! from the lengths of the byte strings it holds and fixed per-entry and
//! per-key overheads, without allocator hooks (design note 002, "The term
//! index's memory", compares it with a measurement).
//!
//! The model (64-bit, mimalloc: the node's allocator):
//! - A byte string of `n > 0` bytes is one allocation of mimalloc's size
//!   class for `n` ([`heap_bytes`]: multiples of 8 up to 64 bytes, then
//!   four classes per doubling); an empty one allocates nothing. glibc's
//!   malloc costs more for short strings (8 bytes of header, rounded to 16,
//!   at least 32), so under it the estimate is low.
//! - An entry of the ordered set costs [`ENTRY_NODE_BYTES`] for its share
//!   of B-tree nodes, plus its bucket, field, term and key.
//! - An indexed key costs [`KEY_SLOT_BYTES`] for its slot in the by-key
//!   table, its bucket and key, the boxed slice of its terms (48 bytes a
//!   term) and each term's field and term, plus its entries.
//!
//! The estimate is a pure function of what is stored, so adding and then
//! removing the same entries returns it exactly to where it was, and a
//! rebuild at open gives the figure the writes had reached.

/// An entry's share of the ordered set's B-tree nodes. An entry is four
/// `Vec` headers (96 bytes); a leaf holds at most 11 (1,072 bytes, which
/// mimalloc serves from its 1,280-byte class) and an internal node adds
/// 12 edges (1,168, also 1,280). Entries of one term arrive in key order,
/// and a leaf split by appends keeps 6 of its 11; entries at random places
/// fill leaves about two thirds. With one internal node per six or seven
/// leaves that is 1,280 / 6 × 7/6 ≈ 249 to 1,280 / 7.3 × 8/7 ≈ 200 bytes;
/// measured on a million coupon-like keys: 230.
pub const ENTRY_NODE_BYTES: u64 = 232;

/// An indexed key's slot in the by-key table: `(Vec, Vec)` plus a boxed
/// slice is 64 bytes, with one control byte 65; the table's load lies
/// between 7/16 and 7/8 (it doubles when full), so 74 to 149 bytes a key.
/// Taken at a load of one half; measured at a million keys (load 0.48): 136.
pub const KEY_SLOT_BYTES: u64 = 130;

/// One `(field, term)` pair in a key's boxed slice: two `Vec` headers.
const TERM_PAIR_BYTES: usize = 48;

/// Bytes mimalloc hands out for a request of `n` bytes (0 for none).
pub fn heap_bytes(n: usize) -> u64 {
    if n == 0 {
        return 0;
    }
    let words = n.div_ceil(8) as u64;
    if words <= 8 {
        return words * 8;
    }
    // Four size classes between two powers of two words.
    let step = 1u64 << ((63 - (words - 1).leading_zeros()) - 2);
    words.div_ceil(step) * step * 8
}

/// The estimated bytes of one entry `(bucket, field, term, key)`.
pub fn entry_bytes(bucket: &[u8], field: &[u8], term: &[u8], key: &[u8]) -> u64 {
    ENTRY_NODE_BYTES
        + heap_bytes(bucket.len())
        + heap_bytes(field.len())
        + heap_bytes(term.len())
        + heap_bytes(key.len())
}

/// The estimated bytes `(bucket, key)` costs the index with `terms`: its
/// by-key slot and term slice and every one of its entries; 0 without
/// terms (a key without entries is not in the index).
pub fn key_bytes<'a>(
    bucket: &[u8],
    key: &[u8],
    terms: impl IntoIterator<Item = &'a (Vec<u8>, Vec<u8>)>,
) -> u64 {
    let mut count = 0;
    let mut bytes = 0;
    for (field, term) in terms {
        count += 1;
        bytes += heap_bytes(field.len()) + heap_bytes(term.len());
        bytes += entry_bytes(bucket, field, term, key);
    }
    if count == 0 {
        return 0;
    }
    bytes
        + KEY_SLOT_BYTES
        + heap_bytes(bucket.len())
        + heap_bytes(key.len())
        + heap_bytes(count * TERM_PAIR_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_bytes_follow_mimallocs_size_classes() {
        let classes = [
            (0, 0),
            (1, 8),
            (8, 8),
            (9, 16),
            (64, 64),
            (65, 80),
            (96, 96),
            (97, 112),
            (128, 128),
            (129, 160),
            (544, 640),
            (1072, 1280),
            (8192, 8192),
        ];
        for (n, class) in classes {
            assert_eq!(heap_bytes(n), class, "{n} bytes");
        }
    }

    #[test]
    fn a_key_costs_its_slot_strings_and_entries() {
        let terms = [(b"f_bin".to_vec(), b"term".to_vec())];
        let one = key_bytes(b"bucket", b"key", &terms);
        let entry = ENTRY_NODE_BYTES + 8 + 8 + 8 + 8;
        assert_eq!(one, KEY_SLOT_BYTES + 8 + 8 + 48 + 8 + 8 + entry);
        assert_eq!(key_bytes(b"bucket", b"key", &[]), 0);
    }
}
