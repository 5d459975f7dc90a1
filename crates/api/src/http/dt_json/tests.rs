//! Every type's POST bodies and values, and every refusal, of `dt_json`.

use super::*;

fn parse(datatype: DataType, body: &str) -> Result<Update, JsonError> {
    parse_update(datatype, body.as_bytes())
}

fn op(datatype: DataType, body: &str) -> Op {
    parse(datatype, body).unwrap().op
}

fn err(datatype: DataType, body: &str) -> String {
    parse(datatype, body).unwrap_err().to_string()
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

#[test]
fn counters_take_every_spelling() {
    use DataType::Counter as C;
    assert_eq!(op(C, "5"), Op::Counter(5));
    assert_eq!(op(C, "-3"), Op::Counter(-3));
    assert_eq!(op(C, "\"increment\""), Op::Counter(1));
    assert_eq!(op(C, "\"decrement\""), Op::Counter(-1));
    assert_eq!(op(C, r#"{"increment": 7}"#), Op::Counter(7));
    assert_eq!(op(C, r#"{"increment": -7}"#), Op::Counter(-7));
    assert_eq!(op(C, r#"{"decrement": 2}"#), Op::Counter(-2));
}

#[test]
fn bad_counter_operations_are_refused() {
    use DataType::Counter as C;
    assert_eq!(
        err(C, r#"{"increment":"x"}"#),
        r#"Invalid operation on datatype 'counter': {"increment":"x"}"#
    );
    assert_eq!(
        err(C, "1.5"),
        "Invalid operation on datatype 'counter': 1.5 \
         (the amount must be an integer within a signed 64-bit range)"
    );
    assert!(err(C, "99999999999999999999").contains("signed 64-bit range"));
    assert!(err(C, r#"{"decrement": -9223372036854775808}"#).starts_with("Invalid operation"));
    assert!(err(C, r#"{"increment": 1, "decrement": 1}"#).starts_with("Invalid operation"));
    assert!(err(C, r#""up""#).starts_with("Invalid operation"));
    assert!(err(C, "[1]").starts_with("Invalid operation"));
}

#[test]
fn sets_collect_adds_and_removes_in_order() {
    let body = r#"{"add":"a","add_all":["b","c"],"remove":"d","remove_all":["e"],
                  "update":[{"add":"f"},{"remove":"g"}]}"#;
    assert_eq!(
        op(DataType::Set, body),
        Op::Set(SetOp {
            adds: vec![b("a"), b("b"), b("c"), b("f")],
            removes: vec![b("d"), b("e"), b("g")],
        })
    );
}

#[test]
fn bad_set_operations_are_refused() {
    use DataType::Set as S;
    assert_eq!(
        err(S, r#"{"add": 5}"#),
        r#"Invalid operation on datatype 'set': {"add":5}"#
    );
    assert!(err(S, r#"{"add_all": ["a", 1]}"#).starts_with("Invalid operation on datatype 'set'"));
    assert!(err(S, r#"{"insert": "a"}"#).starts_with("Invalid operation"));
    assert!(err(S, "{}").starts_with("Invalid operation"));
    assert!(err(S, r#""add""#).starts_with("Invalid operation"));
    assert!(err(S, r#"{"update": {"add": "a"}}"#).starts_with("Invalid operation"));
}

#[test]
fn hlls_and_gsets_take_adds_only() {
    assert_eq!(
        op(DataType::Hll, r#"{"add":"x","add_all":["y"]}"#),
        Op::Hll(vec![b("x"), b("y")])
    );
    assert_eq!(
        op(DataType::GSet, r#"{"update":[{"add":"x"}]}"#),
        Op::GSet(vec![b("x")])
    );
    assert_eq!(
        err(DataType::Hll, r#"{"remove":"x"}"#),
        r#"Invalid operation on datatype 'hll': {"remove":"x"}"#
    );
    assert!(err(DataType::GSet, r#"{"remove_all":["x"]}"#).contains("'gset'"));
}

#[test]
fn the_context_is_taken_out_before_the_operation() {
    let u = parse(DataType::Set, r#"{"context":"AAEC","remove":"a"}"#).unwrap();
    assert_eq!(u.context, Some(vec![0, 1, 2]));
    assert_eq!(
        u.op,
        Op::Set(SetOp {
            adds: vec![],
            removes: vec![b("a")],
        })
    );
    let u = parse(DataType::Counter, r#"{"context":"","increment":1}"#).unwrap();
    assert_eq!((u.op, u.context), (Op::Counter(1), None));
    assert_eq!(
        err(DataType::Set, r#"{"context":"!!","add":"a"}"#),
        "Couldn't decode JSON: the context is not valid base64"
    );
    assert!(err(DataType::Set, r#"{"context":5,"add":"a"}"#).starts_with("Couldn't decode JSON"));
}

#[test]
fn bad_json_and_bad_utf8_are_refused() {
    assert!(err(DataType::Set, "{").starts_with("Couldn't decode JSON: "));
    assert_eq!(
        parse_update(DataType::Set, b"\"\xff\"")
            .unwrap_err()
            .to_string(),
        "Malformed JSON submitted, invalid UTF-8"
    );
}

#[test]
fn maps_take_removes_then_updates_of_every_field_type() {
    let body = r#"{"remove":["gone_flag"],"update":{
        "visits_counter":{"increment":2},
        "tags_set":{"add_all":["a"]},
        "name_register":{"assign":"ann"},
        "nick_register":"an",
        "odd_name_with_flag":"enable",
        "sub_map":{"update":{"off_flag":"disable"}}}}"#;
    let Op::Map(m) = op(DataType::Map, body) else {
        panic!("a map op");
    };
    assert_eq!(m.removes, vec![Field::new("gone", FieldType::Flag)]);
    let by_name = |n: &str| {
        m.updates
            .iter()
            .find(|u| u.field.name == n.as_bytes())
            .map(|u| (u.field.kind, u.op.clone()))
            .unwrap()
    };
    assert_eq!(by_name("visits"), (FieldType::Counter, FieldOp::Counter(2)));
    assert_eq!(
        by_name("name"),
        (FieldType::Register, FieldOp::Register(b("ann")))
    );
    assert_eq!(
        by_name("nick"),
        (FieldType::Register, FieldOp::Register(b("an")))
    );
    assert_eq!(
        by_name("odd_name_with"),
        (FieldType::Flag, FieldOp::Flag(FlagOp::Enable))
    );
    let (kind, FieldOp::Map(sub)) = by_name("sub") else {
        panic!("nested map");
    };
    assert_eq!(kind, FieldType::Map);
    assert_eq!(sub.updates[0].op, FieldOp::Flag(FlagOp::Disable));
    let Op::Map(m) = op(DataType::Map, r#"{"remove":"x_counter"}"#) else {
        panic!("a map op");
    };
    assert_eq!(m.removes, vec![Field::new("x", FieldType::Counter)]);
}

#[test]
fn bad_map_operations_are_refused() {
    use DataType::Map as M;
    assert_eq!(
        err(M, r#"{"update":{"x_gset":{"add":"a"}}}"#),
        "Invalid map field name 'x_gset'"
    );
    assert_eq!(
        err(M, r#"{"remove":"plain"}"#),
        "Invalid map field name 'plain'"
    );
    assert_eq!(
        err(M, r#"{"update":{"f_flag":"on"}}"#),
        r#"Invalid operation on datatype 'flag': "on""#
    );
    assert_eq!(
        err(M, r#"{"update":{"r_register":{"assign":1}}}"#),
        r#"Invalid operation on datatype 'register': {"assign":1}"#
    );
    assert!(err(M, r#"{"update":{"s_set":{"add":1}}}"#).contains("'set'"));
    assert!(err(M, r#"{"update":[]}"#).contains("'map'"));
    assert!(err(M, r#"{"remove":[1]}"#).contains("'map'"));
    assert!(err(M, r#"{"frob":{}}"#).contains("'map'"));
}

#[test]
fn maps_nested_too_deep_are_refused() {
    let mut body = r#"{"update":{"c_counter":1}}"#.to_string();
    for _ in 0..MAP_DEPTH_MAX {
        body = format!(r#"{{"update":{{"m_map":{body}}}}}"#);
    }
    let e = err(DataType::Map, &body);
    assert!(e.contains("at most 8"), "{e}");
    let mut ok = r#"{"update":{"c_counter":1}}"#.to_string();
    for _ in 1..MAP_DEPTH_MAX {
        ok = format!(r#"{{"update":{{"m_map":{ok}}}}}"#);
    }
    assert!(parse(DataType::Map, &ok).is_ok());
}

#[test]
fn values_render_per_type() {
    assert_eq!(value_json(&Value::Counter(-2)), json!(-2));
    assert_eq!(value_json(&Value::Hll(5)), json!(5));
    assert_eq!(
        value_json(&Value::Set(vec![b("a"), b("b")])),
        json!(["a", "b"])
    );
    assert_eq!(value_json(&Value::GSet(vec![b("z")])), json!(["z"]));
    let map = Value::Map(vec![
        (Field::new("c", FieldType::Counter), FieldValue::Counter(1)),
        (
            Field::new("r", FieldType::Register),
            FieldValue::Register(b("v")),
        ),
        (
            Field::new("m", FieldType::Map),
            FieldValue::Map(vec![(
                Field::new("f", FieldType::Flag),
                FieldValue::Flag(true),
            )]),
        ),
        (
            Field::new("s", FieldType::Set),
            FieldValue::Set(vec![b("x")]),
        ),
    ]);
    assert_eq!(
        value_json(&map),
        json!({"c_counter": 1, "r_register": "v", "m_map": {"f_flag": true}, "s_set": ["x"]})
    );
}

#[test]
fn answers_carry_the_context_only_when_wanted_and_present() {
    let v = Value::Set(vec![b("a")]);
    assert_eq!(
        body_json(DataType::Set, &v, &[1, 2], true),
        json!({"type": "set", "value": ["a"], "context": "AQI="})
    );
    assert_eq!(
        body_json(DataType::Set, &v, &[1, 2], false),
        json!({"type": "set", "value": ["a"]})
    );
    assert_eq!(
        body_json(DataType::Counter, &Value::Counter(3), &[], true),
        json!({"type": "counter", "value": 3})
    );
    assert_eq!(
        not_found_json(DataType::Hll),
        json!({"type": "hll", "error": "notfound"})
    );
}
