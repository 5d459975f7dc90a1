//! The JSON shapes the index functions read and write.
//!
//! - An **entry** (Riak's `riak_kv_pipe_index:index_keydata()`,
//!   `{{Bucket, Key}, [{Attribute, Value}]}`) is `[bucket, key, {attribute:
//!   value, ...}]`: the `[bucket, key, keydata]` shape every phase input
//!   has, with keydata an object of attributes (a 2i input with
//!   `return_terms` starts it as `{"term": T}`). Its attributes are kept
//!   sorted by name, as Riak keeps its lists.
//! - A **name** is `[bucket, key]`, or `[bucket, key, keydata]` whose
//!   keydata is not an object (`null` is Riak's `undefined`).
//! - A **binary** is a string (its UTF-8 bytes) or, for bytes that are not
//!   UTF-8, `{"base64": text}`; outputs use the second form only when the
//!   first cannot hold them.
//! - An **integer** is a JSON integer (`i64` or `u64`).
//!
//! Values are compared in Erlang's term order ([`order`]), with both
//! spellings of a binary ordered by their bytes.

use std::borrow::Cow;
use std::cmp::Ordering;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use crate::term_order::compare;

/// One input as the index functions see it.
pub enum Shape<'a> {
    /// `[bucket, key, {attributes}]`.
    Entry {
        bucket: &'a Value,
        key: &'a Value,
        attrs: &'a Map<String, Value>,
    },
    /// `[bucket, key]` or `[bucket, key, keydata]` (keydata not an object).
    Name {
        bucket: &'a Value,
        key: &'a Value,
        keydata: Option<&'a Value>,
    },
    /// Anything else (an earlier reduce's count, a not-found marker, ...).
    Other,
}

/// Reads one input's shape.
pub fn shape(v: &Value) -> Shape<'_> {
    let Value::Array(l) = v else {
        return Shape::Other;
    };
    let (Some(bucket), Some(key)) = (l.first(), l.get(1)) else {
        return Shape::Other;
    };
    if l.len() > 3 || !is_bucket(bucket) || !key.is_string() {
        return Shape::Other;
    }
    match l.get(2) {
        Some(Value::Object(attrs)) => Shape::Entry { bucket, key, attrs },
        keydata => Shape::Name {
            bucket,
            key,
            keydata,
        },
    }
}

/// `"bucket"` or `["type", "bucket"]`.
fn is_bucket(v: &Value) -> bool {
    match v {
        Value::String(_) => true,
        Value::Array(l) => l.len() == 2 && l.iter().all(Value::is_string),
        _ => false,
    }
}

/// An entry's JSON.
pub fn entry(bucket: &Value, key: &Value, attrs: Map<String, Value>) -> Value {
    json!([bucket, key, Value::Object(attrs)])
}

/// True for the not-found marker a map phase passes on.
pub fn is_not_found(v: &Value) -> bool {
    crate::object_view::is_not_found(v)
}

/// The bytes of a binary, either spelling.
pub fn bytes(v: &Value) -> Option<Cow<'_, [u8]>> {
    match v {
        Value::String(s) => Some(Cow::Borrowed(s.as_bytes())),
        Value::Object(m) if m.len() == 1 => {
            let text = m.get("base64")?.as_str()?;
            STANDARD.decode(text).ok().map(Cow::Owned)
        }
        _ => None,
    }
}

/// A binary's JSON: text when the bytes are UTF-8, else `{"base64": ..}`.
pub fn binary(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => Value::String(s.to_owned()),
        Err(_) => json!({ "base64": STANDARD.encode(b) }),
    }
}

/// The value of a JSON integer.
pub fn int(v: &Value) -> Option<i128> {
    let n = v.as_number()?;
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// An integer's JSON, if JSON can hold it exactly.
pub fn int_json(n: i128) -> Option<Value> {
    i64::try_from(n)
        .map(Value::from)
        .or_else(|_| u64::try_from(n).map(Value::from))
        .ok()
}

/// Erlang's term order, both spellings of a binary compared by bytes.
pub fn order(a: &Value, b: &Value) -> Ordering {
    match (bytes(a), bytes(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        // A binary outranks every other kind; compare as an empty string.
        (Some(_), None) => compare(&Value::String(String::new()), b),
        (None, Some(_)) => compare(a, &Value::String(String::new())),
        (None, None) => compare(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_told_apart() {
        let e = json!(["b", "k", {"term": "x"}]);
        assert!(matches!(shape(&e), Shape::Entry { attrs, .. } if attrs["term"] == "x"));
        let typed = json!([["t", "b"], "k", {}]);
        assert!(matches!(shape(&typed), Shape::Entry { .. }));
        for name in [
            json!(["b", "k"]),
            json!(["b", "k", null]),
            json!(["b", "k", 5]),
        ] {
            assert!(matches!(shape(&name), Shape::Name { .. }), "{name}");
        }
        for other in [json!(3), json!(["v7", 2]), json!([1, "k"]), json!({"a": 1})] {
            assert!(matches!(shape(&other), Shape::Other), "{other}");
        }
    }

    #[test]
    fn binaries_round_trip_in_either_spelling() {
        assert_eq!(binary(b"abc"), json!("abc"));
        let raw = [0u8, 255, 7];
        let v = binary(&raw);
        assert_eq!(v, json!({"base64": "AP8H"}));
        assert_eq!(bytes(&v).unwrap().as_ref(), raw);
        assert!(bytes(&json!({"base64": "!"})).is_none());
        assert!(bytes(&json!(5)).is_none());
    }

    #[test]
    fn binaries_order_by_bytes_and_after_numbers() {
        let hi = binary(&[0xff]);
        assert_eq!(order(&json!("a"), &hi), Ordering::Less);
        assert_eq!(order(&json!(5), &hi), Ordering::Less);
        assert_eq!(order(&hi, &json!([1])), Ordering::Greater);
        assert_eq!(order(&json!(2), &json!(10)), Ordering::Less);
    }

    #[test]
    fn integers_cover_i64_and_u64() {
        assert_eq!(int(&json!(-3)), Some(-3));
        assert_eq!(int(&json!(u64::MAX)), Some(i128::from(u64::MAX)));
        assert_eq!(int(&json!(1.5)), None);
        assert_eq!(int_json(i128::from(u64::MAX)), Some(json!(u64::MAX)));
        assert_eq!(int_json(i128::MAX), None);
    }
}
