//! Riak's map behaviours, one test each (design note 019 §3 and the Python
//! client's integration tests).

use eddy_object::{Actor, VersionVector};

use super::Map;
use crate::codec::{Reader, Writer};
use crate::op::{
    DtError, Field, FieldOp, FieldType, FieldValue, FlagOp, MAP_DEPTH_MAX, MapOp, MapUpdate, SetOp,
};

const A: Actor = Actor(1);
const B: Actor = Actor(2);

fn up(name: &str, op: FieldOp) -> MapOp {
    MapOp {
        removes: vec![],
        updates: vec![MapUpdate {
            field: Field::new(name, op.kind()),
            op,
        }],
    }
}

fn rm(name: &str, kind: FieldType) -> MapOp {
    MapOp {
        removes: vec![Field::new(name, kind)],
        updates: vec![],
    }
}

fn both(remove: MapOp, update: MapOp) -> MapOp {
    MapOp {
        removes: remove.removes,
        updates: update.updates,
    }
}

fn add(members: &[&str]) -> FieldOp {
    FieldOp::Set(SetOp {
        adds: members.iter().map(|m| m.as_bytes().to_vec()).collect(),
        removes: vec![],
    })
}

fn remove(members: &[&str]) -> FieldOp {
    FieldOp::Set(SetOp {
        adds: vec![],
        removes: members.iter().map(|m| m.as_bytes().to_vec()).collect(),
    })
}

fn get(map: &Map, name: &str, kind: FieldType) -> Option<FieldValue> {
    map.value()
        .into_iter()
        .find(|(f, _)| *f == Field::new(name, kind))
        .map(|(_, v)| v)
}

fn set_of(members: &[&str]) -> Option<FieldValue> {
    Some(FieldValue::Set(
        members.iter().map(|m| m.as_bytes().to_vec()).collect(),
    ))
}

fn apply(map: &mut Map, actor: Actor, op: &MapOp, with_context: bool) -> Result<(), DtError> {
    let context = map.clock().clone();
    map.apply(actor, op, with_context.then_some(&context), 10)
}

#[test]
fn removing_a_counter_field_and_incrementing_it_in_one_op_reads_the_increment() {
    let mut m = Map::new();
    apply(&mut m, A, &up("c", FieldOp::Counter(5)), false).unwrap();
    let op = both(rm("c", FieldType::Counter), up("c", FieldOp::Counter(2)));
    apply(&mut m, A, &op, true).unwrap();
    assert_eq!(
        get(&m, "c", FieldType::Counter),
        Some(FieldValue::Counter(2))
    );
}

#[test]
fn removing_a_set_field_and_adding_to_it_in_one_op_keeps_only_the_add() {
    let mut m = Map::new();
    apply(&mut m, A, &up("s", add(&["X", "Y"])), false).unwrap();
    let op = both(rm("s", FieldType::Set), up("s", add(&["Z"])));
    apply(&mut m, A, &op, true).unwrap();
    assert_eq!(get(&m, "s", FieldType::Set), set_of(&["Z"]));
}

#[test]
fn removing_a_nested_map_and_updating_it_in_one_op_keeps_only_the_update() {
    let mut m = Map::new();
    apply(
        &mut m,
        A,
        &up("n", FieldOp::Map(up("s", add(&["X", "Y"])))),
        false,
    )
    .unwrap();
    let op = both(
        rm("n", FieldType::Map),
        up("n", FieldOp::Map(up("s", add(&["Z"])))),
    );
    apply(&mut m, A, &op, true).unwrap();
    let nested = FieldValue::Map(vec![(
        Field::new("s", FieldType::Set),
        set_of(&["Z"]).unwrap(),
    )]);
    assert_eq!(get(&m, "n", FieldType::Map), Some(nested));
}

#[test]
fn an_add_and_a_remove_of_one_member_in_one_op_keep_it() {
    let mut m = Map::new();
    apply(&mut m, A, &up("s", add(&["X"])), false).unwrap();
    let op = FieldOp::Set(SetOp {
        adds: vec![b"X".to_vec()],
        removes: vec![b"X".to_vec()],
    });
    apply(&mut m, A, &up("s", op), true).unwrap();
    assert_eq!(get(&m, "s", FieldType::Set), set_of(&["X"]));
}

#[test]
fn removes_with_a_context_of_absent_things_succeed_and_change_nothing_visible() {
    let mut m = Map::new();
    apply(&mut m, A, &up("s", add(&["X"])), false).unwrap();
    let before = m.value();
    apply(&mut m, A, &rm("nope", FieldType::Flag), true).unwrap();
    apply(&mut m, A, &up("s", remove(&["absent"])), true).unwrap();
    assert_eq!(m.value(), before);
    assert_eq!(
        m.deferred_len(),
        0,
        "the context was current: nothing deferred"
    );
}

