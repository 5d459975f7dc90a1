//! Riak's Erlang built-ins (`riak_kv_mapreduce`), implemented natively
//! over JSON values: map_identity, map_object_value,
//! map_object_value_list, reduce_identity, reduce_set_union, reduce_sort,
//! reduce_string_to_integer, reduce_sum, reduce_plist_sum and
//! reduce_count_inputs here, and Riak 3's `reduce_index_*` functions in
//! [`crate::index_reduce`]. They are looked up by module and function name
//! when a job is read, so an unknown one is refused before anything runs.
//!
//! Riak's functions see Erlang terms; here they see what JSON decodes to,
//! and order values as Erlang would ([`crate::term_order`]). A map
//! function given a missing object gets `None`; `map_object_value` and
//! `map_object_value_list` then do what their `arg` says, as in Riak
//! (`"filter_notfound"`, `"include_notfound"`, `"include_keydata"`,
//! `{"sub": V}`); with any other arg they pass the not-found marker on,
//! where the reduce built-ins drop it.

use eddy_object::RiakObject;
use serde_json::{Number, Value, json};

use crate::index_reduce::IndexFn;
use crate::job::BKey;
use crate::object_view::{first_value, is_not_found, not_found_json, object_json, text};
use crate::term_order::compare;

pub const MODULE: &str = "riak_kv_mapreduce";

/// A built-in map function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapFn {
    Identity,
    ObjectValue,
    ObjectValueList,
}

/// A built-in reduce function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceFn {
    Identity,
    SetUnion,
    Sort,
    StringToInteger,
    Sum,
    PlistSum,
    CountInputs,
    /// A `reduce_index_*` function: run through
    /// [`crate::index_reduce::Reducer`], which reads its arg.
    Index(IndexFn),
}

/// The map built-in `module:function` names, or why there is none.
pub fn map_fn(module: &str, function: &str) -> Result<MapFn, String> {
    check_module(module)?;
    Ok(match function {
        "map_identity" => MapFn::Identity,
        "map_object_value" => MapFn::ObjectValue,
        "map_object_value_list" => MapFn::ObjectValueList,
        other => return Err(unknown(module, other, 3)),
    })
}

/// The reduce built-in `module:function` names, or why there is none.
pub fn reduce_fn(module: &str, function: &str) -> Result<ReduceFn, String> {
    check_module(module)?;
    Ok(match function {
        "reduce_identity" => ReduceFn::Identity,
        "reduce_set_union" => ReduceFn::SetUnion,
        "reduce_sort" => ReduceFn::Sort,
        "reduce_string_to_integer" => ReduceFn::StringToInteger,
        "reduce_sum" => ReduceFn::Sum,
        "reduce_plist_sum" => ReduceFn::PlistSum,
        "reduce_count_inputs" => ReduceFn::CountInputs,
        other => match IndexFn::named(other) {
            Some(f) => ReduceFn::Index(f),
            None => return Err(unknown(module, other, 2)),
        },
    })
}

fn check_module(module: &str) -> Result<(), String> {
    match module == MODULE {
        true => Ok(()),
        false => Err(format!(
            "{{badfun,{module}}}: only the built-ins of {MODULE} run as Erlang functions"
        )),
    }
}

fn unknown(module: &str, function: &str, arity: u8) -> String {
    format!("{{undef,[{{{module},{function},{arity}}}]}}: no such built-in")
}

/// Runs a map built-in on one input (`None`: the object does not exist).
pub fn map(
    f: MapFn,
    input: &BKey,
    obj: Option<&RiakObject>,
    arg: &Value,
) -> Result<Vec<Value>, String> {
    let Some(obj) = obj else {
        return Ok(match f {
            MapFn::Identity => vec![not_found_json(input)],
            _ => not_found_action(input, arg),
        });
    };
    let value = first_value(obj).unwrap_or_default();
    match f {
        MapFn::Identity => Ok(vec![object_json(input, obj)]),
        MapFn::ObjectValue => Ok(vec![Value::String(text(value))]),
        MapFn::ObjectValueList => match serde_json::from_slice(value) {
            Ok(Value::Array(list)) => Ok(list),
            _ => Err("map_object_value_list: the object's value is not a JSON list".into()),
        },
    }
}

