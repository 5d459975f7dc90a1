//! The sender's reads: the partition's objects in key order ([`Fold`]),
//! the objects of given keys ([`Objects`]), or the digests of the keys up
//! to a position ([`Digests`]), a batch at a time.
//!
//! Each is a [`Source`] whose `next` runs on a blocking thread and returns
//! with one batch; [`Prefetch`] starts reading the next batch while the
//! sender sends the one it got, so one batch is in flight while the next
//! is read. No read waits on the async side (so a simulation's paused
//! clock can move whenever the reads are done).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use eddy_object::codec;
use eddy_storage::Backend;
use tokio::task::JoinHandle;

use super::HandoffConfig;
use super::order::{BatchBuilder, keys_after};
use super::wire::{Digest, Item, Position};
use eddy_model::KvError;
use eddy_model::request::segments_owner;
use eddy_vnode::msg::StorageKey;
use eddy_vnode::segments;

/// A batch read for sending.
#[derive(Debug)]
pub(crate) struct ReadBatch {
    pub items: Vec<Item>,
    /// The items' bytes.
    pub bytes: usize,
    /// The fold's position after this batch.
    pub position: Position,
}

/// Something read a batch at a time, blocking.
pub(crate) trait Source: Send + 'static {
    type Batch: Send + 'static;
    /// The next batch; `None` once everything was read.
    fn next(&mut self) -> Result<Option<Self::Batch>, String>;
}

/// A source back from reading, with what it read.
type Read<S> = (S, Result<Option<<S as Source>::Batch>, String>);

/// Reads a source's next batch on a blocking thread while the caller works
/// on the one before (or, inline, reads it when asked for it).
pub(crate) struct Prefetch<S: Source> {
    pending: Option<Pending<S>>,
}

/// The read of the next batch.
enum Pending<S: Source> {
    Reading(JoinHandle<Read<S>>),
    /// Inline: the source, not read yet.
    Unread(S),
}

impl<S: Source> Prefetch<S> {
    /// Reads `source`; `inline` reads on the calling task.
    pub(crate) fn new(source: S, inline: bool) -> Prefetch<S> {
        Prefetch {
            pending: Some(read_next(source, inline)),
        }
    }

    /// The next batch (and the read of the one after it begins).
    pub(crate) async fn next(&mut self) -> Result<Option<S::Batch>, String> {
        let (source, batch, inline) = match self.pending.take() {
            None => return Ok(None),
            Some(Pending::Unread(mut source)) => {
                let batch = source.next();
                (source, batch, true)
            }
            Some(Pending::Reading(reading)) => {
                let (source, batch) = reading
                    .await
                    .map_err(|e| format!("reading the partition: {e}"))?;
                (source, batch, false)
            }
        };
        let batch = batch?;
        if batch.is_some() {
            self.pending = Some(read_next(source, inline));
        }
        Ok(batch)
    }
}

fn read_next<S: Source>(mut source: S, inline: bool) -> Pending<S> {
    if inline {
        return Pending::Unread(source);
    }
    Pending::Reading(tokio::task::spawn_blocking(move || {
        let batch = source.next();
        (source, batch)
    }))
}

/// Every object after a position, in key order; the last batch (maybe
/// empty) has position [`Position::Folded`].
pub(crate) struct Fold {
    backend: Arc<dyn Backend>,
    config: HandoffConfig,
    /// Where the next key fold starts.
    chunk_after: Position,
    /// Keys of the current chunk not read yet.
    keys: VecDeque<StorageKey>,
    /// A read object that did not fit the last batch.
    carried: Option<(StorageKey, Vec<u8>)>,
    done: bool,
}

impl Fold {
    pub(crate) fn new(backend: Arc<dyn Backend>, from: Position, config: HandoffConfig) -> Fold {
        Fold {
            backend,
            config,
            chunk_after: from,
            keys: VecDeque::new(),
            carried: None,
            done: false,
        }
    }

    /// The next stored object in key order, if any.
    fn next_object(&mut self) -> Result<Option<(StorageKey, Vec<u8>)>, String> {
        if let Some(carried) = self.carried.take() {
            return Ok(Some(carried));
        }
        loop {
            if self.keys.is_empty() {
                let chunk = keys_after(
                    &*self.backend,
                    &self.chunk_after,
                    self.config.chunk_keys_max,
                )
                .map_err(err)?;
                let Some(last) = chunk.last() else {
                    return Ok(None);
                };
                self.chunk_after = Position::After(last.bucket.clone(), last.key.clone());
                self.keys = chunk.into();
            }
            while let Some(key) = self.keys.pop_front() {
                // A key reaped since the fold listed it has nothing to send.
                if let Some(value) = read_whole(&*self.backend, &key)? {
                    return Ok(Some((key, value)));
                }
            }
        }
    }
}

impl Source for Fold {
    type Batch = ReadBatch;

