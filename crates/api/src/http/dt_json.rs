//! Data type operations and values as Riak's HTTP API writes them in JSON
//! (`riak_kv_crdt_json`, design note 019 §2), as pure functions: the POST
//! body to an [`Op`] and its context, and a value to the answer's JSON.
//!
//! Invariants: every body that is not an operation the bucket's type
//! takes is refused with a [`JsonError`] naming the offending part, never
//! a panic: bad UTF-8, bad JSON, a context that is not base64, an unknown
//! or ill-typed operation, a counter amount outside `i64`, a map field
//! name without a type suffix, maps nested deeper than [`MAP_DEPTH_MAX`].
//! A map field's JSON name is `<name>_<type>`, split at the last `_`.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use eddy_dt::{
    DataType, DtError, Field, FieldOp, FieldType, FieldValue, FlagOp, MAP_DEPTH_MAX, MapOp,
    MapUpdate, Op, SetOp, Value,
};
use serde_json::{Map, Value as Json, json};

/// A POST body's operation and the context it carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub op: Op,
    pub context: Option<Vec<u8>>,
}

/// Why a POST body was refused (each a 400 with this text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonError {
    /// The body is not UTF-8.
    Utf8,
    /// The body is not JSON, or its context is not base64.
    Decode(String),
    /// Not an operation on `datatype` (a map field's type when nested).
    InvalidOp {
        datatype: &'static str,
        op: String,
        why: Option<&'static str>,
    },
    /// A map field name without a known type suffix.
    FieldName(String),
    /// Maps nested deeper than allowed.
    TooDeep(usize),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Utf8 => f.write_str("Malformed JSON submitted, invalid UTF-8"),
            JsonError::Decode(why) => write!(f, "Couldn't decode JSON: {why}"),
            JsonError::InvalidOp { datatype, op, why } => {
                write!(f, "Invalid operation on datatype '{datatype}': {op}")?;
                match why {
                    Some(why) => write!(f, " ({why})"),
                    None => Ok(()),
                }
            }
            JsonError::FieldName(name) => write!(f, "Invalid map field name '{name}'"),
            JsonError::TooDeep(depth) => DtError::TooDeep { depth: *depth }.fmt(f),
        }
    }
}

fn invalid(datatype: &'static str, op: &Json) -> JsonError {
    JsonError::InvalidOp {
        datatype,
        op: op.to_string(),
        why: None,
    }
}

/// Decodes a POST body for a bucket of `datatype`.
pub fn parse_update(datatype: DataType, body: &[u8]) -> Result<Update, JsonError> {
    let text = std::str::from_utf8(body).map_err(|_| JsonError::Utf8)?;
    let mut json: Json =
        serde_json::from_str(text).map_err(|e| JsonError::Decode(e.to_string()))?;
    let context =
        match &mut json {
            Json::Object(o) => match o.remove("context") {
                None => None,
                Some(Json::String(s)) if s.is_empty() => None,
                Some(Json::String(s)) => Some(STANDARD.decode(s.as_bytes()).map_err(|_| {
                    JsonError::Decode("the context is not valid base64".to_string())
                })?),
                Some(other) => {
                    return Err(JsonError::Decode(format!(
                        "the context must be a base64 string, not {other}"
                    )));
                }
            },
            _ => None,
        };
    let op = match datatype {
        DataType::Counter => Op::Counter(counter(&json, "counter")?),
        DataType::Set => Op::Set(set(&json, "set", true)?),
        DataType::Hll => Op::Hll(set(&json, "hll", false)?.adds),
        DataType::GSet => Op::GSet(set(&json, "gset", false)?.adds),
        DataType::Map => Op::Map(map(&json, 1)?),
    };
    Ok(Update { op, context })
}

/// A counter amount: a bare integer, `"increment"`, `"decrement"`, or an
/// object with one of those keys and an integer.
fn counter(json: &Json, datatype: &'static str) -> Result<i64, JsonError> {
    let amount = |n: &Json| match n {
        Json::Number(num) => num.as_i64().ok_or_else(|| JsonError::InvalidOp {
            datatype,
            op: json.to_string(),
            why: Some("the amount must be an integer within a signed 64-bit range"),
        }),
        _ => Err(invalid(datatype, json)),
    };
    match json {
        Json::Number(_) => amount(json),
        Json::String(s) if s == "increment" => Ok(1),
        Json::String(s) if s == "decrement" => Ok(-1),
        Json::Object(o) if o.len() == 1 => match o.iter().next() {
            Some((k, n)) if k == "increment" => amount(n),
            Some((k, n)) if k == "decrement" => amount(n)?
                .checked_neg()
                .ok_or_else(|| invalid(datatype, json)),
            _ => Err(invalid(datatype, json)),
        },
        _ => Err(invalid(datatype, json)),
    }
}

/// A set's (or, without removes, an HLL's or grow-only set's) operation:
/// an object of `add`, `add_all`, `remove`, `remove_all`, `update`.
fn set(json: &Json, datatype: &'static str, removes: bool) -> Result<SetOp, JsonError> {
    let mut op = SetOp::default();
    set_into(json, datatype, removes, &mut op)?;
    Ok(op)
}