fn not_found_action(input: &BKey, arg: &Value) -> Vec<Value> {
    match arg {
        Value::String(s) if s == "filter_notfound" => vec![],
        Value::String(s) if s == "include_keydata" => vec![input.keydata.clone()],
        Value::Object(m) if m.len() == 1 && m.contains_key("sub") => match &m["sub"] {
            Value::Array(list) => list.clone(),
            other => vec![other.clone()],
        },
        _ => vec![not_found_json(input)],
    }
}

/// Runs a reduce built-in over its inputs (which may include its own
/// earlier output: every built-in is safe to re-reduce).
pub fn reduce(f: ReduceFn, values: Vec<Value>) -> Result<Vec<Value>, String> {
    match f {
        ReduceFn::Identity => values.iter().map(bkey_pair).collect(),
        ReduceFn::SetUnion => {
            let mut v = values;
            v.sort_by(compare);
            v.dedup();
            Ok(v)
        }
        ReduceFn::Sort => {
            let mut v = values;
            v.sort_by(compare);
            Ok(v)
        }
        ReduceFn::StringToInteger => data(values).map(to_integer).collect(),
        ReduceFn::Sum => sum(data(values)).map(|n| vec![n]),
        ReduceFn::PlistSum => plist_sum(values),
        ReduceFn::CountInputs => Ok(vec![json!(values.iter().map(count_of).sum::<u64>())]),
        ReduceFn::Index(f) => Err(format!("{}: runs only with its arg read", f.name())),
    }
}

/// The inputs that are not not-found markers.
fn data(values: Vec<Value>) -> impl Iterator<Item = Value> {
    values.into_iter().filter(|v| !is_not_found(v))
}

fn bkey_pair(v: &Value) -> Result<Value, String> {
    match v {
        Value::Array(l) if (2..=3).contains(&l.len()) => Ok(json!([l[0], l[1]])),
        other => Err(format!("reduce_identity: unhandled entry {other}")),
    }
}

fn to_integer(v: Value) -> Result<Value, String> {
    match &v {
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(v),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map(|n| json!(n))
            .map_err(|_| format!("reduce_string_to_integer: {s:?} is not an integer")),
        other => Err(format!(
            "reduce_string_to_integer: {other} is not an integer"
        )),
    }
}

/// Sums numbers: whole while every term is whole and the sum fits.
fn sum(values: impl Iterator<Item = Value>) -> Result<Value, String> {
    let mut whole: Option<i64> = Some(0);
    let mut float = 0.0f64;
    for v in values {
        let Value::Number(n) = &v else {
            return Err(format!("reduce_sum: {v} is not a number"));
        };
        whole = whole.and_then(|w| n.as_i64().and_then(|i| w.checked_add(i)));
        float += n.as_f64().unwrap_or(0.0);
    }
    Ok(match whole {
        Some(w) => json!(w),
        None => Number::from_f64(float).map_or(Value::Null, Value::Number),
    })
}

/// Adds up `[key, number]` pairs (or lists of them) by key; the output is
/// pairs sorted by key.
fn plist_sum(values: Vec<Value>) -> Result<Vec<Value>, String> {
    let mut pairs: Vec<(Value, Vec<Value>)> = Vec::new();
    for p in values.iter().flat_map(flatten_pairs) {
        let (k, n) = p?;
        match pairs.iter_mut().find(|(key, _)| *key == k) {
            Some((_, ns)) => ns.push(n),
            None => pairs.push((k, vec![n])),
        }
    }
    pairs.sort_by(|a, b| compare(&a.0, &b.0));
    pairs
        .into_iter()
        .map(|(k, ns)| sum(ns.into_iter()).map(|s| json!([k, s])))
        .collect()
}

fn flatten_pairs(v: &Value) -> Vec<Result<(Value, Value), String>> {
    match v {
        Value::Array(l) if l.len() == 2 && !l[0].is_array() => {
            vec![Ok((l[0].clone(), l[1].clone()))]
        }
        Value::Array(l) => l.iter().flat_map(flatten_pairs).collect(),
        other => vec![Err(format!(
            "reduce_plist_sum: {other} is not a [key, number] pair"
        ))],
    }
}

