//! The vnode's writes of segmented sets ([`super::segments`]): a
//! coordinated set operation applied to the root and the segments its
//! members fall in (never the whole set), and a whole set written as a
//! root and segments.
//!
//! Invariant: the records of one write go to the backend in one batch and
//! to the commit log in this order — the new segments, the root record,
//! the removal of the segments it no longer names — so a crash between any
//! two leaves the old root over intact old segments, or the new one over
//! its new ones.

use std::borrow::Cow;

use bytes::Bytes;
use eddy_dt::{DataType, DtError, OrswotDelta, Precondition, SetRoot, State};
use eddy_object::{Content, RiakObject, Sibling, codec};
use eddy_storage::IndexSpec;

use super::msg::{Conditions, DtUpdate, SetDelta, StorageKey, WritePolicy};
use super::segments::{self, StoredRoot};
use super::{Durability, Put, Records, Vnode, Written, apply};
use crate::commitlog::Lsn;
use crate::error::KvError;

impl Vnode {
    /// Whether a coordinated write over the segmented value `stored` runs
    /// on its root and the segments its members fall in: a set operation,
    /// the set big enough to stay segmented, in a bucket that allows it.
    pub(super) fn partial_applies(
        &self,
        key: &StorageKey,
        stored: &StoredRoot,
        coordinate: &super::msg::Coordinate,
    ) -> bool {
        let set_op = matches!(
            coordinate.update.as_deref(),
            Some(DtUpdate {
                op: eddy_dt::Op::Set(_),
                datatype: DataType::Set,
                ..
            })
        );
        set_op && stored.root.len() >= segments::SEGMENTED_KEEP && self.may_segment(key)
    }

    /// Applies a coordinated set operation ([`Vnode::partial_applies`]) as
    /// this vnode's actor to the segmented value `stored`: reads the
    /// segments its members fall in, applies it there, writes those
    /// segments and the root. Caller holds the key's lock.
    pub(super) fn put_partial(
        &self,
        key: &StorageKey,
        stored: StoredRoot,
        coordinate: super::msg::Coordinate,
        policy: WritePolicy,
        records: Records,
    ) -> Result<Written, KvError> {
        let super::msg::Coordinate {
            content, update, ..
        } = coordinate;
        let Some(eddy_dt::Op::Set(op)) = update.as_deref().map(|u| &u.op) else {
            return Err(KvError::Datatype(DtError::WrongType {
                op: DataType::Set,
                datatype: DataType::Set,
            }));
        };
        let context = update.as_deref().and_then(|u| u.context.as_ref());
        let members = op.adds.iter().chain(&op.removes).map(Vec::as_slice);
        let touched = stored.root.touched(members);
        let loaded = segments::read_segments(&*self.backend, key, &stored.root, &touched)?;
        let mut set = stored.root.partial(loaded);
        let adds: Vec<&[u8]> = op.adds.iter().map(Vec::as_slice).collect();
        let removes: Vec<&[u8]> = op.removes.iter().map(Vec::as_slice).collect();
        let delta = set
            .apply_op(self.actor, &adds, &removes, context)
            .map_err(|Precondition::NotPresent(m)| DtError::NotPresent(m))?;
        let mut next = self.next_version(&stored.object, content, policy)?;
        let sent = SetDelta {
            before: stored.object.vv.clone(),
            object: codec::encode(&next).into(),
            delta: delta.encode().into(),
        };
        let mut root = stored.root;
        let written = root.write_back(set, &touched);
        next.siblings[0].content.value = root.encode();
        let record = segments::encode_root_record(&next);
        let specs = apply::index_specs(Some(&stored.object), &next);
        let (durability, _) =
            self.write_parts(key, &written.puts, &record, specs, written.dead, records)?;
        Ok(Written {
            encoded: Bytes::new(),
            delta: Some(Box::new(sent)),
            siblings: 1,
            durability,
            logged_at: None,
        })
    }

    /// Takes in a set operation another vnode coordinated
    /// ([`super::msg::PutKind::SetDelta`]) if this vnode holds exactly the version it
    /// was applied to, else answers [`KvError::Behind`] having changed
    /// nothing. `raw` and `root` are what the key holds. Caller holds the
    /// key's lock.
    pub(super) fn put_delta(
        &self,
        key: &StorageKey,
        raw: Option<Bytes>,
        root: Option<StoredRoot>,
        sent: SetDelta,
        policy: WritePolicy,
        records: Records,
    ) -> Result<Written, KvError> {
        let _ = policy;
        let delta = OrswotDelta::decode(&sent.delta)?;
        let mut next = codec::decode(&sent.object)?;
        if next.siblings.len() != 1 {
            return Err(KvError::Behind);
        }
        // A replica already past the new version (it took the whole object
        // of a later operation) has the operation: nothing to write.
        if stored_version(raw.as_deref(), root.as_ref()).is_some_and(|vv| vv.descends(&next.vv)) {
            return Ok(Written {
                encoded: Bytes::new(),
                delta: None,
                siblings: 1,
                durability: self.durability_of_stored(&key.bucket),
                logged_at: None,
            });
        }
        let durability = match root {
            Some(stored) if stored.object.vv == sent.before && self.may_segment(key) => {
                let touched = stored.root.touched_by_delta(&delta);
                let loaded = segments::read_segments(&*self.backend, key, &stored.root, &touched)?;
                let mut set = stored.root.partial(loaded);
                set.join_delta(&delta).map_err(|_| KvError::Behind)?;
                let mut root = stored.root;
                let written = root.write_back(set, &touched);
                next.siblings[0].content.value = root.encode();
                let record = segments::encode_root_record(&next);
                let specs = apply::index_specs(Some(&stored.object), &next);
                self.write_parts(key, &written.puts, &record, specs, written.dead, records)?
                    .0
            }
            None => self.join_whole(key, raw, &sent.before, &delta, next, records)?,
            Some(_) => return Err(KvError::Behind),
        };
        Ok(Written {
            encoded: Bytes::new(),
            delta: None,
            siblings: 1,
            durability,
            logged_at: None,
        })
    }