#[test]
fn removes_without_a_context_need_what_they_remove_and_change_nothing_otherwise() {
    let mut m = Map::new();
    apply(&mut m, A, &up("s", add(&["X"])), false).unwrap();
    let before = m.clone();
    assert_eq!(
        apply(&mut m, A, &rm("c", FieldType::Counter), false),
        Err(DtError::FieldNotPresent(Field::new(
            "c",
            FieldType::Counter
        )))
    );
    let op = MapOp {
        removes: vec![],
        updates: vec![
            MapUpdate {
                field: Field::new("r", FieldType::Register),
                op: FieldOp::Register(b"v".to_vec()),
            },
            MapUpdate {
                field: Field::new("s", FieldType::Set),
                op: remove(&["X", "Q"]),
            },
        ],
    };
    assert_eq!(
        apply(&mut m, A, &op, false),
        Err(DtError::NotPresent(b"Q".to_vec()))
    );
    assert_eq!(m, before, "all or nothing, clock included");
    apply(&mut m, A, &rm("s", FieldType::Set), false).unwrap();
    assert!(m.is_empty());
}

#[test]
fn a_counter_overflow_leaves_the_map_unchanged() {
    let mut m = Map::new();
    apply(&mut m, A, &up("c", FieldOp::Counter(i64::MAX)), false).unwrap();
    apply(&mut m, A, &up("x", add(&["m"])), false).unwrap();
    let before = m.clone();
    let op = MapOp {
        removes: vec![Field::new("x", FieldType::Set)],
        updates: vec![MapUpdate {
            field: Field::new("c", FieldType::Counter),
            op: FieldOp::Counter(1),
        }],
    };
    assert_eq!(apply(&mut m, B, &op, false), Err(DtError::Overflow));
    assert_eq!(m, before);
    apply(&mut m, B, &up("c", FieldOp::Counter(i64::MIN)), false).unwrap();
    assert_eq!(
        get(&m, "c", FieldType::Counter),
        Some(FieldValue::Counter(-1))
    );
}

#[test]
fn operations_nesting_too_deep_are_refused() {
    let mut op = up("leaf", FieldOp::Flag(FlagOp::Enable));
    for _ in 1..MAP_DEPTH_MAX {
        op = up("n", FieldOp::Map(op));
    }
    let mut m = Map::new();
    apply(&mut m, A, &op, false).unwrap();
    let deeper = up("n", FieldOp::Map(op));
    let before = m.clone();
    assert_eq!(
        apply(&mut m, A, &deeper, false),
        Err(DtError::TooDeep {
            depth: MAP_DEPTH_MAX + 1
        })
    );
    assert_eq!(m, before);
}

#[test]
fn a_register_keeps_the_newest_timestamp() {
    let mut m = Map::new();
    let assign = |v: &str| up("r", FieldOp::Register(v.as_bytes().to_vec()));
    assert_eq!(m.value(), vec![]);
    m.apply(A, &assign("new"), None, 200).unwrap();
    m.apply(A, &assign("old"), None, 100).unwrap();
    let read = |m: &Map| get(m, "r", FieldType::Register);
    assert_eq!(read(&m), Some(FieldValue::Register(b"new".to_vec())));
    let mut other = Map::new();
    other.apply(B, &assign("newer"), None, 300).unwrap();
    m.merge(&other);
    assert_eq!(read(&m), Some(FieldValue::Register(b"newer".to_vec())));
    let mut fresh = Map::new();
    fresh
        .apply(A, &up("r", FieldOp::Map(MapOp::default())), None, 1)
        .unwrap();
    let register = Field::new("r", FieldType::Register);
    let op = MapOp {
        removes: vec![],
        updates: vec![MapUpdate {
            field: Field::new("n", FieldType::Map),
            op: FieldOp::Map(MapOp {
                removes: vec![],
                updates: vec![MapUpdate {
                    field: register.clone(),
                    op: FieldOp::Register(vec![]),
                }],
            }),
        }],
    };
    fresh.apply(A, &op, None, 5).unwrap();
    let inner = get(&fresh, "n", FieldType::Map);
    assert_eq!(
        inner,
        Some(FieldValue::Map(vec![(
            register,
            FieldValue::Register(vec![])
        )]))
    );
}

