//! A vnode's folds for coverage plans (list keys, filtered or not, list
//! buckets, 2i scans, map phases):
//! what it holds, filtered to the key ranges the plan asks it for, streamed
//! back in numbered chunks (or, for a local vnode, collected on the
//! caller's blocking thread: [`collect`]).
//!
//! A fold reads every object of the vnode, so it runs on a thread of its
//! own: never on the runtime's threads nor on a transport worker (the one
//! rule, in the crate docs). Keys that hold only a tombstone are not
//! listed; a bucket is listed if it holds any key, as a single node's
//! listing always did.
//!
//! Invariant: every fold ends with exactly one chunk marked last (possibly
//! empty), or with one error.

use std::collections::BTreeSet;
use std::sync::Arc;

use eddy_ring::Partition;
use eddy_storage::{Backend, FoldControl, FoldOptions};

use crate::entries::Stores;

use super::FoldTicket;
use super::msg::{FoldChunk, FoldKind, FoldRequest, VnodeReply};
use super::reply::{LocalHint, ReplyTo};
use crate::mapphase::MapRunner;
use eddy_model::error::KvError;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::request::BucketRef;

/// The longest fold item: a key, a bucket name, a 2i entry (a term and a
/// key, with the term's length), or a map fold's list of outputs.
pub const FOLD_ITEM_BYTES_MAX: usize = {
    use eddy_storage::limits::{BUCKET_BYTES_MAX, INDEX_TERM_BYTES_MAX, KEY_BYTES_MAX};
    let a = if BUCKET_BYTES_MAX > KEY_BYTES_MAX {
        BUCKET_BYTES_MAX
    } else {
        KEY_BYTES_MAX
    };
    let b = 4 + INDEX_TERM_BYTES_MAX + KEY_BYTES_MAX;
    if a > b { a } else { b }
};

/// Items per chunk.
pub const CHUNK_LEN: usize = 1000;
/// Bytes of items per chunk (a map fold's items are long), well below
/// the transport's frame limit.
pub const CHUNK_BYTES: usize = 4 * 1024 * 1024;

/// Starts `req` over `stores` on a thread of its own; the chunks go to
/// `reply`. `runner` runs a map fold's phase (none: a map fold fails).
/// The vnode's `ticket` is held until the fold ends.
pub fn spawn(
    partition: Partition,
    stores: Stores,
    req: FoldRequest,
    runner: Option<Arc<dyn MapRunner>>,
    reply: ReplyTo,
    ticket: FoldTicket,
) {
    let failed = reply.clone();
    let started = std::thread::Builder::new()
        .name("eddy-fold".into())
        .spawn(move || {
            let _running = ticket;
            let mut out = Chunks {
                partition,
                reply,
                seq: 0,
                items: Vec::new(),
                bytes: 0,
            };
            match run(&stores, &req, runner.as_deref(), &mut out) {
                Ok(()) => out.finish(),
                Err(e) => out.fail(e),
            }
        });
    if let Err(e) = started {
        let e = KvError::VnodeStart(format!("cannot start a fold: {e}"));
        failed.send(partition, VnodeReply::Fold(Err(e)), LocalHint::default());
    }
}

/// Where a fold's items go.
pub(crate) trait Sink {
    fn push(&mut self, item: Vec<u8>);

    /// The longest item this sink can carry; `None`: no limit.
    fn item_bytes_max(&self) -> Option<usize> {
        None
    }
}

impl Sink for Vec<Vec<u8>> {
    fn push(&mut self, item: Vec<u8>) {
        Vec::push(self, item);
    }
}

/// Runs `req` over `stores` on the calling (blocking) thread and returns
/// its items: a local vnode's part of a coverage query.
pub fn collect(
    stores: &Stores,
    req: &FoldRequest,
    runner: Option<&dyn MapRunner>,
) -> Result<Vec<Vec<u8>>, KvError> {
    let mut items = Vec::new();
    run(stores, req, runner, &mut items)?;
    Ok(items)
}

/// The chunks of one fold's answer.
struct Chunks {
    partition: Partition,
    reply: ReplyTo,
    seq: u32,
    items: Vec<Vec<u8>>,
    /// The items' bytes.
    bytes: usize,
}