/// An earlier count counts as itself; anything else as one input.
fn count_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_model::BucketRef;

    fn input(key: &str) -> BKey {
        BKey {
            bucket: BucketRef::default_type("b"),
            key: key.as_bytes().to_vec(),
            keydata: json!("kd"),
        }
    }

    #[test]
    fn names_resolve_and_unknown_ones_are_refused() {
        assert_eq!(map_fn(MODULE, "map_object_value"), Ok(MapFn::ObjectValue));
        assert_eq!(reduce_fn(MODULE, "reduce_sum"), Ok(ReduceFn::Sum));
        assert!(map_fn(MODULE, "reduce_sum").unwrap_err().contains("undef"));
        assert_eq!(
            reduce_fn(MODULE, "reduce_index_countby"),
            Ok(ReduceFn::Index(IndexFn::CountBy))
        );
        assert!(
            reduce_fn(MODULE, "reduce_index_applybloom")
                .unwrap_err()
                .contains("undef")
        );
        assert!(reduce_fn("os", "cmd").unwrap_err().contains("badfun"));
    }

    #[test]
    fn reduces_behave_as_riaks_unit_tests_say() {
        let r = |f, v: Value| reduce(f, v.as_array().unwrap().clone()).unwrap();
        assert_eq!(
            r(ReduceFn::SetUnion, json!(["foo", "foo", "bar", "baz"])),
            vec![json!("bar"), json!("baz"), json!("foo")]
        );
        assert_eq!(r(ReduceFn::Sum, json!([1, 2, 3, 4])), vec![json!(10)]);
        assert_eq!(r(ReduceFn::Sum, json!([1, 2.5])), vec![json!(3.5)]);
        assert_eq!(
            r(ReduceFn::Sort, json!([4, 2, 1, 3, 5])),
            vec![json!(1), json!(2), json!(3), json!(4), json!(5)]
        );
        assert_eq!(
            r(ReduceFn::StringToInteger, json!(["1", "2", 3])),
            vec![json!(1), json!(2), json!(3)]
        );
        let pl = json!([[["a", 1]], [["a", 2]], [["b", 1]], [["b", 4]]]);
        assert_eq!(
            r(ReduceFn::PlistSum, pl),
            vec![json!(["a", 3]), json!(["b", 5])]
        );
        assert_eq!(r(ReduceFn::PlistSum, json!([])), Vec::<Value>::new());
        let counted = r(ReduceFn::CountInputs, json!([["b1", "k1"], ["b2", "k2"]]));
        assert_eq!(counted, vec![json!(2)]);
        let again = r(ReduceFn::CountInputs, json!([["b3", "k3"], 2, 4]));
        assert_eq!(again, vec![json!(7)]);
        assert_eq!(
            r(ReduceFn::Identity, json!([["b", "k", 1]])),
            vec![json!(["b", "k"])]
        );
    }

    #[test]
    fn not_found_markers_are_dropped_by_sums_and_handled_by_arg() {
        let nf = not_found_json(&input("k"));
        assert_eq!(
            reduce(ReduceFn::Sum, vec![json!(2), nf.clone()]).unwrap(),
            vec![json!(2)]
        );
        let m = |arg: Value| map(MapFn::ObjectValue, &input("k"), None, &arg).unwrap();
        assert_eq!(m(json!("filter_notfound")), Vec::<Value>::new());
        assert_eq!(m(json!("include_keydata")), vec![json!("kd")]);
        assert_eq!(m(json!({"sub": [7]})), vec![json!(7)]);
        assert_eq!(m(Value::Null), vec![nf]);
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        assert!(reduce(ReduceFn::Sum, vec![json!("x")]).is_err());
        assert!(reduce(ReduceFn::StringToInteger, vec![json!("1.5")]).is_err());
        assert!(reduce(ReduceFn::Identity, vec![json!(1)]).is_err());
        assert!(reduce(ReduceFn::PlistSum, vec![json!(1)]).is_err());
    }
}
