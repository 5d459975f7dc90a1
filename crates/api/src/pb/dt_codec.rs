//! Data type operations and values between riak_dt.proto's messages and
//! `eddy_dt`'s model, as pure functions (riak_pb's `riak_pb_dt_codec`).
//!
//! Invariants: a `DtOp` carries exactly one operation and a `MapUpdate`
//! exactly the operation its field's type takes, else the request is
//! refused with a message naming what was wrong (never a panic, never a
//! guess); a missing counter increment is +1; a map operation nested
//! deeper than [`MAP_DEPTH_MAX`] is refused while decoding, so nothing
//! recurses further than that.

use eddy_dt::{
    DataType, DtError, Field, FieldOp, FieldType, FieldValue, FlagOp, MAP_DEPTH_MAX, MapOp,
    MapUpdate, Op, SetOp, Value,
};
use eddy_wire::proto::{
    self, CounterOp, DtOp, DtUpdateResp, DtValue, MapEntry, MapField, map_update,
};

/// Why an operation message was refused (its text goes to the client).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadOp(pub String);

/// The operation a `DtOp` carries.
pub fn op_from_pb(op: DtOp) -> Result<Op, BadOp> {
    let named: Vec<&str> = [
        ("counter_op", op.counter_op.is_some()),
        ("set_op", op.set_op.is_some()),
        ("map_op", op.map_op.is_some()),
        ("hll_op", op.hll_op.is_some()),
        ("gset_op", op.gset_op.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, present)| present.then_some(name))
    .collect();
    if named.len() != 1 {
        let carried = match named.is_empty() {
            true => "none".to_string(),
            false => named.join(", "),
        };
        return Err(BadOp(format!(
            "DtOp must carry exactly one operation; it carries {carried}"
        )));
    }
    Ok(match op {
        DtOp {
            counter_op: Some(c),
            ..
        } => Op::Counter(increment(&c)),
        DtOp {
            set_op: Some(s), ..
        } => Op::Set(set_op(s)),
        DtOp {
            map_op: Some(m), ..
        } => Op::Map(map_op(m, 1)?),
        DtOp {
            hll_op: Some(h), ..
        } => Op::Hll(h.adds),
        DtOp {
            gset_op: Some(g), ..
        } => Op::GSet(g.adds),
        _ => unreachable!("exactly one operation is present"),
    })
}

fn increment(c: &CounterOp) -> i64 {
    c.increment.unwrap_or(1)
}

fn set_op(s: proto::SetOp) -> SetOp {
    SetOp {
        adds: s.adds,
        removes: s.removes,
    }
}

fn map_op(m: proto::MapOp, depth: usize) -> Result<MapOp, BadOp> {
    if depth > MAP_DEPTH_MAX {
        return Err(BadOp(DtError::TooDeep { depth }.to_string()));
    }
    let removes = m
        .removes
        .into_iter()
        .map(field_from_pb)
        .collect::<Result<_, _>>()?;
    let updates = m
        .updates
        .into_iter()
        .map(|u| map_update(u, depth))
        .collect::<Result<_, _>>()?;
    Ok(MapOp { removes, updates })
}

