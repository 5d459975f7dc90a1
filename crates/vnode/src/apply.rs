//! What requests do to stored objects, as pure functions: the coordinated
//! update and the replica merge (the decoding read is
//! `super::segments::read_object`; what a write does to index entries is
//! `super::entries`).
//!
//! Invariant: a corrupt stored object is never returned or merged (the
//! request fails instead).

use eddy_dt::State;
use eddy_object::{Actor, Content, RiakObject, VersionVector, merge};

use super::msg::{Conditions, DtUpdate, WritePolicy};
use eddy_model::error::KvError;

/// The coordinating vnode's update: check conditions, apply the write as
/// `actor`, resolve per the bucket's policy, enforce the sibling limit.
pub fn coordinate(
    current: Option<&RiakObject>,
    context: &VersionVector,
    content: Content,
    conditions: &Conditions,
    policy: WritePolicy,
    actor: Actor,
) -> Result<RiakObject, KvError> {
    let live = current.filter(|o| !o.is_deleted());
    if conditions.if_none_match && live.is_some() {
        return Err(KvError::MatchFound);
    }
    if let Some(expected) = &conditions.if_not_modified
        && live.map(|o| &o.vv) != Some(expected)
    {
        return Err(KvError::Modified);
    }
    let mut obj = current.cloned().unwrap_or_default();
    // A write supersedes tombstones it did not see: writing after a delete
    // gives the new value, not a sibling of the tombstone.
    obj.siblings.retain(|s| !s.content.meta.deleted);
    let context = match policy.last_write_wins {
        true => obj.vv.merge(context),
        false => context.clone(),
    };
    merge::update(&mut obj, &context, actor, content);
    if !policy.allow_mult {
        merge::resolve_newest(&mut obj);
    }
    if obj.siblings.len() > policy.max_siblings {
        let count = obj.siblings.len();
        return Err(KvError::TooManySiblings {
            count,
            max: policy.max_siblings,
        });
    }
    Ok(obj)
}

/// The coordinating vnode's data type update: `update` applied as
/// `actor` over `stored`, the merged state of `current`'s siblings, the
/// result written over every sibling it read (design note 020). Returns
/// the new object and its state.
pub fn coordinate_datatype(
    current: Option<&RiakObject>,
    stored: Option<State>,
    update: &DtUpdate,
    mut content: Content,
    policy: WritePolicy,
    actor: Actor,
) -> Result<(RiakObject, State), KvError> {
    let now_us = content.meta.last_modified_us;
    let state = crate::datatype::apply_update(stored, update, actor, now_us)?;
    content.value = state.encode();
    content.meta.content_type = Some(update.datatype.content_type().as_bytes().to_vec());
    let seen = current.map(|o| o.vv.clone()).unwrap_or_default();
    let object = coordinate(
        current,
        &seen,
        content,
        &Conditions::default(),
        policy,
        actor,
    )?;
    Ok((object, state))
}

/// A replica's merge of the coordinator's object into its own copy.
pub fn replicate(
    current: Option<&RiakObject>,
    incoming: RiakObject,
    policy: WritePolicy,
) -> Replicated {
    let Some(current) = current else {
        return Replicated {
            object: incoming,
            is_incoming: true,
        };
    };
    let mut merged = merge::merge(current, &incoming);
    if !policy.allow_mult || policy.last_write_wins {
        merge::resolve_newest(&mut merged);
    }
    Replicated {
        is_incoming: merged == incoming,
        object: merged,
    }
}

/// What a replica stores after merging an incoming object.
pub struct Replicated {
    pub object: RiakObject,
    /// The result is the incoming object itself (the usual case: it
    /// descends the stored one), so the sender's encoding of it holds.
    pub is_incoming: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MULT: WritePolicy = WritePolicy {
        allow_mult: true,
        last_write_wins: false,
        max_siblings: 3,
        write_once: false,
        ttl_secs: 0,
    };

    fn content(v: &str, t: u64) -> Content {
        let mut c = Content::new(v.as_bytes().to_vec());
        c.meta.last_modified_us = t;
        c
    }

    #[test]
    fn conditions_are_checked_against_the_stored_object() {
        let none = Conditions::default();
        let obj = coordinate(
            None,
            &VersionVector::new(),
            content("a", 1),
            &none,
            MULT,
            Actor(1),
        )
        .unwrap();
        let inm = Conditions {
            if_none_match: true,
            ..Conditions::default()
        };
        let err = coordinate(
            Some(&obj),
            &VersionVector::new(),
            content("b", 2),
            &inm,
            MULT,
            Actor(1),
        );
        assert!(matches!(err, Err(KvError::MatchFound)));
        let stale = Conditions {
            if_not_modified: Some(VersionVector::new()),
            ..Conditions::default()
        };
        let err = coordinate(
            Some(&obj),
            &VersionVector::new(),
            content("b", 2),
            &stale,
            MULT,
            Actor(1),
        );
        assert!(matches!(err, Err(KvError::Modified)));
        let fresh = Conditions {
            if_not_modified: Some(obj.vv.clone()),
            ..Conditions::default()
        };
        assert!(coordinate(Some(&obj), &obj.vv, content("b", 2), &fresh, MULT, Actor(1)).is_ok());
    }

    #[test]
    fn sibling_limit_and_tombstone_supersession() {
        let none = Conditions::default();
        let blind = VersionVector::new();
        let mut obj = coordinate(None, &blind, content("a", 1), &none, MULT, Actor(1)).unwrap();
        for i in 0..2 {
            obj = coordinate(
                Some(&obj),
                &blind,
                content("x", 2 + i),
                &none,
                MULT,
                Actor(1),
            )
            .unwrap();
        }
        assert_eq!(obj.siblings.len(), 3);
        let err = coordinate(Some(&obj), &blind, content("y", 9), &none, MULT, Actor(1));
        assert!(matches!(
            err,
            Err(KvError::TooManySiblings { count: 4, max: 3 })
        ));
        let tomb = coordinate(
            Some(&obj),
            &obj.vv,
            Content::tombstone(10),
            &none,
            MULT,
            Actor(1),
        )
        .unwrap();
        assert!(tomb.is_deleted());
        let after =
            coordinate(Some(&tomb), &blind, content("z", 11), &none, MULT, Actor(1)).unwrap();
        assert_eq!(after.siblings.len(), 1);
        assert_eq!(after.siblings[0].content.value, b"z");
    }
}
