//! The JSON results of a multi-key request (design note 016): one object
//! per item, `{"key":…, "status":"ok"|"not_found"|"error", …}`.
//!
//! Bytes that are UTF-8 go out as text (`key`, `value`), others as
//! base64 (`key_base64`, `value_base64`); metadata names and terms that
//! are not UTF-8 are percent-encoded, as key lists write keys. An error
//! carries the single operation's message and the status it would have
//! answered (`http_status`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use eddy_kv::DeleteOutcome;
use eddy_model::{GetResponse, PutResponse};
use eddy_object::{Content, RiakObject, context};
use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::headers::http_date;
use super::keys::name_text;

/// How a result names its item's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Echo {
    /// The key's bytes.
    Key(Vec<u8>),
    /// Base64 that did not decode, as sent.
    Base64(String),
    /// The item named no key.
    Nothing,
}

impl Echo {
    /// The echo of an item that gave `key` or `key_base64` (text wins).
    pub fn given(key: Option<&str>, key_base64: Option<&str>) -> Echo {
        match (key, key_base64) {
            (Some(k), _) => Echo::Key(k.as_bytes().to_vec()),
            (None, Some(b)) => match STANDARD.decode(b.as_bytes()) {
                Ok(bytes) => Echo::Key(bytes),
                Err(_) => Echo::Base64(b.to_string()),
            },
            (None, None) => Echo::Nothing,
        }
    }

    fn result(self, status: &str) -> Map<String, Value> {
        let mut m = Map::new();
        match self {
            Echo::Key(key) => bytes_into(&mut m, "key", &key),
            Echo::Base64(text) => {
                m.insert("key_base64".into(), Value::String(text));
            }
            Echo::Nothing => {}
        }
        m.insert("status".into(), status.into());
        m
    }
}

/// A multi-get's result.
pub fn got(echo: Echo, r: Result<GetResponse, ApiError>, deleted_vclock: bool) -> Value {
    match r {
        Ok(GetResponse::Found(obj)) => found(echo, &obj),
        Ok(GetResponse::NotFound { tombstone_context }) => {
            let mut m = echo.result("not_found");
            if let Some(vv) = tombstone_context.filter(|_| deleted_vclock) {
                m.insert("vclock".into(), context::to_base64(&vv).into());
            }
            Value::Object(m)
        }
        Err(e) => failed(echo, e),
    }
}

/// A multi-put's result.
pub fn written(echo: Echo, r: Result<PutResponse, ApiError>) -> Value {
    match r {
        Ok(PutResponse {
            object: Some(obj), ..
        }) => found(echo, &obj),
        Ok(PutResponse { object: None, .. }) => Value::Object(echo.result("ok")),
        Err(e) => failed(echo, e),
    }
}

/// A multi-delete's result.
pub fn deleted(echo: Echo, r: Result<DeleteOutcome, ApiError>) -> Value {
    match r {
        Ok(DeleteOutcome::Deleted) => Value::Object(echo.result("ok")),
        Ok(DeleteOutcome::NotFound) => Value::Object(echo.result("not_found")),
        Err(e) => failed(echo, e),
    }
}

fn found(echo: Echo, obj: &RiakObject) -> Value {
    let mut m = echo.result("ok");
    m.insert("vclock".into(), context::to_base64(&obj.vv).into());
    let siblings = visible(obj).map(sibling).collect();
    m.insert("siblings".into(), Value::Array(siblings));
    Value::Object(m)
}

fn failed(echo: Echo, e: ApiError) -> Value {
    let mut m = echo.result("error");
    m.insert("error".into(), e.message.trim_end().into());
    m.insert("http_status".into(), e.status.as_u16().into());
    Value::Object(m)
}

/// The contents shown: tombstones are hidden unless every sibling is one,
/// as a single get and the PB answers show them.
fn visible(obj: &RiakObject) -> impl Iterator<Item = &Content> {
    let all_deleted = obj.contents().all(|c| c.meta.deleted);
    obj.contents()
        .filter(move |c| all_deleted || !c.meta.deleted)
}