fn field_from_pb(f: MapField) -> Result<Field, BadOp> {
    let kind = u8::try_from(f.r#type)
        .ok()
        .and_then(FieldType::from_tag)
        .ok_or_else(|| BadOp(format!("unknown map field type {}", f.r#type)))?;
    Ok(Field::new(f.name, kind))
}

fn map_update(u: proto::MapUpdate, depth: usize) -> Result<MapUpdate, BadOp> {
    let proto::MapUpdate {
        field,
        counter_op,
        set_op: set,
        register_op,
        flag_op,
        map_op: nested,
    } = u;
    let field = field_from_pb(field)?;
    let carried = [
        counter_op.is_some(),
        set.is_some(),
        register_op.is_some(),
        flag_op.is_some(),
        nested.is_some(),
    ];
    let wrong = || {
        BadOp(format!(
            "MapUpdate of field {:?} ({}) must carry its {}_op and no other operation",
            String::from_utf8_lossy(&field.name),
            field.kind.name(),
            field.kind.name()
        ))
    };
    if carried.iter().filter(|c| **c).count() != 1 {
        return Err(wrong());
    }
    let op = match field.kind {
        FieldType::Counter => FieldOp::Counter(increment(&counter_op.ok_or_else(wrong)?)),
        FieldType::Set => FieldOp::Set(set_op(set.ok_or_else(wrong)?)),
        FieldType::Register => FieldOp::Register(register_op.ok_or_else(wrong)?),
        FieldType::Flag => {
            let f = flag_op.ok_or_else(wrong)?;
            FieldOp::Flag(match map_update::FlagOp::try_from(f) {
                Ok(map_update::FlagOp::Enable) => FlagOp::Enable,
                Ok(map_update::FlagOp::Disable) => FlagOp::Disable,
                Err(_) => return Err(BadOp(format!("unknown flag operation {f}"))),
            })
        }
        FieldType::Map => FieldOp::Map(map_op(nested.ok_or_else(wrong)?, depth + 1)?),
    };
    Ok(MapUpdate { field, op })
}

/// The `DataType` enum value of `datatype`.
pub fn datatype_to_pb(datatype: DataType) -> i32 {
    i32::from(datatype.tag())
}

/// A value as a fetch answers it.
pub fn value_to_pb(value: Value) -> DtValue {
    let mut v = DtValue::default();
    match value {
        Value::Counter(n) => v.counter_value = Some(n),
        Value::Set(members) => v.set_value = members,
        Value::Map(fields) => v.map_value = entries(fields),
        Value::Hll(n) => v.hll_value = Some(n),
        Value::GSet(members) => v.gset_value = members,
    }
    v
}

/// Fills an update's answer with `value` (`return_body`).
pub fn value_into_update(value: Value, resp: &mut DtUpdateResp) {
    match value {
        Value::Counter(n) => resp.counter_value = Some(n),
        Value::Set(members) => resp.set_value = members,
        Value::Map(fields) => resp.map_value = entries(fields),
        Value::Hll(n) => resp.hll_value = Some(n),
        Value::GSet(members) => resp.gset_value = members,
    }
}

fn entries(fields: Vec<(Field, FieldValue)>) -> Vec<MapEntry> {
    fields.into_iter().map(|(f, v)| entry(f, v)).collect()
}

fn entry(field: Field, value: FieldValue) -> MapEntry {
    let mut e = MapEntry {
        field: MapField {
            r#type: i32::from(field.kind.tag()),
            name: field.name,
        },
        ..MapEntry::default()
    };
    match value {
        FieldValue::Counter(n) => e.counter_value = Some(n),
        FieldValue::Set(members) => e.set_value = members,
        FieldValue::Register(r) => e.register_value = Some(r),
        FieldValue::Flag(b) => e.flag_value = Some(b),
        FieldValue::Map(fields) => e.map_value = entries(fields),
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_wire::proto::map_field::MapFieldType;

    fn pb_field(name: &str, kind: MapFieldType) -> MapField {
        MapField {
            name: name.into(),
            r#type: kind as i32,
        }
    }

    #[test]
    fn each_operation_decodes() {
        let counter = DtOp {
            counter_op: Some(CounterOp { increment: None }),
            ..DtOp::default()
        };
        assert_eq!(op_from_pb(counter), Ok(Op::Counter(1)));
        let down = DtOp {
            counter_op: Some(CounterOp {
                increment: Some(-7),
            }),
            ..DtOp::default()
        };
        assert_eq!(op_from_pb(down), Ok(Op::Counter(-7)));
        let set = DtOp {
            set_op: Some(proto::SetOp {
                adds: vec![b"a".to_vec()],
                removes: vec![b"b".to_vec()],
            }),
            ..DtOp::default()
        };
        assert_eq!(
            op_from_pb(set),
            Ok(Op::Set(SetOp {
                adds: vec![b"a".to_vec()],
                removes: vec![b"b".to_vec()],
            }))
        );
        let hll = DtOp {
            hll_op: Some(proto::HllOp {
                adds: vec![b"x".to_vec()],
            }),
            ..DtOp::default()
        };
        assert_eq!(op_from_pb(hll), Ok(Op::Hll(vec![b"x".to_vec()])));
        let gset = DtOp {
            gset_op: Some(proto::GSetOp {
                adds: vec![b"y".to_vec()],
            }),
            ..DtOp::default()
        };
        assert_eq!(op_from_pb(gset), Ok(Op::GSet(vec![b"y".to_vec()])));
    }

    #[test]
    fn a_map_operation_decodes_removes_and_every_field_type() {
        let update = |name: &str, kind, f: fn(&mut proto::MapUpdate)| {
            let mut u = proto::MapUpdate {
                field: pb_field(name, kind),
                ..proto::MapUpdate::default()
            };
            f(&mut u);
            u
        };
        let inner = proto::MapOp {
            removes: vec![],
            updates: vec![update("s", MapFieldType::Set, |u| {
                u.set_op = Some(proto::SetOp {
                    adds: vec![b"z".to_vec()],
                    removes: vec![],
                })
            })],
        };
        let mut nested = update("m", MapFieldType::Map, |_| {});
        nested.map_op = Some(inner);
        let op = DtOp {
            map_op: Some(proto::MapOp {
                removes: vec![pb_field("old", MapFieldType::Flag)],
                updates: vec![
                    update("c", MapFieldType::Counter, |u| {
                        u.counter_op = Some(CounterOp { increment: None })
                    }),
                    update("r", MapFieldType::Register, |u| {
                        u.register_op = Some(b"v".to_vec())
                    }),
                    update("f", MapFieldType::Flag, |u| {
                        u.flag_op = Some(map_update::FlagOp::Disable as i32)
                    }),
                    nested,
                ],
            }),
            ..DtOp::default()
        };
        let Ok(Op::Map(m)) = op_from_pb(op) else {
            panic!("a map op");
        };
        assert_eq!(m.removes, vec![Field::new("old", FieldType::Flag)]);
        let ops: Vec<FieldOp> = m.updates.into_iter().map(|u| u.op).collect();
        assert_eq!(ops[0], FieldOp::Counter(1));
        assert_eq!(ops[1], FieldOp::Register(b"v".to_vec()));
        assert_eq!(ops[2], FieldOp::Flag(FlagOp::Disable));
        let FieldOp::Map(inner) = &ops[3] else {
            panic!("nested");
        };
        assert_eq!(inner.updates[0].field, Field::new("s", FieldType::Set));
    }

    #[test]
    fn malformed_operations_are_refused_with_a_reason() {
        let none = op_from_pb(DtOp::default()).unwrap_err();
        assert_eq!(
            none.0,
            "DtOp must carry exactly one operation; it carries none"
        );
        let two = DtOp {
            counter_op: Some(CounterOp::default()),
            gset_op: Some(proto::GSetOp::default()),
            ..DtOp::default()
        };
        assert!(
            op_from_pb(two)
                .unwrap_err()
                .0
                .ends_with("counter_op, gset_op")
        );
        let mismatched = DtOp {
            map_op: Some(proto::MapOp {
                removes: vec![],
                updates: vec![proto::MapUpdate {
                    field: pb_field("c", MapFieldType::Counter),
                    set_op: Some(proto::SetOp::default()),
                    ..proto::MapUpdate::default()
                }],
            }),
            ..DtOp::default()
        };
        assert_eq!(
            op_from_pb(mismatched).unwrap_err().0,
            "MapUpdate of field \"c\" (counter) must carry its counter_op and no other operation"
        );
        let bad_type = DtOp {
            map_op: Some(proto::MapOp {
                removes: vec![MapField {
                    name: b"x".to_vec(),
                    r#type: 9,
                }],
                updates: vec![],
            }),
            ..DtOp::default()
        };
        assert_eq!(
            op_from_pb(bad_type).unwrap_err().0,
            "unknown map field type 9"
        );
    }

    #[test]
    fn maps_nested_too_deep_are_refused() {
        let mut op = proto::MapOp::default();
        for _ in 0..MAP_DEPTH_MAX {
            op = proto::MapOp {
                removes: vec![],
                updates: vec![proto::MapUpdate {
                    field: pb_field("m", MapFieldType::Map),
                    map_op: Some(op),
                    ..proto::MapUpdate::default()
                }],
            };
        }
        let deep = DtOp {
            map_op: Some(op),
            ..DtOp::default()
        };
        let err = op_from_pb(deep).unwrap_err();
        assert!(err.0.contains("at most 8"), "{err:?}");
    }

    #[test]
    fn values_encode_per_type() {
        assert_eq!(value_to_pb(Value::Counter(-3)).counter_value, Some(-3));
        assert_eq!(value_to_pb(Value::Hll(5)).hll_value, Some(5));
        assert_eq!(
            value_to_pb(Value::GSet(vec![b"a".to_vec()])).gset_value,
            vec![b"a".to_vec()]
        );
        let map = Value::Map(vec![
            (Field::new("c", FieldType::Counter), FieldValue::Counter(2)),
            (Field::new("f", FieldType::Flag), FieldValue::Flag(true)),
            (
                Field::new("m", FieldType::Map),
                FieldValue::Map(vec![(
                    Field::new("r", FieldType::Register),
                    FieldValue::Register(b"v".to_vec()),
                )]),
            ),
        ]);
        let mut resp = DtUpdateResp::default();
        value_into_update(map, &mut resp);
        assert_eq!(resp.map_value[0].counter_value, Some(2));
        assert_eq!(resp.map_value[1].flag_value, Some(true));
        assert_eq!(resp.map_value[1].field.r#type, MapFieldType::Flag as i32);
        let nested = &resp.map_value[2].map_value[0];
        assert_eq!(nested.register_value.as_deref(), Some(&b"v"[..]));
        assert_eq!(datatype_to_pb(DataType::GSet), 5);
    }

    #[test]
    fn type_numbers_are_riak_dt_protos() {
        use eddy_wire::proto::dt_fetch_resp::DataType as PbType;
        let pb = [
            PbType::Counter,
            PbType::Set,
            PbType::Map,
            PbType::Hll,
            PbType::Gset,
        ];
        for (t, p) in DataType::ALL.into_iter().zip(pb) {
            assert_eq!(datatype_to_pb(t), p as i32, "{t}");
        }
        let fields = [
            (FieldType::Counter, MapFieldType::Counter),
            (FieldType::Set, MapFieldType::Set),
            (FieldType::Register, MapFieldType::Register),
            (FieldType::Flag, MapFieldType::Flag),
            (FieldType::Map, MapFieldType::Map),
        ];
        for (f, p) in fields {
            let field = field_from_pb(MapField {
                name: b"n".to_vec(),
                r#type: p as i32,
            });
            assert_eq!(field, Ok(Field::new("n", f)));
            assert_eq!(i32::from(f.tag()), p as i32);
        }
        let unknown = MapField {
            name: b"n".to_vec(),
            r#type: 300,
        };
        assert!(field_from_pb(unknown).is_err());
    }
}
