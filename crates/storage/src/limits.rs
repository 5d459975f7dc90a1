//! Size limits every backend enforces, so that on-disk length fields never
//! overflow and a runaway request gets a clear error.

use crate::{StorageError, batch::BatchOp, index::IndexSpec};

// Chosen so that every encoded key fits the lsm engine's 64 KiB key limit
// even when every byte needs escaping: an index key holds the bucket, field
// and term escaped (up to twice their length) and the object key as is:
// 2 × 4 KiB + 2 × 1 KiB + 2 × 8 KiB + 16 KiB + terminators < 64 KiB.

/// Longest bucket name in bytes (including the encoded bucket type).
pub const BUCKET_BYTES_MAX: usize = 4 * 1024;
/// Longest key in bytes.
pub const KEY_BYTES_MAX: usize = 16 * 1024;
/// Largest value in bytes (the API layer's object limit is far lower).
pub const VALUE_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Longest index field name in bytes.
pub const INDEX_FIELD_BYTES_MAX: usize = 1024;
/// Longest index term in bytes.
pub const INDEX_TERM_BYTES_MAX: usize = 8 * 1024;
/// Most index specs one put may carry.
pub const INDEX_SPECS_MAX: usize = 10_000;

/// Checks `ops` against the limits, then refuses them whole if a put
/// carries index specs: the check of a backend that keeps no index
/// entries (`Capabilities::indexes` false).
pub fn check_ops_without_indexes(
    ops: &[BatchOp],
    backend: &'static str,
) -> Result<(), StorageError> {
    ops.iter().try_for_each(check_op)?;
    let specs = |op: &BatchOp| matches!(op, BatchOp::Put { indexes, .. } if !indexes.is_empty());
    match ops.iter().any(specs) {
        true => Err(StorageError::NoIndexes { backend }),
        false => Ok(()),
    }
}

/// Checks one op against the limits.
pub fn check_op(op: &BatchOp) -> Result<(), StorageError> {
    let (bucket, key) = op.bucket_key();
    check_len("bucket", bucket.len(), BUCKET_BYTES_MAX)?;
    check_len("key", key.len(), KEY_BYTES_MAX)?;
    if let BatchOp::Put { value, indexes, .. } = op {
        check_len("value", value.len(), VALUE_BYTES_MAX)?;
        check_len("index specs", indexes.len(), INDEX_SPECS_MAX)?;
        for spec in indexes {
            let (IndexSpec::Add { field, term } | IndexSpec::Remove { field, term }) = spec;
            check_len("index field", field.len(), INDEX_FIELD_BYTES_MAX)?;
            check_len("index term", term.len(), INDEX_TERM_BYTES_MAX)?;
        }
    }
    Ok(())
}

fn check_len(what: &'static str, size: usize, max: usize) -> Result<(), StorageError> {
    if size > max {
        return Err(StorageError::TooLarge { what, size, max });
    }
    Ok(())
}
