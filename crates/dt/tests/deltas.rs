//! Set operations as deltas (design note 020 §6), property-tested against
//! full-state merges over random histories of three replicas: a replica
//! whose clock descends a delta's `before` reaches, by joining the delta,
//! exactly the state a full merge of the operating replica's new state
//! gives it; one that does not is refused and unchanged; joining a delta
//! twice changes nothing.

use eddy_dt::{Actor, NotReady, Orswot, OrswotDelta, VersionVector};
use proptest::prelude::*;

const REPLICAS: usize = 3;

#[derive(Clone, Debug)]
enum Step {
    /// An operation at a replica: adds, removes, and where its context
    /// comes from (`None`: no context; removes then only of present
    /// members), then which other replicas get its delta.
    Op {
        at: usize,
        adds: Vec<u8>,
        removes: Vec<u8>,
        context_from: Option<usize>,
        deliver: [bool; REPLICAS],
    },
    Merge(usize, usize),
}

fn step() -> impl Strategy<Value = Step> {
    let r = 0..REPLICAS;
    let members = prop::collection::vec(0..6u8, 0..3);
    let op = (
        r.clone(),
        members.clone(),
        members,
        prop::option::of(r.clone()),
        prop::array::uniform3(any::<bool>()),
    )
        .prop_map(|(at, adds, removes, context_from, deliver)| Step::Op {
            at,
            adds,
            removes,
            context_from,
            deliver,
        });
    prop_oneof![4 => op, 1 => (r.clone(), r).prop_map(|(i, j)| Step::Merge(i, j))]
}

fn merged(a: &Orswot, b: &Orswot) -> Orswot {
    let mut out = a.clone();
    out.merge(b);
    out
}

