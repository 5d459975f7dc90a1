//! Erlang's term order over JSON values, for the built-ins that sort or
//! take sets (`reduce_sort`, `reduce_set_union`). Riak decodes JSON into
//! Erlang terms, so its order is: numbers < atoms (`false` < `null` <
//! `true`) < objects < lists < strings. Numbers compare by value, objects
//! by their `(key, value)` pairs in order, lists element by element with
//! a shorter prefix first, strings by their bytes.

use std::cmp::Ordering;

use serde_json::{Map, Value};

/// Compares two values in Erlang's term order.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Value::Number(x), Value::Number(y)) => number(x).total_cmp(&number(y)),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Object(x), Value::Object(y)) => objects(x, y),
        (Value::Array(x), Value::Array(y)) => lists(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => Ordering::Equal,
    })
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::Bool(false) => 1,
        Value::Null => 2,
        Value::Bool(true) => 3,
        Value::Object(_) => 4,
        Value::Array(_) => 5,
        Value::String(_) => 6,
    }
}

fn number(n: &serde_json::Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

fn lists(x: &[Value], y: &[Value]) -> Ordering {
    for (a, b) in x.iter().zip(y) {
        match compare(a, b) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    x.len().cmp(&y.len())
}

fn objects(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    for ((ka, va), (kb, vb)) in x.iter().zip(y) {
        let o = ka
            .as_bytes()
            .cmp(kb.as_bytes())
            .then_with(|| compare(va, vb));
        if o != Ordering::Equal {
            return o;
        }
    }
    x.len().cmp(&y.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn kinds_order_as_erlang_terms() {
        let sorted = [
            json!(-1),
            json!(2.5),
            json!(3),
            json!(false),
            json!(null),
            json!(true),
            json!({"a": 1}),
            json!([]),
            json!([1]),
            json!([1, 2]),
            json!(""),
            json!("a"),
            json!("b"),
        ];
        for w in sorted.windows(2) {
            assert_eq!(compare(&w[0], &w[1]), Ordering::Less, "{} < {}", w[0], w[1]);
        }
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i32>().prop_map(|n| json!(n)),
            any::<bool>().prop_map(Value::Bool),
            Just(Value::Null),
            "[a-c]{0,3}".prop_map(Value::String),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 16, 4, |inner| {
            prop::collection::vec(inner, 0..4).prop_map(Value::Array)
        })
    }

    proptest! {
        /// A total order: antisymmetric and transitive, so sorting is sound.
        #[test]
        fn is_a_total_order(a in value(), b in value(), c in value()) {
            prop_assert_eq!(compare(&a, &b), compare(&b, &a).reverse());
            if compare(&a, &b) != Ordering::Greater && compare(&b, &c) != Ordering::Greater {
                prop_assert_ne!(compare(&a, &c), Ordering::Greater);
            }
            prop_assert_eq!(compare(&a, &a), Ordering::Equal);
        }
    }
}