    fn next(&mut self) -> Result<Option<ReadBatch>, String> {
        if self.done {
            return Ok(None);
        }
        let mut builder =
            BatchBuilder::new(self.config.batch_bytes_max, self.config.batch_objects_max);
        while let Some((key, value)) = self.next_object()? {
            if builder.would_overflow(BatchBuilder::size_of(&key, &value)) {
                self.carried = Some((key, value));
                let position = match builder.last_key() {
                    Some((b, k)) => Position::After(b.to_vec(), k.to_vec()),
                    None => Position::Start,
                };
                return Ok(Some(batch(builder, position)));
            }
            builder.push(key, value);
        }
        self.done = true;
        Ok(Some(batch(builder, Position::Folded)))
    }
}

/// The stored objects of given keys, in batches at a fixed position.
pub(crate) struct Objects {
    backend: Arc<dyn Backend>,
    config: HandoffConfig,
    keys: VecDeque<StorageKey>,
    carried: Option<(StorageKey, Vec<u8>)>,
    position: Position,
}

impl Objects {
    pub(crate) fn new(
        backend: Arc<dyn Backend>,
        keys: Vec<StorageKey>,
        position: Position,
        config: HandoffConfig,
    ) -> Objects {
        Objects {
            backend,
            config,
            keys: keys.into(),
            carried: None,
            position,
        }
    }
}

impl Source for Objects {
    type Batch = ReadBatch;

    fn next(&mut self) -> Result<Option<ReadBatch>, String> {
        let mut builder =
            BatchBuilder::new(self.config.batch_bytes_max, self.config.batch_objects_max);
        if let Some((key, value)) = self.carried.take() {
            builder.push(key, value);
        }
        while let Some(key) = self.keys.pop_front() {
            if segments_owner(&key.bucket).is_some() {
                continue; // its root's key is among the keys too
            }
            let Some(value) = read_whole(&*self.backend, &key)? else {
                continue;
            };
            if builder.would_overflow(BatchBuilder::size_of(&key, &value)) {
                self.carried = Some((key, value));
                break;
            }
            builder.push(key, value);
        }
        Ok((!builder.is_empty()).then(|| batch(builder, self.position.clone())))
    }
}

/// The version vectors of the stored objects up to a position, in key
/// order, in lists of at most `batch_objects_max * 4`.
pub(crate) struct Digests {
    backend: Arc<dyn Backend>,
    config: HandoffConfig,
    upto: Position,
    chunk_after: Position,
    keys: VecDeque<StorageKey>,
    done: bool,
}

impl Digests {
    pub(crate) fn new(backend: Arc<dyn Backend>, upto: Position, config: HandoffConfig) -> Digests {
        Digests {
            backend,
            config,
            upto,
            chunk_after: Position::Start,
            keys: VecDeque::new(),
            done: false,
        }
    }

    fn next_key(&mut self) -> Result<Option<StorageKey>, String> {
        if self.keys.is_empty() && !self.done {
            let chunk = keys_after(
                &*self.backend,
                &self.chunk_after,
                self.config.chunk_keys_max,
            )
            .map_err(err)?;
            match chunk.last() {
                Some(last) => {
                    self.chunk_after = Position::After(last.bucket.clone(), last.key.clone());
                }
                None => self.done = true,
            }
            self.keys = chunk.into();
        }
        let key = self.keys.pop_front();
        match key {
            Some(k) if self.upto.covers(&k.bucket, &k.key) => Ok(Some(k)),
            _ => {
                self.done = true;
                self.keys.clear();
                Ok(None)
            }
        }
    }
}

impl Source for Digests {
    type Batch = Vec<Digest>;

    fn next(&mut self) -> Result<Option<Vec<Digest>>, String> {
        let max = self.config.batch_objects_max.saturating_mul(4).max(1);
        let mut list = Vec::new();
        while list.len() < max {
            let Some(key) = self.next_key()? else { break };
            let Some(value) = self.backend.get(&key.bucket, &key.key).map_err(err)? else {
                continue;
            };
            // An object that does not decode gets an empty vector: the
            // receiver then wants it, and sees for itself.
            let vv = segments::version_of(&value).unwrap_or_default();
            list.push(Digest {
                bucket: Bytes::from(key.bucket),
                key: Bytes::from(key.key),
                vv: Bytes::from(codec::encode_vv(&vv)),
            });
        }
        Ok((!list.is_empty()).then_some(list))
    }
}

fn batch(mut builder: BatchBuilder, position: Position) -> ReadBatch {
    let (items, bytes) = builder.take();
    ReadBatch {
        items,
        bytes,
        position,
    }
}

fn err(e: impl std::fmt::Display) -> String {
    format!("reading the partition: {e}")
}

/// `key`'s stored object as the receiver takes it: a segmented value
/// assembled whole. One that cannot be assembled (a segment missing or
/// damaged) is skipped with a warning, as the receiver skips an object that
/// does not decode: it could not be read anywhere.
fn read_whole(backend: &dyn Backend, key: &StorageKey) -> Result<Option<Vec<u8>>, String> {
    let Some(bytes) = backend.get(&key.bucket, &key.key).map_err(err)? else {
        return Ok(None);
    };
    match segments::whole_bytes(backend, key, bytes) {
        Ok(whole) => Ok(Some(whole)),
        Err(e @ (KvError::DatatypeCorrupt(_) | KvError::Corrupt(_))) => {
            tracing::warn!("segmented object not handed off: {e}");
            Ok(None)
        }
        Err(e) => Err(e.to_string()),
    }
}
