//! Order-preserving key encoding: tuples of byte strings to fjall keys.
//!
//! Tuples are encoded by [`eddy_storage::tuple`]: every component but the
//! last (always the object key) escaped and terminated, the last raw, so
//! byte order is tuple order (checked for this layout by the proptests
//! below). The object keyspace's key is `esc(bucket) key`.
//!
//! Every encoded key holds a terminator, so it is at least two bytes long
//! and never empty (fjall rejects empty keys). fjall also rejects keys over
//! [`ENCODED_KEY_BYTES_MAX`]; [`check_len`] turns that into an error.

use std::ops::Bound;

use eddy_storage::StorageError;
pub use eddy_storage::tuple::{TERMINATOR, push_escaped, split_escaped, terminated_upper};

/// Longest key fjall accepts.
pub const ENCODED_KEY_BYTES_MAX: usize = u16::MAX as usize;

/// The object keyspace key of `(bucket, key)`.
pub fn object_key(bucket: &[u8], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bucket.len() + key.len() + 4);
    push_escaped(&mut out, bucket);
    out.extend_from_slice(key);
    out
}

/// Length of [`object_key`]`(bucket, key)`, without building it.
pub fn object_key_len(bucket: &[u8], key: &[u8]) -> usize {
    let zeros = bucket.iter().filter(|&&b| b == 0).count();
    bucket.len() + zeros + TERMINATOR.len() + key.len()
}

/// Fails when an encoded key is longer than fjall accepts.
pub fn check_len(encoded: &[u8]) -> Result<(), StorageError> {
    if encoded.len() > ENCODED_KEY_BYTES_MAX {
        return Err(StorageError::TooLarge {
            what: "encoded lsm key (bucket + key)",
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
        fn bucket_range_holds_exactly_the_bucket(bucket in bytes(), other in (bytes(), bytes())) {
            let (lo, hi) = object_range(Some(&bucket), None, None);
            let encoded = object_key(&other.0, &other.1);
            let inside = (lo.as_ref(), hi.as_ref()).contains(&encoded);
            prop_assert_eq!(inside, other.0 == bucket);
        }

    }

    #[test]
    fn object_key_len_is_exact() {
        for (b, k) in [(&b""[..], &b""[..]), (b"a\x00\x00b", b"k\x00")] {
            assert_eq!(object_key_len(b, k), object_key(b, k).len());
        }
    }
}
