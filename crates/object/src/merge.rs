//! The pure rules that change objects: a coordinated update, the merge of two
//! replicas, and the resolution of siblings by time.
//!
//! These are Riak's dotted-version-vector rules: a sibling survives a write
//! unless the write's context has seen its dot, and survives a merge unless
//! the other replica has seen its dot and dropped it.

use crate::object::{Content, RiakObject, Sibling};
use crate::vclock::{Actor, Dot, VersionVector};

/// Applies a client write coordinated by `actor`.
///
/// `context` is the version vector the client read (empty for a blind
/// write). Siblings the context has seen are replaced by `content`; others
/// stay as siblings. Returns the new sibling's dot.
pub fn update(
    obj: &mut RiakObject,
    context: &VersionVector,
    actor: Actor,
    content: Content,
) -> Dot {
    let counter = obj.vv.get(actor).max(context.get(actor)) + 1;
    let dot = Dot { actor, counter };
    obj.siblings.retain(|s| !context.covers(s.dot));
    obj.siblings.push(Sibling { dot, content });
    obj.siblings.sort_by_key(|s| s.dot);
    obj.vv = obj.vv.merge(context);
    obj.vv.raise(actor, counter);
    dot
}

/// Merges two replicas of one object (read repair, handoff, replica writes).
///
/// A sibling is kept when both sides have it, or when the other side has not
/// seen its dot. Commutative, associative and idempotent.
pub fn merge(a: &RiakObject, b: &RiakObject) -> RiakObject {
    let keep = |mine: &[Sibling], theirs: &RiakObject| -> Vec<Sibling> {
        mine.iter()
            .filter(|s| !theirs.vv.covers(s.dot) || theirs.siblings.iter().any(|t| t.dot == s.dot))
            .cloned()
            .collect()
    };
    let mut siblings = keep(&a.siblings, b);
    for s in keep(&b.siblings, a) {
        if !siblings.iter().any(|t| t.dot == s.dot) {
            siblings.push(s);
        }
    }
    siblings.sort_by_key(|s| s.dot);
    RiakObject {
        vv: a.vv.merge(&b.vv),
        siblings,
    }
}

/// Keeps only the newest sibling (by last-modified time, then vtag, then
/// dot, so every replica picks the same one): Riak's resolution when
/// `allow_mult` is false, and `last_write_wins`.
pub fn resolve_newest(obj: &mut RiakObject) {
    let newest = obj
        .siblings
        .iter()
        .max_by(|x, y| {
            let key = |s: &Sibling| {
                (
                    s.content.meta.last_modified_us,
                    s.content.meta.vtag.clone(),
                    s.dot,
                )
            };
            key(x).cmp(&key(y))
        })
        .cloned();
    obj.siblings = newest.into_iter().collect();
}

/// True when `a` has seen every write `b` has (so `b` is stale or equal).
pub fn descends(a: &RiakObject, b: &RiakObject) -> bool {
    a.vv.descends(&b.vv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn content(v: u8, t: u64) -> Content {
        let mut c = Content::new(vec![v]);
        c.meta.last_modified_us = t;
        c
    }

    #[test]
    fn write_with_context_replaces_what_it_saw() {
        let mut obj = RiakObject::default();
        update(&mut obj, &VersionVector::new(), Actor(1), content(1, 1));
        let seen = obj.vv.clone();
        update(&mut obj, &VersionVector::new(), Actor(2), content(2, 2));
        assert_eq!(obj.siblings.len(), 2, "blind writes are concurrent");
        update(&mut obj, &seen, Actor(1), content(3, 3));
        let values: Vec<_> = obj.contents().map(|c| c.value[0]).collect();
        assert_eq!(values, vec![3, 2], "context saw only value 1");
        let all = obj.vv.clone();
        update(&mut obj, &all, Actor(2), content(4, 4));
        assert_eq!(obj.siblings.len(), 1);
        assert_eq!(obj.siblings[0].content.value, vec![4]);
    }

    #[test]
    fn resolve_newest_picks_latest_write() {
        let mut obj = RiakObject::default();
        update(&mut obj, &VersionVector::new(), Actor(1), content(1, 50));
        update(&mut obj, &VersionVector::new(), Actor(2), content(2, 10));
        resolve_newest(&mut obj);
        assert_eq!(obj.siblings.len(), 1);
        assert_eq!(obj.siblings[0].content.value, vec![1]);
    }

    /// A history of writes at several replicas, with merges between them.
    #[derive(Clone, Debug)]
    enum Step {
        /// Replica `r` writes, with a context read from replica `from` (or blind).
        Write {
            r: usize,
            from: Option<usize>,
            v: u8,
        },
        /// Replica `r` merges in replica `from`.
        Sync { r: usize, from: usize },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..3usize, proptest::option::of(0..3usize), any::<u8>())
                .prop_map(|(r, from, v)| Step::Write { r, from, v }),
            (0..3usize, 0..3usize).prop_map(|(r, from)| Step::Sync { r, from }),
        ]
    }

    fn replicas(steps: &[Step]) -> Vec<RiakObject> {
        let mut reps = vec![RiakObject::default(); 3];
        for (t, s) in steps.iter().enumerate() {
            match *s {
                Step::Write { r, from, v } => {
                    let ctx = from.map(|f| reps[f].vv.clone()).unwrap_or_default();
                    update(&mut reps[r], &ctx, Actor(r as u64), content(v, t as u64));
                }
                Step::Sync { r, from } => reps[r] = merge(&reps[r], &reps[from]),
            }
        }
        reps
    }

    fn well_formed(o: &RiakObject) -> bool {
        let covered = o.siblings.iter().all(|s| o.vv.covers(s.dot));
        let unique = o.siblings.windows(2).all(|w| w[0].dot < w[1].dot);
        covered && unique
    }

    proptest! {
        #[test]
        fn merge_is_commutative_associative_idempotent(steps in proptest::collection::vec(step(), 0..30)) {
            let r = replicas(&steps);
            prop_assert!(r.iter().all(well_formed));
            prop_assert_eq!(merge(&r[0], &r[1]), merge(&r[1], &r[0]));
            prop_assert_eq!(merge(&merge(&r[0], &r[1]), &r[2]), merge(&r[0], &merge(&r[1], &r[2])));
            prop_assert_eq!(merge(&r[0], &r[0]), r[0].clone());
            prop_assert!(well_formed(&merge(&r[0], &r[1])));
        }

        #[test]
        fn no_acknowledged_write_is_lost_without_being_seen(steps in proptest::collection::vec(step(), 0..30)) {
            // Every write's dot either survives in the full merge, or some
            // write whose context covered it also exists in the history.
            let r = replicas(&steps);
            let all = merge(&merge(&r[0], &r[1]), &r[2]);
            prop_assert!(well_formed(&all));
            for rep in &r {
                prop_assert!(all.vv.descends(&rep.vv));
                for s in &rep.siblings {
                    let kept = all.siblings.iter().any(|t| t.dot == s.dot);
                    let superseded = all.siblings.iter().any(|t| t.dot != s.dot) && all.vv.covers(s.dot);
                    prop_assert!(kept || superseded);
                }
            }
        }

        #[test]
        fn update_with_own_context_leaves_one_sibling(steps in proptest::collection::vec(step(), 0..30), v: u8) {
            let mut r = replicas(&steps);
            let ctx = r[0].vv.clone();
            update(&mut r[0], &ctx, Actor(7), content(v, 99));
            prop_assert_eq!(r[0].siblings.len(), 1);
            prop_assert!(well_formed(&r[0]));
        }
    }
}