#[test]
fn a_flag_enable_wins_over_a_concurrent_disable() {
    let mut a = Map::new();
    apply(&mut a, A, &up("f", FieldOp::Flag(FlagOp::Enable)), false).unwrap();
    let mut b = a.clone();
    apply(&mut a, A, &up("f", FieldOp::Flag(FlagOp::Disable)), true).unwrap();
    assert_eq!(get(&a, "f", FieldType::Flag), Some(FieldValue::Flag(false)));
    apply(&mut b, B, &up("f", FieldOp::Flag(FlagOp::Enable)), false).unwrap();
    a.merge(&b);
    assert_eq!(get(&a, "f", FieldType::Flag), Some(FieldValue::Flag(true)));
    b.merge(&a);
    assert_eq!(a, b);
}

#[test]
fn a_deferred_field_remove_runs_once_the_clock_catches_up() {
    let mut a = Map::new();
    apply(&mut a, A, &up("s", add(&["X"])), false).unwrap();
    let seen = a.clock().clone();
    let mut stale = Map::new();
    stale
        .apply(B, &rm("s", FieldType::Set), Some(&seen), 10)
        .unwrap();
    assert_eq!(stale.deferred_len(), 1);
    stale.merge(&a);
    assert_eq!(get(&stale, "s", FieldType::Set), None, "removed on arrival");
    assert_eq!(
        stale.deferred_len(),
        0,
        "forgotten once the clock descends it"
    );
    apply(&mut a, A, &up("s", add(&["Y"])), false).unwrap();
    stale.merge(&a);
    assert_eq!(
        get(&stale, "s", FieldType::Set),
        set_of(&["Y"]),
        "a later add survives"
    );
}

#[test]
fn a_concurrent_update_keeps_a_removed_field_with_only_its_own_contents() {
    let mut a = Map::new();
    apply(&mut a, A, &up("s", add(&["X"])), false).unwrap();
    let mut b = a.clone();
    apply(&mut a, A, &rm("s", FieldType::Set), true).unwrap();
    apply(&mut b, B, &up("s", add(&["Y"])), false).unwrap();
    a.merge(&b);
    assert_eq!(get(&a, "s", FieldType::Set), set_of(&["Y"]));
}

#[test]
fn fields_of_one_name_and_different_types_are_different_fields() {
    let mut m = Map::new();
    apply(&mut m, A, &up("x", FieldOp::Counter(3)), false).unwrap();
    apply(&mut m, A, &up("x", add(&["a"])), false).unwrap();
    apply(&mut m, A, &up("x", FieldOp::Flag(FlagOp::Enable)), false).unwrap();
    let kinds: Vec<FieldType> = m.value().into_iter().map(|(f, _)| f.kind).collect();
    assert_eq!(kinds, [FieldType::Counter, FieldType::Flag, FieldType::Set]);
    assert_eq!(m.len(), 3);
    assert_eq!(
        m.clock(),
        &VersionVector::from_entries([(A, 3)]),
        "one dot per op"
    );
}

#[test]
fn a_concurrently_incremented_counter_field_keeps_the_unseen_entry() {
    let mut a = Map::new();
    apply(&mut a, A, &up("c", FieldOp::Counter(5)), false).unwrap();
    let mut b = a.clone();
    apply(&mut a, A, &rm("c", FieldType::Counter), true).unwrap();
    apply(&mut b, B, &up("c", FieldOp::Counter(1)), false).unwrap();
    a.merge(&b);
    assert_eq!(
        get(&a, "c", FieldType::Counter),
        Some(FieldValue::Counter(1))
    );
}

#[test]
fn encoding_round_trips_and_refuses_trailing_bytes_inside_a_field() {
    let mut m = Map::new();
    apply(&mut m, A, &up("c", FieldOp::Counter(-4)), false).unwrap();
    apply(
        &mut m,
        B,
        &up("n", FieldOp::Map(up("s", add(&["q"])))),
        false,
    )
    .unwrap();
    let mut w = Writer::new();
    m.encode(&mut w);
    let mut r = Reader::new(&w.buf);
    assert_eq!(Map::decode(&mut r).unwrap(), m);
    r.finish().unwrap();
    // Grow the first field's body by one byte (its length is at offset
    // table(1+2*8) + clock(1+2*2) + count(1) + name(2) + tag(1)).
    let at = 17 + 5 + 1 + 2 + 1;
    let mut bad = w.buf.clone();
    bad[at] += 1;
    bad.insert(at + 1 + usize::from(w.buf[at]), 0);
    assert!(Map::decode(&mut Reader::new(&bad)).is_err());
}