    /// [`Vnode::put_delta`] over a key stored whole: its one set content
    /// decoded (or taken from the decoded states), the delta joined, the
    /// result written in segments where allowed.
    fn join_whole(
        &self,
        key: &StorageKey,
        raw: Option<Bytes>,
        before: &eddy_object::VersionVector,
        delta: &OrswotDelta,
        mut next: RiakObject,
        records: Records,
    ) -> Result<Durability, KvError> {
        let Some(raw) = raw else {
            return Err(KvError::Behind);
        };
        let current = codec::decode(&raw)?;
        if current.vv != *before || current.siblings.len() != 1 {
            return Err(KvError::Behind);
        }
        let update = DtUpdate {
            op: eddy_dt::Op::Set(eddy_dt::SetOp::default()),
            datatype: DataType::Set,
            hll_precision: 0,
            context: None,
        };
        let Some(State::Set(mut set)) =
            self.stored_state(key, Some(&raw), Some(&current), &update)?
        else {
            return Err(KvError::Behind);
        };
        set.join_delta(delta).map_err(|_| KvError::Behind)?;
        let specs = apply::index_specs(Some(&current), &next);
        let state = State::Set(set);
        if self.may_segment(key) && segments::worth_segmenting(&next, &state, false) {
            return Ok(self
                .write_segmented(key, &next, state, specs, None, records)?
                .0);
        }
        next.siblings[0].content.value = state.encode();
        let bytes = codec::encode(&next);
        let first = (Put::object(key, &bytes, specs), None);
        let (durability, _) = self.write(key, first, None, records)?;
        self.keep_state(key, &bytes, state);
        Ok(durability)
    }

    /// The version a coordinated data type write makes of `stored` (one
    /// live set content): one content, `content` with a set's content
    /// type, superseding the stored one.
    fn next_version(
        &self,
        stored: &RiakObject,
        mut content: Content,
        policy: WritePolicy,
    ) -> Result<RiakObject, KvError> {
        content.meta.content_type = Some(DataType::Set.content_type().as_bytes().to_vec());
        let seen = stored.vv.clone();
        let none = Conditions::default();
        let next = apply::coordinate(Some(stored), &seen, content, &none, policy, self.actor)?;
        match next.siblings.len() {
            1 => Ok(next),
            n => Err(KvError::TooManySiblings { count: n, max: 1 }),
        }
    }

    /// Writes `next`, whose one content holds `state` (a set), as a root
    /// and segments, replacing the segments of `old_root` if the key had
    /// one. Caller holds the key's lock.
    pub(super) fn write_segmented(
        &self,
        key: &StorageKey,
        next: &RiakObject,
        state: State,
        specs: Vec<IndexSpec>,
        old_root: Option<&SetRoot>,
        records: Records,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let State::Set(set) = state else {
            return Err(KvError::Datatype(DtError::WrongType {
                op: state.datatype(),
                datatype: DataType::Set,
            }));
        };
        let (root, segments) = set.into_segments(old_root.map_or(0, SetRoot::next_id));
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
        let dead = old_root.map(|r| r.segments().iter().map(|s| s.id).collect());
        let (durability, _) = self.write_parts(
            key,
            &segments,
            &record,
            specs,
            dead.unwrap_or_default(),
            records,
        )?;
        Ok((durability, None))
    }

    /// Writes a segmented value's records in their order: `segments`,
    /// then the root `record` with `specs`, then the removal of `dead`.
    fn write_parts(
        &self,
        key: &StorageKey,
        segments: &[(u64, Vec<u8>)],
        record: &[u8],
        specs: Vec<IndexSpec>,
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
                specs: Vec::new(),
            })
            .collect();
        puts.push(Put::object(key, record, specs));
        puts.extend(dead_segments(key, dead));
        self.write_all(key, &puts, None, records)
    }
}

/// The version vector of what a key holds: its root's object's, or its
/// stored object's.
fn stored_version(
    raw: Option<&[u8]>,
    root: Option<&StoredRoot>,
) -> Option<eddy_object::VersionVector> {
    match root {
        Some(r) => Some(r.object.vv.clone()),
        None => segments::version_of(raw?),
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
            specs: Vec::new(),
        })
        .collect()
}
