//! Building a vnode's side store from its objects: a data directory
//! written before the side store existed (bitcask and lsm kept their own
//! index entries then), or a side store a crash left half built; and
//! recording a change for each object in a change sequence begun over
//! them (a data directory written before the change sequence). Runs at
//! open, before the vnode serves or replays, with a progress line in the
//! log every [`PROGRESS_EVERY`] objects.
//!
//! Invariant: the store is marked built only after every object's entries
//! are in it and durable, the sequence seeded only after a change of
//! every object is; a build cut short starts again at the next open
//! (telling the store an object's entries twice changes nothing; a change
//! recorded twice is read once, at its latest).

use eddy_ring::Partition;
use eddy_storage::{FoldControl, FoldOptions, StorageError};

use crate::entries::{Entries, Stores, changes_error};
use crate::replay::TtlOf;
use crate::segments::indexed_object;

/// Objects between two progress lines.
pub const PROGRESS_EVERY: u64 = 100_000;

/// What a build found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Built {
    /// Objects read.
    pub objects: u64,
    /// Objects with index entries, now in the side store.
    pub indexed: u64,
    /// Objects that did not decode (left out; their reads fail as before).
    pub undecodable: u64,
}

/// Builds `stores`' side store from its backend's objects unless it is
/// built already, each object with the expiry its bucket's ttl
/// (`ttl_of`) gives, and records a change for each object unless its
/// change sequence holds them already (a sequence begun over a vnode's
/// objects); `None` when there was nothing to do.
pub fn build_if_needed(
    stores: &Stores,
    p: Partition,
    ttl_of: &TtlOf<'_>,
) -> Result<Option<Built>, StorageError> {
    let Some(side) = &stores.side else {
        return Ok(None);
    };
    let build = !side.is_built()?;
    let seed = !side.sequence().is_seeded();
    if !build && !seed {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    let mut built = Built::default();
    let mut failed = None;
    stores
        .backend
        .fold_objects(&FoldOptions::all(), &mut |bucket, key, value| {
            built.objects += 1;
            if built.objects.is_multiple_of(PROGRESS_EVERY) {
                tracing::info!(
                    partition = p.0,
                    objects = built.objects,
                    indexed = built.indexed,
                    "building the side store"
                );
            }
            let object = match indexed_object(bucket, value) {
                Ok(Some(object)) => object,
                Ok(None) => return FoldControl::Continue,
                Err(_) => {
                    built.undecodable += 1;
                    return FoldControl::Continue;
                }
            };
            let persistent = stores.backend.capabilities_for(bucket).persistent;
            let mut done = match seed {
                true => stores.record_change((bucket, key), object.is_deleted(), persistent),
                false => Ok(()),
            };
            let entries = Entries::between(None, &object, ttl_of(bucket));
            if build && entries != Entries::Untouched {
                built.indexed += 1;
                done = done.and_then(|()| stores.set_side((bucket, key), &entries));
            }
            match done {
                Ok(()) => FoldControl::Continue,
                Err(e) => {
                    failed = Some(e);
                    FoldControl::Stop
                }
            }
        })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if build {
        side.persist()?;
        side.mark_built()?;
        side.persist()?;
    }
    if seed {
        let marked = side.sequence().mark_seeded();
        marked.map_err(|e| changes_error(side, e))?;
    }
    if built.objects > 0 {
        tracing::info!(
            partition = p.0,
            objects = built.objects,
            indexed = built.indexed,
            undecodable = built.undecodable,
            changes_recorded = seed,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "side store built"
        );
    }
    Ok(Some(built))
}