/// Runs the operation of a step at `sets[at]`, returning its delta.
fn operate(
    sets: &mut [Orswot],
    at: usize,
    adds: &[u8],
    removes: &[u8],
    context_from: Option<usize>,
) -> Option<OrswotDelta> {
    let adds: Vec<Vec<u8>> = adds.iter().map(|m| vec![*m]).collect();
    let context: Option<VersionVector> = context_from.map(|i| sets[i].clock().clone());
    let mut removes: Vec<Vec<u8>> = removes.iter().map(|m| vec![*m]).collect();
    if context.is_none() {
        removes.retain(|m| sets[at].contains(m) || adds.contains(m));
    }
    let adds: Vec<&[u8]> = adds.iter().map(Vec::as_slice).collect();
    let removes: Vec<&[u8]> = removes.iter().map(Vec::as_slice).collect();
    let actor = Actor(at as u64 + 1);
    Some(
        sets[at]
            .apply_op(actor, &adds, &removes, context.as_ref())
            .expect("removes without a context name present members"),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn a_ready_replica_joins_a_delta_as_it_would_merge_the_whole_state(
        steps in prop::collection::vec(step(), 1..60)
    ) {
        let mut sets = vec![Orswot::new(); REPLICAS];
        for s in steps {
            match s {
                Step::Merge(i, j) => {
                    let other = sets[j].clone();
                    sets[i].merge(&other);
                }
                Step::Op { at, adds, removes, context_from, deliver } => {
                    let Some(delta) = operate(&mut sets, at, &adds, &removes, context_from)
                    else { continue };
                    prop_assert!(!delta.minted.is_empty(), "every operation mints a dot");
                    let after = sets[at].clone();
                    for (j, &send) in deliver.iter().enumerate() {
                        if j == at || !send {
                            continue;
                        }
                        let ready = sets[j].clock().descends(&delta.before);
                        let expected = merged(&sets[j], &after);
                        let unchanged = sets[j].clone();
                        let joined = sets[j].join_delta(&delta);
                        if ready {
                            prop_assert_eq!(joined, Ok(()));
                            prop_assert_eq!(&sets[j], &expected);
                            let once = sets[j].clone();
                            prop_assert_eq!(sets[j].join_delta(&delta), Ok(()));
                            prop_assert_eq!(&sets[j], &once, "a second join changes nothing");
                        } else {
                            prop_assert_eq!(joined, Err(NotReady));
                            prop_assert_eq!(&sets[j], &unchanged);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_replica_that_missed_a_remove_is_not_ready_for_the_next_operation() {
    let mut a = Orswot::new();
    a.apply_op(Actor(1), &[b"x"], &[], None).unwrap();
    let mut b = a.clone();
    let seen = a.clock().clone();
    let remove = a.apply_op(Actor(1), &[], &[b"x"], Some(&seen)).unwrap();
    assert_eq!(
        remove.minted.len(),
        1,
        "a remove-only operation mints a dot"
    );
    let add = a.apply_op(Actor(1), &[b"y"], &[], None).unwrap();
    assert_eq!(b.join_delta(&add), Err(NotReady), "b missed the remove");
    b.join_delta(&remove).unwrap();
    b.join_delta(&add).unwrap();
    assert_eq!(b, a);
}

/// A remove deferred for a dot whose delta is still on its way runs when
/// the delta arrives, as a full merge would run it (the join used to run
/// deferred removes only when the delta brought some of its own, leaving a
/// state whose clock descends a deferred context: one its own decoder
/// refuses).
#[test]
fn a_delta_that_completes_a_deferred_remove_runs_it() {
    let (x, j) = (Actor(1), Actor(2));
    let mut coordinator = Orswot::new();
    let mut replica = Orswot::new();
    let add = coordinator.apply_op(x, &[b"m"], &[], None).unwrap();
    // A client read the coordinator and removes m at the replica before
    // the add reached it: deferred.
    let seen = coordinator.clock().clone();
    replica.apply_op(j, &[], &[b"m"], Some(&seen)).unwrap();
    assert_eq!(replica.deferred_len(), 1);
    let mut merged = replica.clone();
    merged.merge(&coordinator);
    replica.join_delta(&add).unwrap();
    assert_eq!(replica, merged);
    assert!(replica.is_empty() && replica.deferred_len() == 0);
}

mod maps {
    use eddy_dt::{
        Actor, Field, FieldOp, FieldType, FlagOp, Map, MapOp, MapUpdate, NotReady, SetOp,
        VersionVector,
    };
    use proptest::prelude::*;

    use super::REPLICAS;

    /// One field change of a map operation.
    #[derive(Clone, Debug)]
    enum Change {
        Count(i8),
        Add(u8),
        RemoveMember(u8),
        Assign(u8),
        Flag(bool),
        NestedAdd(u8),
        RemoveField(u8),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            (-3i8..4).prop_map(Change::Count),
            (0..4u8).prop_map(Change::Add),
            (0..4u8).prop_map(Change::RemoveMember),
            (0..3u8).prop_map(Change::Assign),
            any::<bool>().prop_map(Change::Flag),
            (0..4u8).prop_map(Change::NestedAdd),
            (0..3u8).prop_map(Change::RemoveField),
        ]
    }

    fn update(name: &str, op: FieldOp) -> MapUpdate {
        MapUpdate {
            field: Field::new(name, op.kind()),
            op,
        }
    }

    /// The operation for `changes`; removes (of fields or members) only
    /// with a context.
    fn map_op(changes: &[Change], with_context: bool) -> MapOp {
        let mut op = MapOp::default();
        let fields = [
            Field::new("c", FieldType::Counter),
            Field::new("s", FieldType::Set),
            Field::new("m", FieldType::Map),
        ];
        for c in changes {
            let u = match *c {
                Change::Count(n) => update("c", FieldOp::Counter(i64::from(n))),
                Change::Add(m) => update(
                    "s",
                    FieldOp::Set(SetOp {
                        adds: vec![vec![m]],
                        removes: vec![],
                    }),
                ),
                Change::RemoveMember(m) if with_context => update(
                    "s",
                    FieldOp::Set(SetOp {
                        adds: vec![],
                        removes: vec![vec![m]],
                    }),
                ),
                Change::Assign(v) => update("r", FieldOp::Register(vec![v])),
                Change::Flag(on) => update(
                    "f",
                    FieldOp::Flag(if on { FlagOp::Enable } else { FlagOp::Disable }),
                ),
                Change::NestedAdd(m) => update(
                    "m",
                    FieldOp::Map(MapOp {
                        removes: vec![],
                        updates: vec![update(
                            "s",
                            FieldOp::Set(SetOp {
                                adds: vec![vec![m]],
                                removes: vec![],
                            }),
                        )],
                    }),
                ),
                Change::RemoveField(i) if with_context => {
                    op.removes.push(fields[usize::from(i)].clone());
                    continue;
                }
                _ => continue,
            };
            op.updates.push(u);
        }
        op
    }

    #[derive(Clone, Debug)]
    enum Step {
        Op {
            at: usize,
            changes: Vec<Change>,
            context_from: Option<usize>,
            deliver: [bool; REPLICAS],
        },
        Merge(usize, usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        let r = 0..REPLICAS;
        let op = (
            r.clone(),
            prop::collection::vec(change(), 1..4),
            prop::option::of(r.clone()),
            prop::array::uniform3(any::<bool>()),
        )
            .prop_map(|(at, changes, context_from, deliver)| Step::Op {
                at,
                changes,
                context_from,
                deliver,
            });
        prop_oneof![4 => op, 1 => (r.clone(), r).prop_map(|(i, j)| Step::Merge(i, j))]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn a_ready_replica_joins_a_map_delta_as_it_would_merge_the_whole_state(
            steps in prop::collection::vec(step(), 1..50)
        ) {
            let mut maps = vec![Map::new(); REPLICAS];
            for (time, s) in steps.into_iter().enumerate() {
                match s {
                    Step::Merge(i, j) => {
                        let other = maps[j].clone();
                        maps[i].merge(&other);
                    }
                    Step::Op { at, changes, context_from, deliver } => {
                        let context: Option<VersionVector> =
                            context_from.map(|i| maps[i].clock().clone());
                        let op = map_op(&changes, context.is_some());
                        let actor = Actor(at as u64 + 1);
                        let Ok(delta) = maps[at].apply_op(actor, &op, context.as_ref(), time as u64)
                        else { continue };
                        let after = maps[at].clone();
                        for (j, &send) in deliver.iter().enumerate() {
                            if j == at || !send {
                                continue;
                            }
                            let ready = maps[j].clock().descends(delta.before());
                            let mut expected = maps[j].clone();
                            expected.merge(&after);
                            let unchanged = maps[j].clone();
                            let joined = maps[j].join_delta(&delta);
                            if ready {
                                prop_assert_eq!(joined, Ok(()));
                                prop_assert_eq!(&maps[j], &expected);
                                let once = maps[j].clone();
                                prop_assert_eq!(maps[j].join_delta(&delta), Ok(()));
                                prop_assert_eq!(&maps[j], &once);
                            } else {
                                prop_assert_eq!(joined, Err(NotReady));
                                prop_assert_eq!(&maps[j], &unchanged);
                            }
                        }
                    }
                }
            }
        }
    }
}
