//! The vnode's writes of segmented sets and maps ([`super::segments`]): a
//! coordinated operation applied to the root and the segments it touches
//! (never the whole value), a delta another vnode coordinated joined the
//! same way, and a whole value written as a root and segments.
//!
//! Invariant: the records of one write go to the backend in one batch and
//! to the commit log in this order — the new segments, the root record,
//! the removal of the segments it no longer names — so a crash between any
//! two leaves the old root over intact old segments, or the new one over
//! its new ones.

use std::borrow::Cow;
use std::time::Instant;

use super::entries::Entries;

/// Segmented values are data type values, whose buckets have no ttl
/// (`eddy_model::props` refuses one with a `datatype`).
const NO_TTL: u64 = 0;
use bytes::Bytes;
use eddy_dt::{DataType, Delta, DtError, Root, State};
use eddy_object::{Content, RiakObject, Sibling, codec};

use super::msg::{Conditions, Coordinate, DtDelta, StorageKey, WritePolicy};
use super::segments::{self, StoredRoot};
use super::{Durability, Put, Records, Stored, Vnode, Written, apply};
use crate::commitlog::Lsn;
use eddy_model::error::KvError;
use eddy_model::error::Signal;

impl Vnode {
    /// Whether a coordinated write over the segmented value `stored` runs
    /// on its root and the segments it touches: an operation of the
    /// value's type, the value big enough to stay segmented, in a bucket
    /// that allows it.
    pub(super) fn partial_applies(
        &self,
        key: &StorageKey,
        stored: &StoredRoot,
        coordinate: &Coordinate,
    ) -> bool {
        let datatype = stored.root.datatype();
        let same_type = coordinate
            .update
            .as_deref()
            .is_some_and(|u| u.datatype == datatype && u.op.datatype() == datatype);
        same_type && stored.root.len() >= segments::SEGMENTED_KEEP && self.may_segment(key)
    }

    /// Applies a coordinated operation ([`Vnode::partial_applies`]) as
    /// this vnode's actor to the segmented value `stored`: reads the
    /// segments it touches, applies it there, writes those segments and
    /// the root. Caller holds the key's lock.
    pub(super) fn put_partial(
        &self,
        key: &StorageKey,
        stored: StoredRoot,
        coordinate: Coordinate,
        policy: WritePolicy,
        records: Records,
    ) -> Result<Written, KvError> {
        let Coordinate {
            content, update, ..
        } = coordinate;
        let Some(update) = update else {
            return Err(KvError::Signal(Signal::Behind));
        };
        let start = Instant::now();
        let touched = stored.root.touched_by_op(&update.op)?;
        let loaded = segments::read_segments(&*self.stores.backend, key, &stored.root, &touched)?;
        let mut partial = stored.root.partial(loaded)?;
        let now_us = content.meta.last_modified_us;
        let context = update.context.as_ref();
        let delta = partial
            .apply_with_delta(self.actor, &update.op, context, now_us)?
            .ok_or(KvError::Datatype(DtError::WrongType {
                op: update.op.datatype(),
                datatype: stored.root.datatype(),
            }))?;
        let mut next = self.next_version(&stored.object, content, update.datatype, policy)?;
        self.figures.updated(update.datatype, start);
        let sent = DtDelta {
            before: stored.object.vv.clone(),
            object: codec::encode(&next).into(),
            delta: delta.encode().into(),
        };
        let mut root = stored.root;
        let written = root.write_back(partial, &touched)?;
        next.siblings[0].content.value = root.encode();
        let record = segments::encode_root_record(&next);
        let entries = Entries::between(Some(&stored.object), &next, NO_TTL);
        let (durability, _) =
            self.write_parts(key, &written.puts, &record, entries, written.dead, records)?;
        Ok(Written {
            encoded: Bytes::new(),
            delta: Some(Box::new(sent)),
            siblings: 1,
            durability,
            logged_at: None,
        })
    }

    /// Takes in an operation another vnode coordinated
    /// ([`super::msg::PutKind::DtDelta`]) if this vnode holds exactly the
    /// version it was applied to, else answers [`Signal::Behind`] having
    /// changed nothing. `stored` is what the key holds. Caller
    /// holds the key's lock.
    pub(super) fn put_delta(
        &self,
        key: &StorageKey,
        stored: Stored,
        sent: DtDelta,
        records: Records,
    ) -> Result<Written, KvError> {
        let delta = Delta::decode(&sent.delta)?;
        let mut next = codec::decode(&sent.object)?;
        if next.siblings.len() != 1 {
            return Err(KvError::Signal(Signal::Behind));
        }
        // A replica already past the new version (it took the whole object
        // of a later operation) has the operation: nothing to write.
        if stored.version().is_some_and(|vv| vv.descends(&next.vv)) {
            return Ok(Written {
                encoded: Bytes::new(),
                delta: None,
                siblings: 1,
                durability: self.durability_of_stored(&key.bucket),
                logged_at: None,
            });
        }
        let Stored { raw, root } = stored;
        let durability = match root {
            Some(stored) if stored.object.vv == sent.before && self.may_segment(key) => {
                let touched = stored
                    .root
                    .touched_by_delta(&delta)
                    .map_err(|_| KvError::Signal(Signal::Behind))?;
                let loaded =
                    segments::read_segments(&*self.stores.backend, key, &stored.root, &touched)?;
                let mut partial = stored.root.partial(loaded)?;
                let start = Instant::now();
                partial
                    .join_delta(&delta)
                    .map_err(|_| KvError::Signal(Signal::Behind))?;
                self.figures.merged(Some(delta.datatype()), start);
                let mut root = stored.root;
                let written = root.write_back(partial, &touched)?;
                next.siblings[0].content.value = root.encode();
                let record = segments::encode_root_record(&next);
                let entries = Entries::between(Some(&stored.object), &next, NO_TTL);
                self.write_parts(key, &written.puts, &record, entries, written.dead, records)?
                    .0
            }
            None => self.join_whole(key, raw, &sent.before, &delta, next, records)?,
            Some(_) => return Err(KvError::Signal(Signal::Behind)),
        };
        Ok(Written {
            encoded: Bytes::new(),
            delta: None,
            siblings: 1,
            durability,
            logged_at: None,
        })
    }