fn set_into(
    json: &Json,
    datatype: &'static str,
    removes: bool,
    op: &mut SetOp,
) -> Result<(), JsonError> {
    let bad = || invalid(datatype, json);
    let Json::Object(o) = json else {
        return Err(bad());
    };
    if o.is_empty() {
        return Err(bad());
    }
    for (k, v) in o {
        match k.as_str() {
            "add" => op.adds.push(member(v).ok_or_else(bad)?),
            "add_all" => op.adds.extend(members(v).ok_or_else(bad)?),
            "remove" if removes => op.removes.push(member(v).ok_or_else(bad)?),
            "remove_all" if removes => op.removes.extend(members(v).ok_or_else(bad)?),
            "update" => {
                let Json::Array(items) = v else {
                    return Err(bad());
                };
                for item in items {
                    set_into(item, datatype, removes, op)?;
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok(())
}

fn member(v: &Json) -> Option<Vec<u8>> {
    v.as_str().map(|s| s.as_bytes().to_vec())
}

fn members(v: &Json) -> Option<Vec<Vec<u8>>> {
    v.as_array()?.iter().map(member).collect()
}

/// A map's operation at nesting `depth` (1 for the bucket's own map).
fn map(json: &Json, depth: usize) -> Result<MapOp, JsonError> {
    if depth > MAP_DEPTH_MAX {
        return Err(JsonError::TooDeep(depth));
    }
    let bad = || invalid("map", json);
    let Json::Object(o) = json else {
        return Err(bad());
    };
    if o.is_empty() {
        return Err(bad());
    }
    let mut op = MapOp::default();
    for (k, v) in o {
        match (k.as_str(), v) {
            ("remove", Json::String(name)) => op.removes.push(field_name(name)?),
            ("remove", Json::Array(names)) => {
                for name in names {
                    let name = name.as_str().ok_or_else(bad)?;
                    op.removes.push(field_name(name)?);
                }
            }
            ("update", Json::Object(fields)) => {
                for (name, field_json) in fields {
                    let field = field_name(name)?;
                    let fop = field_op(field.kind, field_json, depth)?;
                    op.updates.push(MapUpdate { field, op: fop });
                }
            }
            _ => return Err(bad()),
        }
    }
    Ok(op)
}

fn field_op(kind: FieldType, json: &Json, depth: usize) -> Result<FieldOp, JsonError> {
    Ok(match kind {
        FieldType::Counter => FieldOp::Counter(counter(json, "counter")?),
        FieldType::Set => FieldOp::Set(set(json, "set", true)?),
        FieldType::Register => {
            FieldOp::Register(register(json).ok_or_else(|| invalid("register", json))?)
        }
        FieldType::Flag => FieldOp::Flag(match json.as_str() {
            Some("enable") => FlagOp::Enable,
            Some("disable") => FlagOp::Disable,
            _ => return Err(invalid("flag", json)),
        }),
        FieldType::Map => FieldOp::Map(map(json, depth + 1)?),
    })
}

fn register(json: &Json) -> Option<Vec<u8>> {
    match json {
        Json::String(s) => Some(s.as_bytes().to_vec()),
        Json::Object(o) if o.len() == 1 => member(o.get("assign")?),
        _ => None,
    }
}

/// A map field from its JSON name `<name>_<type>`.
pub fn field_name(text: &str) -> Result<Field, JsonError> {
    text.rsplit_once('_')
        .and_then(|(name, kind)| Some(Field::new(name, FieldType::from_name(kind)?)))
        .ok_or_else(|| JsonError::FieldName(text.to_string()))
}

/// A map field's JSON name.
pub fn field_json_name(field: &Field) -> String {
    format!(
        "{}_{}",
        String::from_utf8_lossy(&field.name),
        field.kind.name()
    )
}

/// A value as JSON: counters and HLL estimates as integers, set members
/// as strings, maps as objects of `<name>_<type>`.
pub fn value_json(value: &Value) -> Json {
    match value {
        Value::Counter(n) => json!(n),
        Value::Set(members) | Value::GSet(members) => strings(members),
        Value::Hll(n) => json!(n),
        Value::Map(fields) => map_json(fields),
    }
}

fn strings(members: &[Vec<u8>]) -> Json {
    Json::Array(
        members
            .iter()
            .map(|m| Json::String(String::from_utf8_lossy(m).into_owned()))
            .collect(),
    )
}

fn map_json(fields: &[(Field, FieldValue)]) -> Json {
    let mut o = Map::new();
    for (field, v) in fields {
        let v = match v {
            FieldValue::Counter(n) => json!(n),
            FieldValue::Set(members) => strings(members),
            FieldValue::Register(r) => Json::String(String::from_utf8_lossy(r).into_owned()),
            FieldValue::Flag(b) => json!(b),
            FieldValue::Map(inner) => map_json(inner),
        };
        o.insert(field_json_name(field), v);
    }
    Json::Object(o)
}

/// A fetch's (or `returnbody`'s) answer: type, value, and the context in
/// base64 unless it is empty or not wanted.
pub fn body_json(datatype: DataType, value: &Value, context: &[u8], with_context: bool) -> Json {
    let mut o = Map::new();
    o.insert("type".into(), json!(datatype.name()));
    o.insert("value".into(), value_json(value));
    if with_context && !context.is_empty() {
        o.insert("context".into(), json!(STANDARD.encode(context)));
    }
    Json::Object(o)
}

/// A fetch's answer when the key holds nothing.
pub fn not_found_json(datatype: DataType) -> Json {
    json!({"type": datatype.name(), "error": "notfound"})
}

#[cfg(test)]
mod tests;
