//! Data type values inside stored objects (design note 020): a value is
//! an object content whose content type names its type
//! (`application/riak_set`, …) and whose bytes are the type's state
//! ([`eddy_dt::State::encode`]).
//!
//! Replicas, read repair, handoff and fallbacks move and merge these
//! objects like any other: concurrent versions stay siblings, and every
//! read and every update merges the siblings' states with the type's merge
//! ([`state_of`]), never by timestamp. The coordinating vnode applies an
//! operation to that merged state as its own actor and writes the result
//! over every sibling it read ([`apply_update`]).
//!
//! Invariants: a sibling's state that does not decode fails the request,
//! it is never skipped (its increments would be lost); tombstones and
//! contents of other content types hold no state.

use eddy_dt::{DataType, State};
use eddy_object::{Actor, RiakObject};

use crate::msg::DtUpdate;
use eddy_model::error::KvError;
use eddy_model::request::BucketRef;

/// The merged state of `obj`'s live siblings of `datatype`; `None` when
/// none holds one (a missing key, a tombstone).
pub fn state_of(obj: &RiakObject, datatype: DataType) -> Result<Option<State>, KvError> {
    let mut merged: Option<State> = None;
    for content in obj.contents().filter(|c| !c.meta.deleted) {
        let ct = content.meta.content_type.as_deref().unwrap_or_default();
        if DataType::from_content_type(ct) != Some(datatype) {
            continue;
        }
        let state = State::decode(&content.value)?;
        match &mut merged {
            None => merged = Some(state),
            Some(m) => m.merge(&state)?,
        }
    }
    Ok(merged)
}

/// The data type whose value `obj` holds: the type its first live content
/// of a data type's content type names; `None` for any other object.
pub fn type_of(obj: &RiakObject) -> Option<DataType> {
    obj.contents()
        .filter(|c| !c.meta.deleted)
        .find_map(|c| DataType::from_content_type(c.meta.content_type.as_deref()?))
}

/// The new state after `update`, applied as `actor` at `now_us` over
/// `stored`, the merged state of the stored siblings ([`state_of`]; an
/// empty value of the type when none).
pub fn apply_update(
    stored: Option<State>,
    update: &DtUpdate,
    actor: Actor,
    now_us: u64,
) -> Result<State, KvError> {
    let mut state = stored.unwrap_or_else(|| State::new(update.datatype, update.hll_precision));
    state.fit_precision(update.hll_precision);
    state.apply(actor, &update.op, update.context.as_ref(), now_us)?;
    Ok(state)
}

/// What a context is bound to: the bucket type, bucket, key and data type
/// it was read from, hashed. A context sent with another key's update
/// does not decode under that key's binding.
pub fn binding(bucket: &BucketRef, key: &[u8], datatype: DataType) -> u64 {
    let mut bytes = Vec::with_capacity(16 + bucket.bucket.len() + key.len());
    for part in [
        bucket.bucket_type.as_bytes(),
        &bucket.bucket,
        key,
        datatype.name().as_bytes(),
    ] {
        bytes.extend_from_slice(&(part.len() as u32).to_be_bytes());
        bytes.extend_from_slice(part);
    }
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_dt::{Op, SetOp, Value};
    use eddy_object::{Content, Dot, Sibling, VersionVector};

    fn sibling(state: &State, actor: u64) -> Sibling {
        let mut content = Content::new(state.encode());
        content.meta.content_type = Some(state.datatype().content_type().as_bytes().to_vec());
        Sibling {
            dot: Dot {
                actor: Actor(actor),
                counter: 1,
            },
            content,
        }
    }

    fn add(member: &[u8]) -> DtUpdate {
        DtUpdate {
            op: Op::Set(SetOp {
                adds: vec![member.to_vec()],
                removes: vec![],
            }),
            datatype: DataType::Set,
            hll_precision: 14,
            context: None,
        }
    }

    #[test]
    fn concurrent_siblings_merge_by_the_type_and_the_update_sees_them_all() {
        let a = apply_update(None, &add(b"a"), Actor(1), 1).unwrap();
        let b = apply_update(None, &add(b"b"), Actor(2), 1).unwrap();
        let mut tomb = Content::tombstone(5);
        tomb.meta.content_type = None;
        let obj = RiakObject {
            vv: VersionVector::from_entries([(Actor(1), 1), (Actor(2), 1), (Actor(3), 1)]),
            siblings: vec![
                sibling(&a, 1),
                sibling(&b, 2),
                Sibling {
                    dot: Dot {
                        actor: Actor(3),
                        counter: 1,
                    },
                    content: tomb,
                },
            ],
        };
        let merged = state_of(&obj, DataType::Set).unwrap().unwrap();
        assert_eq!(
            merged.value(),
            Value::Set(vec![b"a".to_vec(), b"b".to_vec()])
        );
        let next = apply_update(
            state_of(&obj, DataType::Set).unwrap(),
            &add(b"c"),
            Actor(1),
            2,
        )
        .unwrap();
        let expected = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        assert_eq!(next.value(), Value::Set(expected));
    }

    #[test]
    fn a_corrupt_sibling_fails_the_read() {
        let a = apply_update(None, &add(b"a"), Actor(1), 1).unwrap();
        let mut s = sibling(&a, 1);
        s.content.value.truncate(3);
        let obj = RiakObject {
            vv: VersionVector::from_entries([(Actor(1), 1)]),
            siblings: vec![s],
        };
        assert!(matches!(
            state_of(&obj, DataType::Set),
            Err(KvError::DatatypeCorrupt(_))
        ));
    }

    #[test]
    fn bindings_differ_by_every_part() {
        let b = BucketRef::typed("sets", b"b".to_vec());
        let base = binding(&b, b"k", DataType::Set);
        assert_ne!(base, binding(&b, b"k2", DataType::Set));
        assert_ne!(base, binding(&b, b"k", DataType::Map));
        assert_ne!(
            base,
            binding(
                &BucketRef::typed("set", b"sb".to_vec()),
                b"k",
                DataType::Set
            )
        );
    }
}
