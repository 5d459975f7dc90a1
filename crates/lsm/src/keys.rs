//! Order-preserving key encoding: tuples of byte strings to fjall keys.
//!
//! Tuples are encoded by [`eddy_storage::tuple`]: every component but the
//! last (always the object key) escaped and terminated, the last raw, so
//! byte order is tuple order (checked for these layouts by the proptests
//! below). Layouts:
//!
//! - object keyspace: `esc(bucket) key`
//! - aux keyspace, terms record: `b't' esc(bucket) key`
//! - aux keyspace, index entry: `b'i' esc(bucket) esc(field) esc(term) key`
//!
//! Every encoded key holds a terminator, so it is at least two bytes long
//! and never empty (fjall rejects empty keys). fjall also rejects keys over
//! [`ENCODED_KEY_BYTES_MAX`]; [`check_len`] turns that into an error.

use std::ops::Bound;

use eddy_storage::StorageError;
pub use eddy_storage::tuple::{TERMINATOR, push_escaped, split_escaped, terminated_upper};

/// Longest key fjall accepts.
pub const ENCODED_KEY_BYTES_MAX: usize = u16::MAX as usize;

/// Region tag of a key's terms record in the aux keyspace.
pub const TERMS_TAG: u8 = b't';
/// Region tag of index entries in the aux keyspace.
pub const INDEX_TAG: u8 = b'i';

/// The object keyspace key of `(bucket, key)`.
pub fn object_key(bucket: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + key.len() + 4);
    push_escaped(&mut out, bucket);
    out.extend_from_slice(key);
    out
}

/// The aux keyspace key of `(bucket, key)`'s terms record.
pub fn terms_key(bucket: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + key.len() + 5);
    out.push(TERMS_TAG);
    push_escaped(&mut out, bucket);
    out.extend_from_slice(key);
    out
}

/// Length of [`terms_key`]`(bucket, key)`, the longest key a stored object
/// needs, without building it.
pub fn terms_key_len(bucket: &[u8], key: &[u8]) -> usize {
    let zeros = bucket.iter().filter(|&&b| b == 0).count();
    1 + bucket.len() + zeros + TERMINATOR.len() + key.len()
}

/// The prefix shared by all index entries of `(bucket, field)`.
pub fn index_prefix(bucket: &[u8], field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + field.len() + 5);
    out.push(INDEX_TAG);
    push_escaped(&mut out, bucket);
    push_escaped(&mut out, field);
    out
}

/// The aux keyspace key of index entry `(bucket, field, term, key)`.
pub fn index_key(bucket: &[u8], field: &[u8], term: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = index_prefix(bucket, field);
    push_escaped(&mut out, term);
    out.extend_from_slice(key);
    out
}

/// Fails when an encoded key is longer than fjall accepts.
pub fn check_len(encoded: &[u8]) -> Result<(), StorageError> {
    if encoded.len() > ENCODED_KEY_BYTES_MAX {
        return Err(StorageError::TooLarge {
            what: "encoded lsm key (bucket + key, or bucket + index field + term + key)",
            size: encoded.len(),
            max: ENCODED_KEY_BYTES_MAX,
        });
    }
    Ok(())
}

/// Range of object keys a fold visits: one bucket (optionally from
/// `key_start` to `key_end`, both inclusive) or everything.
pub fn object_range(
    bucket: Option<&[u8]>,
    key_start: Option<&[u8]>,
    key_end: Option<&[u8]>,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let Some(bucket) = bucket else {
        return (Bound::Unbounded, Bound::Unbounded);
    };
    let prefix = object_key(bucket, b"");
    let lower = Bound::Included(object_key(bucket, key_start.unwrap_or_default()));
    let upper = match key_end {
        Some(end) => Bound::Included(object_key(bucket, end)),
        None => Bound::Excluded(terminated_upper(&prefix)),
    };
    (lower, upper)
}

/// Range of a bucket's keys in a tagged aux region (`TERMS_TAG`).
pub fn tagged_bucket_range(tag: u8, bucket: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let mut prefix = vec![tag];
    push_escaped(&mut prefix, bucket);
    let upper = terminated_upper(&prefix);
    (Bound::Included(prefix), Bound::Excluded(upper))
}

/// Range of index entries with `start <= term <= end`, strictly after
/// `start_after` when given.
pub fn index_range(
    prefix: &[u8],
    start: &[u8],
    end: &[u8],
    start_after: Option<(&[u8], &[u8])>,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    eddy_storage::tuple::term_range(prefix, (start, end), start_after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::ops::RangeBounds;

    use eddy_storage::tuple::arbitrary_part as bytes;

    proptest! {
        #[test]
        fn object_keys_sort_like_tuples(a in (bytes(), bytes()), b in (bytes(), bytes())) {
            let ea = object_key(&a.0, &a.1);
            let eb = object_key(&b.0, &b.1);
            prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
        }

        #[test]
        fn index_keys_sort_like_tuples(
            a in (bytes(), bytes(), bytes(), bytes()),
            b in (bytes(), bytes(), bytes(), bytes()),
        ) {
            let ea = index_key(&a.0, &a.1, &a.2, &a.3);
            let eb = index_key(&b.0, &b.1, &b.2, &b.3);
            prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
        }

        #[test]
        fn bucket_range_holds_exactly_the_bucket(bucket in bytes(), other in (bytes(), bytes())) {
            let (lo, hi) = object_range(Some(&bucket), None, None);
            let encoded = object_key(&other.0, &other.1);
            let inside = (lo.as_ref(), hi.as_ref()).contains(&encoded);
            prop_assert_eq!(inside, other.0 == bucket);
        }

        #[test]
        fn index_range_holds_exactly_the_terms(
            start in bytes(), end in bytes(), after in proptest::option::of((bytes(), bytes())),
            entry in (bytes(), bytes()),
        ) {
            let prefix = index_prefix(b"b", b"f");
            let after_ref = after.as_ref().map(|(t, k)| (t.as_slice(), k.as_slice()));
            let (lo, hi) = index_range(&prefix, &start, &end, after_ref);
            let encoded = index_key(b"b", b"f", &entry.0, &entry.1);
            let inside = (lo.as_ref(), hi.as_ref()).contains(&encoded);
            let query = eddy_storage::IndexQuery {
                bucket: b"b".to_vec(),
                field: b"f".to_vec(),
                start,
                end,
                start_after: after,
            };
            prop_assert_eq!(inside, query.admits(&entry.0, &entry.1));
        }
    }

    #[test]
    fn terms_key_len_is_exact() {
        for (b, k) in [(&b""[..], &b""[..]), (b"a\x00\x00b", b"k\x00")] {
            assert_eq!(terms_key_len(b, k), terms_key(b, k).len());
        }
    }

    #[test]
    fn neighbouring_regions_do_not_overlap() {
        let (lo, hi) = tagged_bucket_range(TERMS_TAG, b"b");
        assert!((lo.as_ref(), hi.as_ref()).contains(&terms_key(b"b", b"")));
        assert!(!(lo.as_ref(), hi.as_ref()).contains(&terms_key(b"b\x00", b"")));
        assert!(!(lo.as_ref(), hi.as_ref()).contains(&index_key(b"b", b"", b"", b"")));
    }
}
