//! An object as map functions see it: the JSON Riak gives JavaScript
//! (`{"bucket", "key", "vclock", "values": [{"metadata", "data"}]}`, plus
//! `"bucket_type"` for a typed bucket) and the not-found marker
//! (`{"not_found": {"bucket", "key", "keydata"}}`) given for a missing
//! object. Erlang built-ins read the same view.
//!
//! Values and names that are not UTF-8 are shown lossily: JSON has no
//! bytes, and Riak's JavaScript could not see them either.

use eddy_model::BucketRef;
use eddy_object::{Content, RiakObject, context};
use serde_json::{Map, Value, json};

use crate::job::BKey;

/// The JSON form of a found object's live siblings.
pub fn object_json(b: &BKey, obj: &RiakObject) -> Value {
    let values: Vec<Value> = obj
        .siblings
        .iter()
        .filter(|s| !s.content.meta.deleted)
        .map(|s| content_json(&s.content))
        .collect();
    let mut m = Map::new();
    m.insert("bucket".into(), text(&b.bucket.bucket).into());
    if b.bucket.bucket_type != "default" {
        m.insert("bucket_type".into(), b.bucket.bucket_type.clone().into());
    }
    m.insert("key".into(), text(&b.key).into());
    m.insert("vclock".into(), context::to_base64(&obj.vv).into());
    m.insert("values".into(), Value::Array(values));
    Value::Object(m)
}

/// The marker a map function gets for an input that does not exist.
pub fn not_found_json(b: &BKey) -> Value {
    let mut inner = Map::new();
    inner.insert("bucket".into(), text(&b.bucket.bucket).into());
    if b.bucket.bucket_type != "default" {
        inner.insert("bucket_type".into(), b.bucket.bucket_type.clone().into());
    }
    inner.insert("key".into(), text(&b.key).into());
    inner.insert("keydata".into(), b.keydata.clone());
    json!({ "not_found": inner })
}

/// True for a value that is a not-found marker.
pub fn is_not_found(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.contains_key("not_found"))
}

/// `[bucket, key]` (with keydata if any) naming a map input, as phases
/// pass inputs on and as a phaseless job answers.
pub fn bkey_json(b: &BKey) -> Value {
    let bucket: Value = match b.bucket.bucket_type.as_str() {
        "default" => text(&b.bucket.bucket).into(),
        t => json!([t, text(&b.bucket.bucket)]),
    };
    match b.keydata.is_null() {
        true => json!([bucket, text(&b.key)]),
        false => json!([bucket, text(&b.key), b.keydata]),
    }
}

fn content_json(c: &Content) -> Value {
    let meta = &c.meta;
    let mut m = Map::new();
    let content_type = meta
        .content_type
        .as_deref()
        .map_or("application/octet-stream".into(), text);
    m.insert("content-type".into(), content_type.into());
    if let Some(cs) = &meta.charset {
        m.insert("charset".into(), text(cs).into());
    }
    if let Some(ce) = &meta.content_encoding {
        m.insert("content-encoding".into(), text(ce).into());
    }
    m.insert("X-Riak-VTag".into(), text(&meta.vtag).into());
    m.insert(
        "X-Riak-Last-Modified".into(),
        (meta.last_modified_us / 1_000_000).into(),
    );
    let pairs = |p: &[(Vec<u8>, Vec<u8>)]| -> Value {
        Value::Object(p.iter().map(|(k, v)| (text(k), text(v).into())).collect())
    };
    m.insert("index".into(), pairs(&meta.indexes));
    m.insert("X-Riak-Meta".into(), pairs(&meta.user_meta));
    let links: Vec<Value> = meta
        .links
        .iter()
        .map(|l| json!([text(&l.bucket), text(&l.key), text(&l.tag)]))
        .collect();
    m.insert("Links".into(), Value::Array(links));
    json!({ "metadata": m, "data": text(&c.value) })
}

/// The first live sibling's value, as Riak's `riak_object:get_value`.
pub fn first_value(obj: &RiakObject) -> Option<&[u8]> {
    obj.siblings
        .iter()
        .find(|s| !s.content.meta.deleted)
        .map(|s| s.content.value.as_slice())
}

/// The bucket of a typed or untyped input, for messages.
pub fn bucket_text(b: &BucketRef) -> String {
    match b.bucket_type.as_str() {
        "default" => text(&b.bucket),
        t => format!("{t}/{}", text(&b.bucket)),
    }
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