impl Sink for Chunks {
    fn push(&mut self, item: Vec<u8>) {
        if !self.items.is_empty() && self.bytes + item.len() > CHUNK_BYTES {
            self.send(false);
        }
        self.bytes += item.len();
        self.items.push(item);
        if self.items.len() >= CHUNK_LEN {
            self.send(false);
        }
    }

    fn item_bytes_max(&self) -> Option<usize> {
        Some(FOLD_ITEM_BYTES_MAX)
    }
}

impl Chunks {
    fn send(&mut self, last: bool) {
        let chunk = FoldChunk {
            seq: self.seq,
            last,
            items: std::mem::take(&mut self.items),
        };
        self.bytes = 0;
        self.seq += 1;
        let reply = VnodeReply::Fold(Ok(chunk));
        self.reply.send(self.partition, reply, LocalHint::default());
    }

    fn finish(mut self) {
        self.send(true);
    }

    fn fail(self, e: KvError) {
        let reply = VnodeReply::Fold(Err(e));
        self.reply.send(self.partition, reply, LocalHint::default());
    }
}

fn run(
    stores: &Stores,
    req: &FoldRequest,
    runner: Option<&dyn MapRunner>,
    out: &mut dyn Sink,
) -> Result<(), KvError> {
    let backend = &*stores.backend;
    let in_range = |bucket: &BucketRef, key: &[u8]| in_ranges(req, bucket, key);
    match &req.kind {
        FoldKind::Map(fold) => super::map_fold::run(backend, req, fold, runner, out)?,
        FoldKind::IndexMap(fold) => super::map_fold::run_index(stores, req, fold, runner, out)?,
        FoldKind::Index(scan) => super::index_fold::run(stores, req, scan, out)?,
        FoldKind::Keys { bucket } => keys(backend, req, bucket, None, out)?,
        FoldKind::FilteredKeys { bucket, filter } => {
            keys(backend, req, bucket, Some(filter), out)?;
        }
        FoldKind::Buckets { bucket_type } => {
            let mut found = BTreeSet::new();
            let mut visit = |storage_bucket: &[u8], key: &[u8]| {
                if let Some(b) = BucketRef::from_storage_bucket(storage_bucket)
                    && b.bucket_type == *bucket_type
                    && !found.contains(&b.bucket)
                    && in_range(&b, key)
                {
                    found.insert(b.bucket);
                }
                FoldControl::Continue
            };
            backend.fold_keys(&FoldOptions::all(), &mut visit)?;
            found.into_iter().for_each(|b| out.push(b));
        }
    }
    Ok(())
}

/// Pushes the live keys of storage bucket `bucket` in the plan's ranges
/// that `filter` (if any) matches. The filter runs before the object is
/// decoded: a key it drops costs no decode.
fn keys(
    backend: &dyn Backend,
    req: &FoldRequest,
    bucket: &[u8],
    filter: Option<&KeyFilter>,
    out: &mut dyn Sink,
) -> Result<(), KvError> {
    let Some(named) = BucketRef::from_storage_bucket(bucket) else {
        return Ok(());
    };
    let mut visit = |_: &[u8], key: &[u8], value: &[u8]| {
        let wanted = in_ranges(req, &named, key) && filter.is_none_or(|f| f.matches(key));
        if wanted && super::segments::is_live_record(value) {
            out.push(key.to_vec());
        }
        FoldControl::Continue
    };
    backend.fold_objects(&FoldOptions::bucket(bucket), &mut visit)?;
    Ok(())
}

/// True when `key` of `bucket` falls in the ranges the plan asked this
/// vnode for (every key when it asked for all).
pub(crate) fn in_ranges(req: &FoldRequest, bucket: &BucketRef, key: &[u8]) -> bool {
    let Some(ranges) = &req.ranges else {
        return true;
    };
    let hash = eddy_ring::key_hash(bucket.bucket_type.as_bytes(), &bucket.bucket, key);
    ranges.contains(&eddy_ring::partition_of(req.ring_size, hash))
}