    /// [`Vnode::put_delta`] over a key stored whole: its one content's
    /// state decoded (or taken from the decoded states), the delta joined,
    /// the result written in segments where allowed.
    fn join_whole(
        &self,
        key: &StorageKey,
        raw: Option<Bytes>,
        before: &eddy_object::VersionVector,
        delta: &Delta,
        mut next: RiakObject,
        records: Records,
    ) -> Result<Durability, KvError> {
        let Some(raw) = raw else {
            return Err(KvError::Signal(Signal::Behind));
        };
        let current = codec::decode(&raw)?;
        if current.vv != *before || current.siblings.len() != 1 {
            return Err(KvError::Signal(Signal::Behind));
        }
        let datatype = delta.datatype();
        let Some(mut state) = self.stored_state(key, Some(&raw), Some(&current), datatype)? else {
            return Err(KvError::Signal(Signal::Behind));
        };
        let start = Instant::now();
        state
            .join_delta(delta)
            .map_err(|_| KvError::Signal(Signal::Behind))?;
        self.figures.merged(Some(datatype), start);
        let entries = Entries::between(Some(&current), &next, NO_TTL);
        if self.may_segment(key) && segments::worth_segmenting(&next, &state, false) {
            return Ok(self
                .write_segmented(key, &next, state, entries, None, records)?
                .0);
        }
        next.siblings[0].content.value = state.encode();
        let bytes = codec::encode(&next);
        let first = (Put::object(key, &bytes, entries), None);
        let (durability, _) = self.write(key, first, None, records)?;
        self.keep_state(key, &bytes, state);
        Ok(durability)
    }

    /// The version a coordinated data type write makes of `stored` (one
    /// live content of `datatype`): one content, `content` with the type's
    /// content type, superseding the stored one.
    fn next_version(
        &self,
        stored: &RiakObject,
        mut content: Content,
        datatype: DataType,
        policy: WritePolicy,
    ) -> Result<RiakObject, KvError> {
        content.meta.content_type = Some(datatype.content_type().as_bytes().to_vec());
        let seen = stored.vv.clone();
        let none = Conditions::default();
        let next = apply::coordinate(Some(stored), &seen, content, &none, policy, self.actor)?;
        match next.siblings.len() {
            1 => Ok(next),
            n => Err(KvError::TooManySiblings { count: n, max: 1 }),
        }
    }

    /// Writes `next`, whose one content holds `state` (a set or a map), as
    /// a root and segments, replacing the segments of `old_root` if the key
    /// had one. Caller holds the key's lock.
    pub(super) fn write_segmented(
        &self,
        key: &StorageKey,
        next: &RiakObject,
        state: State,
        entries: Entries,
        old_root: Option<&Root>,
        records: Records,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let datatype = state.datatype();
        let first_id = old_root.map_or(0, Root::next_id);
        let Ok((root, segments)) = state.into_segments(first_id) else {
            return Err(KvError::Datatype(DtError::WrongType {
                op: datatype,
                datatype: DataType::Set,
            }));
        };
        let object = RiakObject {
            vv: next.vv.clone(),
            siblings: next
                .siblings
                .iter()
                .map(|s| Sibling {
                    dot: s.dot,
                    content: Content {
                        value: root.encode(),
                        meta: s.content.meta.clone(),
                    },
                })
                .collect(),
        };
        let record = segments::encode_root_record(&object);
        let dead = old_root.map(Root::ids);
        let (durability, _) = self.write_parts(
            key,
            &segments,
            &record,
            entries,
            dead.unwrap_or_default(),
            records,
        )?;
        Ok((durability, None))
    }

    /// Writes a segmented value's records in their order: `segments`,
    /// then the root `record` with `entries`, then the removal of `dead`.
    fn write_parts(
        &self,
        key: &StorageKey,
        segments: &[(u64, Vec<u8>)],
        record: &[u8],
        entries: Entries,
        dead: Vec<u64>,
        records: Records,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let bucket = segments::segments_bucket(&key.bucket);
        let mut puts: Vec<Put<'_>> = segments
            .iter()
            .map(|(id, bytes)| Put {
                bucket: Cow::Owned(bucket.clone()),
                key: Cow::Owned(segments::segment_key(&key.key, *id)),
                value: Some(bytes),
                entries: Entries::Untouched,
                deleted: false,
            })
            .collect();
        puts.push(Put::object(key, record, entries));
        puts.extend(dead_segments(key, dead));
        self.write_all(key, &puts, None, records)
    }
}

/// The removals of the segments `ids` of the value at `key`.
pub(super) fn dead_segments<'a>(
    key: &StorageKey,
    ids: impl IntoIterator<Item = u64>,
) -> Vec<Put<'a>> {
    let bucket = segments::segments_bucket(&key.bucket);
    ids.into_iter()
        .map(|id| Put {
            bucket: Cow::Owned(bucket.clone()),
            key: Cow::Owned(segments::segment_key(&key.key, id)),
            value: None,
            entries: Entries::Untouched,
            deleted: true,
        })
        .collect()
}