fn sibling(c: &Content) -> Value {
    let meta = &c.meta;
    let mut m = Map::new();
    bytes_into(&mut m, "value", &c.value);
    let content_type = meta.content_type.as_deref();
    let content_type = content_type.unwrap_or(b"application/octet-stream");
    m.insert("content_type".into(), name_text(content_type).into());
    if let Some(charset) = &meta.charset {
        m.insert("charset".into(), name_text(charset).into());
    }
    if let Some(encoding) = &meta.content_encoding {
        m.insert("content_encoding".into(), name_text(encoding).into());
    }
    m.insert("vtag".into(), name_text(&meta.vtag).into());
    let us = meta.last_modified_us;
    m.insert("last_modified".into(), http_date(us).into());
    m.insert("last_modified_us".into(), us.into());
    if !meta.user_meta.is_empty() {
        let pairs = meta.user_meta.iter();
        let usermeta = pairs.map(|(k, v)| (name_text(k), Value::String(name_text(v))));
        m.insert("usermeta".into(), Value::Object(usermeta.collect()));
    }
    if !meta.indexes.is_empty() {
        m.insert("indexes".into(), indexes(&meta.indexes));
    }
    if !meta.links.is_empty() {
        let links = meta.links.iter().map(|l| {
            json!({
                "bucket": name_text(&l.bucket),
                "key": name_text(&l.key),
                "tag": name_text(&l.tag),
            })
        });
        m.insert("links".into(), Value::Array(links.collect()));
    }
    if meta.deleted {
        m.insert("deleted".into(), true.into());
    }
    Value::Object(m)
}

/// `{"field": ["term", …]}`, terms in stored order.
fn indexes(entries: &[(Vec<u8>, Vec<u8>)]) -> Value {
    let mut m = Map::new();
    for (field, term) in entries {
        let terms = m
            .entry(name_text(field))
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = terms {
            list.push(name_text(term).into());
        }
    }
    Value::Object(m)
}

/// `name` with the bytes as text when UTF-8, else `name_base64`.
fn bytes_into(m: &mut Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => m.insert(name.into(), text.into()),
        Err(_) => m.insert(format!("{name}_base64"), STANDARD.encode(bytes).into()),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn bytes_go_out_as_text_or_base64() {
        let echo = Echo::Key(vec![0xff, 0]);
        let v = deleted(echo, Ok(DeleteOutcome::NotFound));
        assert_eq!(v, json!({"key_base64": "/wA=", "status": "not_found"}));
        let e = ApiError::new(StatusCode::BAD_REQUEST, "key must not be empty\n");
        let v = deleted(Echo::Key(b"k".to_vec()), Err(e));
        assert_eq!(
            v,
            json!({"key": "k", "status": "error", "error": "key must not be empty",
                   "http_status": 400})
        );
        assert_eq!(Echo::given(None, Some("!!")), Echo::Base64("!!".into()));
        assert_eq!(Echo::given(None, Some("aw==")), Echo::Key(b"k".to_vec()));
        assert_eq!(Echo::given(None, None), Echo::Nothing);
    }

    #[test]
    fn siblings_carry_their_metadata() {
        let mut c = Content::new(vec![1, 2, 0xff]);
        c.meta.content_type = Some(b"application/x".to_vec());
        c.meta.user_meta = vec![(b"m".to_vec(), b"v".to_vec())];
        c.meta.indexes = vec![
            (b"a_bin".to_vec(), b"x".to_vec()),
            (b"a_bin".to_vec(), b"y".to_vec()),
        ];
        c.meta.vtag = b"t".to_vec();
        let v = sibling(&c);
        assert_eq!(v["value_base64"], "AQL/");
        assert_eq!(v["content_type"], "application/x");
        assert_eq!(v["usermeta"], json!({"m": "v"}));
        assert_eq!(v["indexes"], json!({"a_bin": ["x", "y"]}));
        assert_eq!(v["last_modified_us"], 0);
        assert!(v.get("links").is_none() && v.get("deleted").is_none());
    }
}
