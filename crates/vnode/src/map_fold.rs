//! A vnode's map fold: a map phase run over the live objects of one
//! bucket that fall in the plan's ranges (and that a key filter matches,
//! if the fold has one), [`MAP_BATCH`] objects per call of the node's
//! [`MapRunner`], each call's outputs pushed as items.
//!
//! Each item is the JSON text of a list of outputs. An item that crosses
//! the network must fit the wire's item limit: a longer list is split,
//! and one output too long for an item on its own fails the fold.
//!
//! The runner is called from inside the backend's fold callback, which
//! reads a snapshot outside the vnode's key locks (the storage contract
//! lets folds run beside writes), so no key lock is ever held meanwhile.
//!
//! An index map ([`run_index`]) takes its inputs from a 2i scan instead:
//! the scan's entries in the plan's ranges are listed first, then each
//! entry's object is read (one input per entry, as the job's index input
//! lists them; a key deleted meanwhile is skipped).

use eddy_object::codec;
use eddy_storage::{Backend, FoldControl, FoldOptions};
use serde_json::Value;

use super::fold::{Sink, in_ranges};
use super::msg::{FoldRequest, IndexMapFold, MapFold, StorageKey};
use super::segments::{self, read_object};
use crate::mapphase::{MAP_BATCH, MapInput, MapRunner};
use eddy_model::error::KvError;
use eddy_model::request::BucketRef;

/// Runs `fold` over `backend` with `runner`, pushing its outputs to `out`.
/// Without a runner the fold fails: this node runs no map phases.
pub(crate) fn run(
    backend: &dyn Backend,
    req: &FoldRequest,
    fold: &MapFold,
    runner: Option<&dyn MapRunner>,
    out: &mut dyn Sink,
) -> Result<(), KvError> {
    let runner = runner.ok_or_else(no_runner)?;
    let Some(named) = BucketRef::from_storage_bucket(&fold.bucket) else {
        return Ok(());
    };
    let mut batch = Vec::new();
    let mut roots = Vec::new();
    let mut failed = None;
    let mut visit = |_: &[u8], key: &[u8], value: &[u8]| {
        let wanted =
            in_ranges(req, &named, key) && fold.filter.as_ref().is_none_or(|f| f.matches(key));
        if !wanted {
            return FoldControl::Continue;
        }
        // A segmented value is assembled after the fold, which must not
        // read the backend from inside.
        if segments::is_root_record(value) {
            roots.push(key.to_vec());
            return FoldControl::Continue;
        }
        match codec::decode(value) {
            Ok(object) if !object.is_deleted() => batch.push(MapInput {
                bucket: named.clone(),
                key: key.to_vec(),
                object,
            }),
            _ => return FoldControl::Continue,
        }
        if batch.len() < MAP_BATCH {
            return FoldControl::Continue;
        }
        match call(runner, &fold.phase, std::mem::take(&mut batch), out) {
            Ok(()) => FoldControl::Continue,
            Err(e) => {
                failed = Some(e);
                FoldControl::Stop
            }
        }
    };
    backend.fold_objects(&FoldOptions::bucket(&fold.bucket), &mut visit)?;
    if let Some(e) = failed {
        return Err(e);
    }
    for key in roots {
        let storage_key = StorageKey {
            bucket: fold.bucket.clone(),
            key,
        };
        if let Some(object) = read_object(backend, &storage_key)? {
            batch.push(MapInput {
                bucket: named.clone(),
                key: storage_key.key,
                object,
            });
        }
    }
    match batch.is_empty() {
        true => Ok(()),
        false => call(runner, &fold.phase, batch, out),
    }
}

