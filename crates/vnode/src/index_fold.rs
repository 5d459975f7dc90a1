//! A vnode's part of a 2i query: the entries of one [`IndexScan`] it
//! holds for the key ranges its coverage plan gave it, in (term, key)
//! order, at most `scan.max` of them (the smallest).
//!
//! Index fields are read in order from wherever the bucket's entries live
//! (the side store, or the backend: `crate::entries`), entries of live
//! objects only, so the scan stops at `max`: a page costs what it returns. `$bucket`
//! and `$key` read the bucket's objects (a tombstone is not a live key),
//! then sort. Without `max`, a vnode sends at most one entry more than
//! [`UNPAGED_RESULTS_MAX`], so the coordinator can refuse the query.
//!
//! Item format: term length (u32, big-endian) ‖ term ‖ key; the term is
//! empty for `$bucket`/`$key` scans (the key is the term).

use eddy_storage::{FoldControl, FoldOptions, IndexQuery};

use crate::entries::Stores;

use super::fold::{Sink, in_ranges};
use super::msg::FoldRequest;
use eddy_model::error::KvError;
use eddy_model::index::query::{IndexScan, ScanField, UNPAGED_RESULTS_MAX, compile_regex};
use eddy_model::request::BucketRef;

/// Runs `scan` over `stores`, pushing each entry to `out`.
pub(crate) fn run(
    stores: &Stores,
    req: &FoldRequest,
    scan: &IndexScan,
    out: &mut dyn Sink,
) -> Result<(), KvError> {
    let max = scan.max.map_or(UNPAGED_RESULTS_MAX + 1, |m| m as usize);
    entries(stores, req, scan, max, &mut |term, key| {
        out.push(encode_entry(term, key))
    })
}

/// Hands each entry of `scan` in the plan's ranges, at most `max` of
/// them (the smallest), to `emit` as `(term, key)`; the term is empty for
/// `$bucket`/`$key` scans.
pub(crate) fn entries(
    stores: &Stores,
    req: &FoldRequest,
    scan: &IndexScan,
    max: usize,
    emit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<(), KvError> {
    let Some(bucket) = BucketRef::from_storage_bucket(&scan.bucket) else {
        return Ok(());
    };
    let regex = scan.regex.as_deref().map(compile_regex).transpose()?;
    let matches = |b: &[u8]| regex.as_ref().is_none_or(|re| re.is_match(b));
    match &scan.field {
        ScanField::Term(field) => {
            let query = IndexQuery {
                bucket: scan.bucket.clone(),
                field: field.clone(),
                start: scan.start.clone(),
                end: scan.end.clone(),
                start_after: scan.after.clone(),
            };
            let mut sent = 0;
            stores.index_range(&query, &mut |term, key| {
                if in_ranges(req, &bucket, key) && matches(term) {
                    emit(term, key);
                    sent += 1;
                }
                match sent >= max {
                    true => FoldControl::Stop,
                    false => FoldControl::Continue,
                }
            })?;
        }
        ScanField::Bucket | ScanField::Key => {
            let mut keys = Vec::new();
            stores.backend.fold_objects(
                &FoldOptions::bucket(&scan.bucket),
                &mut |_, key, value| {
                    if scan.admits(key, key) && matches(key) && in_ranges(req, &bucket, key) {
                        let live = crate::segments::is_live_record(value);
                        if live {
                            keys.push(key.to_vec());
                        }
                    }
                    FoldControl::Continue
                },
            )?;
            keys.sort_unstable();
            keys.truncate(max);
            keys.iter().for_each(|k| emit(b"", k));
        }
    }
    Ok(())
}

/// One entry as a fold item.
pub fn encode_entry(term: &[u8], key: &[u8]) -> Vec<u8> {
    let mut item = Vec::with_capacity(4 + term.len() + key.len());
    item.extend_from_slice(&(term.len() as u32).to_be_bytes());
    item.extend_from_slice(term);
    item.extend_from_slice(key);
    item
}

/// An item's `(term, key)`, borrowed; `None` if it is malformed.
pub fn split_entry(item: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = item.split_at_checked(4)?;
    let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
    rest.split_at_checked(len)
}