/// Runs `fold`'s phase over the objects of its scan's entries in the
/// plan's ranges, [`MAP_BATCH`] at a time. Without a runner it fails.
pub(crate) fn run_index(
    stores: &crate::entries::Stores,
    req: &FoldRequest,
    fold: &IndexMapFold,
    runner: Option<&dyn MapRunner>,
    out: &mut dyn Sink,
) -> Result<(), KvError> {
    let runner = runner.ok_or_else(no_runner)?;
    let Some(named) = BucketRef::from_storage_bucket(&fold.scan.bucket) else {
        return Ok(());
    };
    let mut keys = Vec::new();
    let backend = &*stores.backend;
    super::index_fold::entries(stores, req, &fold.scan, usize::MAX, &mut |_, key| {
        keys.push(key.to_vec())
    })?;
    let mut batch = Vec::with_capacity(MAP_BATCH.min(keys.len()));
    for key in keys {
        let storage_key = StorageKey {
            bucket: fold.scan.bucket.clone(),
            key,
        };
        match read_object(backend, &storage_key)? {
            Some(object) if !object.is_deleted() => batch.push(MapInput {
                bucket: named.clone(),
                key: storage_key.key,
                object,
            }),
            _ => continue,
        }
        if batch.len() >= MAP_BATCH {
            call(runner, &fold.phase, std::mem::take(&mut batch), out)?;
        }
    }
    match batch.is_empty() {
        true => Ok(()),
        false => call(runner, &fold.phase, batch, out),
    }
}

fn no_runner() -> KvError {
    KvError::BadQuery("this node has no map phase runner".into())
}

/// Calls the runner on one batch and pushes its outputs.
fn call(
    runner: &dyn MapRunner,
    phase: &[u8],
    batch: Vec<MapInput>,
    out: &mut dyn Sink,
) -> Result<(), KvError> {
    let output = runner.run(phase, batch).map_err(KvError::BadQuery)?;
    for item in items(output, out.item_bytes_max())? {
        out.push(item);
    }
    Ok(())
}

/// `output` (a JSON list text) as items of at most `max` bytes each, each
/// a JSON list text; one item when there is no limit or it fits.
pub(crate) fn items(output: Vec<u8>, max: Option<usize>) -> Result<Vec<Vec<u8>>, KvError> {
    let Some(max) = max.filter(|m| output.len() > *m) else {
        return Ok(vec![output]);
    };
    let values: Vec<Value> = serde_json::from_slice(&output)
        .map_err(|e| KvError::BadQuery(format!("a map phase's output is not a JSON list: {e}")))?;
    let mut items = Vec::new();
    let mut item = Vec::new();
    for v in values {
        let text = serde_json::to_vec(&v).unwrap_or_default();
        if text.len() + 2 > max {
            return Err(KvError::TooLarge {
                what: "map output",
                size: text.len(),
                max: max - 2,
            });
        }
        if item.len() + text.len() + 2 > max {
            items.push(close(std::mem::take(&mut item)));
        }
        item.push(if item.is_empty() { b'[' } else { b',' });
        item.extend_from_slice(&text);
    }
    if !item.is_empty() {
        items.push(close(item));
    }
    Ok(items)
}

fn close(mut item: Vec<u8>) -> Vec<u8> {
    item.push(b']');
    item
}

#[cfg(test)]
mod tests {
    use super::items;

    fn parsed(items: &[Vec<u8>]) -> Vec<serde_json::Value> {
        items
            .iter()
            .flat_map(|i| serde_json::from_slice::<Vec<serde_json::Value>>(i).unwrap())
            .collect()
    }

    #[test]
    fn an_output_that_fits_is_one_item_as_it_came() {
        let out = br#"[1, "two"]"#.to_vec();
        assert_eq!(items(out.clone(), None).unwrap(), vec![out.clone()]);
        assert_eq!(items(out.clone(), Some(64)).unwrap(), vec![out]);
    }

    #[test]
    fn a_long_output_is_split_into_lists_that_fit() {
        let values: Vec<String> = (0..100).map(|i| format!("value-{i:04}")).collect();
        let out = serde_json::to_vec(&values).unwrap();
        let split = items(out.clone(), Some(50)).unwrap();
        assert!(split.len() > 1);
        assert!(split.iter().all(|i| i.len() <= 50));
        let all: Vec<serde_json::Value> = serde_json::from_slice(&out).unwrap();
        assert_eq!(parsed(&split), all);
    }

    #[test]
    fn one_output_longer_than_an_item_fails_clearly() {
        let out = serde_json::to_vec(&["x".repeat(100)]).unwrap();
        let e = items(out, Some(50)).unwrap_err();
        assert!(e.to_string().contains("map output"), "{e}");
    }
}
