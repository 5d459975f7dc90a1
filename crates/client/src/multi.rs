//! Eddy's multi-key requests (design note 016) in protocol-neutral terms:
//! what one key's result says ([`KeyResult`], from a PB
//! `EddyKeyResult` or an HTTP JSON result), the JSON bodies the HTTP form
//! takes ([`get_body`], [`put_body`], [`delete_body`]) and reads
//! ([`parse_results`]), and the path it is sent to ([`path`]).
//!
//! [`crate::pb::PbClient`] sends the PB form; [`http_request`] the HTTP
//! form with the blocking client; the bench tool sends the same bodies
//! with its own HTTP client. Causal contexts are bytes here, as PB
//! carries them; HTTP carries them as base64, which this module converts.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use eddy_wire::proto::eddy::{EddyKeyResult, eddy_key_result::Status};
use serde_json::{Map, Value, json};

/// What one key's operation answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyStatus {
    /// Get: found. Put: written. Delete: a tombstone was written.
    Ok,
    /// Get: nothing live. Delete: nothing live to delete.
    NotFound,
    /// The key's operation failed ([`KeyResult::error`] says why).
    Error,
}

/// One sibling of a result: its value and content type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sibling {
    pub value: Vec<u8>,
    pub content_type: Option<String>,
}

/// One key's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyResult {
    pub key: Vec<u8>,
    pub status: KeyStatus,
    /// The siblings (get; put with return_body).
    pub siblings: Vec<Sibling>,
    /// The causal context, as bytes.
    pub vclock: Option<Vec<u8>>,
    /// Why the key failed.
    pub error: Option<String>,
}

impl KeyResult {
    /// A PB result.
    pub fn from_pb(r: EddyKeyResult) -> KeyResult {
        let status = match Status::try_from(r.status) {
            Ok(Status::Ok) => KeyStatus::Ok,
            Ok(Status::NotFound) => KeyStatus::NotFound,
            Ok(Status::Error) | Err(_) => KeyStatus::Error,
        };
        let siblings = r.content.into_iter().map(|c| Sibling {
            value: c.value,
            content_type: c
                .content_type
                .map(|t| String::from_utf8_lossy(&t).into_owned()),
        });
        KeyResult {
            key: r.key,
            status,
            siblings: siblings.collect(),
            vclock: r.vclock,
            error: r.errmsg.map(|e| String::from_utf8_lossy(&e).into_owned()),
        }
    }
}

/// One object of a multi-put.
#[derive(Clone, Copy, Debug)]
pub struct PutItem<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub content_type: &'a str,
    /// The context the value was read with, if any.
    pub vclock: Option<&'a [u8]>,
    /// Secondary-index entries: field, term.
    pub indexes: &'a [(&'a str, &'a str)],
}

/// Which multi-key request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiOp {
    Get,
    Put,
    Delete,
}

impl MultiOp {
    fn segment(self) -> &'static str {
        match self {
            MultiOp::Get => "get",
            MultiOp::Put => "put",
            MultiOp::Delete => "delete",
        }
    }
}

/// Why an HTTP multi-key answer could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MultiError {
    /// The request failed as a whole: the status and the server's text.
    #[error("HTTP {status}: {body}")]
    Refused { status: u16, body: String },
    /// The answer is not the documented JSON.
    #[error("bad multi-key answer: {0}")]
    BadAnswer(String),
    /// The connection failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// The path of a multi-key request on `bucket` (of `bucket_type`, or the
/// default type).
pub fn path(bucket_type: Option<&str>, bucket: &[u8], op: MultiOp) -> String {
    let bucket = percent(bucket);
    let op = op.segment();
    match bucket_type {
        Some(t) => format!(
            "/types/{}/buckets/{bucket}/multi/{op}",
            percent(t.as_bytes())
        ),
        None => format!("/buckets/{bucket}/multi/{op}"),
    }
}

/// Percent-encodes a path segment (all but unreserved characters).
fn percent(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for &b in name {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `{"keys":[…]}` for a multi-get.
pub fn get_body(keys: &[&[u8]]) -> String {
    let keys: Vec<Value> = keys.iter().map(|k| key_json(k, None)).collect();
    json!({ "keys": keys }).to_string()
}

/// `{"keys":[…]}` for a multi-delete: each key with its context, if any.
pub fn delete_body(keys: &[(&[u8], Option<&[u8]>)]) -> String {
    let keys: Vec<Value> = keys.iter().map(|(k, vc)| key_json(k, *vc)).collect();
    json!({ "keys": keys }).to_string()
}

/// `{"objects":[…]}` for a multi-put.
pub fn put_body(objects: &[PutItem<'_>]) -> String {
    let objects: Vec<Value> = objects.iter().map(object_json).collect();
    json!({ "objects": objects }).to_string()
}

fn key_json(key: &[u8], vclock: Option<&[u8]>) -> Value {
    let mut m = Map::new();
    bytes_into(&mut m, "key", key);
    if let Some(vc) = vclock {
        m.insert("vclock".into(), STANDARD.encode(vc).into());
    }
    Value::Object(m)
}

fn object_json(o: &PutItem<'_>) -> Value {
    let mut m = Map::new();
    bytes_into(&mut m, "key", o.key);
    bytes_into(&mut m, "value", o.value);
    m.insert("content_type".into(), o.content_type.into());
    if let Some(vc) = o.vclock {
        m.insert("vclock".into(), STANDARD.encode(vc).into());
    }
    if !o.indexes.is_empty() {
        let mut indexes = Map::new();
        for (field, term) in o.indexes {
            let terms = indexes
                .entry(field.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = terms {
                list.push(Value::String(term.to_string()));
            }
        }
        m.insert("indexes".into(), Value::Object(indexes));
    }
    Value::Object(m)
}

/// `name` as text when UTF-8, else `name_base64`.
fn bytes_into(m: &mut Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => m.insert(name.into(), text.into()),
        Err(_) => m.insert(format!("{name}_base64"), STANDARD.encode(bytes).into()),
    };
}

/// Reads `{"results":[…]}`.
pub fn parse_results(body: &[u8]) -> Result<Vec<KeyResult>, MultiError> {
    let bad = |what: &str| MultiError::BadAnswer(what.to_string());
    let answer: Value = serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?;
    let results = answer["results"]
        .as_array()
        .ok_or_else(|| bad("no results list"))?;
    results.iter().map(result_json).collect()
}

fn result_json(r: &Value) -> Result<KeyResult, MultiError> {
    let bad = |what: &str| MultiError::BadAnswer(what.to_string());
    let status = match r["status"].as_str() {
        Some("ok") => KeyStatus::Ok,
        Some("not_found") => KeyStatus::NotFound,
        Some("error") => KeyStatus::Error,
        _ => return Err(bad("a result without a known status")),
    };
    let siblings = match r["siblings"].as_array() {
        Some(list) => list.iter().map(sibling_json).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let vclock = match r["vclock"].as_str() {
        Some(text) => Some(decode(text).ok_or_else(|| bad("vclock is not base64"))?),
        None => None,
    };
    Ok(KeyResult {
        key: bytes_of(r, "key").unwrap_or_default(),
        status,
        siblings,
        vclock,
        error: r["error"].as_str().map(str::to_owned),
    })
}

fn sibling_json(s: &Value) -> Result<Sibling, MultiError> {
    let value = bytes_of(s, "value")
        .ok_or_else(|| MultiError::BadAnswer("a sibling without a value".into()))?;
    Ok(Sibling {
        value,
        content_type: s["content_type"].as_str().map(str::to_owned),
    })
}

/// The bytes of `name` (text) or `name_base64`.
fn bytes_of(v: &Value, name: &str) -> Option<Vec<u8>> {
    if let Some(text) = v[name].as_str() {
        return Some(text.as_bytes().to_vec());
    }
    decode(v[format!("{name}_base64").as_str()].as_str()?)
}

fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text.as_bytes()).ok()
}

/// Sends a multi-key request with the blocking HTTP client: `query` is
/// the single operations' parameters (`r=2&returnbody=true`), or empty.
pub fn http_request(
    addr: &str,
    bucket_type: Option<&str>,
    bucket: &[u8],
    op: MultiOp,
    query: &str,
    body: &str,
) -> Result<Vec<KeyResult>, MultiError> {
    let mut target = path(bucket_type, bucket, op);
    if !query.is_empty() {
        target = format!("{target}?{query}");
    }
    let headers = [("Content-Type", "application/json")];
    let resp = crate::http::request(addr, "POST", &target, &headers, body.as_bytes())?;
    if resp.status != 200 {
        return Err(MultiError::Refused {
            status: resp.status,
            body: resp.text(),
        });
    }
    parse_results(&resp.body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_wire::proto::RpbContent;

    #[test]
    fn bodies_name_bytes_as_text_or_base64() {
        let body: Value = serde_json::from_str(&get_body(&[b"a", &[0xff]])).unwrap();
        assert_eq!(
            body,
            json!({"keys": [{"key": "a"}, {"key_base64": "/w=="}]})
        );
        let body = delete_body(&[(b"a", Some(&[1, 2][..]))]);
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body, json!({"keys": [{"key": "a", "vclock": "AQI="}]}));
        let item = PutItem {
            key: b"k",
            value: &[0xfe],
            content_type: "application/octet-stream",
            vclock: None,
            indexes: &[("n_int", "1"), ("n_int", "2")],
        };
        let body: Value = serde_json::from_str(&put_body(&[item])).unwrap();
        assert_eq!(
            body,
            json!({"objects": [{"key": "k", "value_base64": "/g==",
                "content_type": "application/octet-stream", "indexes": {"n_int": ["1", "2"]}}]})
        );
        assert_eq!(path(None, b"a b", MultiOp::Get), "/buckets/a%20b/multi/get");
        assert_eq!(
            path(Some("t"), b"b", MultiOp::Delete),
            "/types/t/buckets/b/multi/delete"
        );
    }

    #[test]
    fn both_protocols_read_into_one_result() {
        let answer = json!({"results": [
            {"key": "a", "status": "ok", "vclock": "AQI=",
             "siblings": [{"value_base64": "/w==", "content_type": "x/y"}]},
            {"key_base64": "/w==", "status": "not_found"},
            {"key": "c", "status": "error", "error": "timeout", "http_status": 503},
        ]});
        let http = parse_results(answer.to_string().as_bytes()).unwrap();
        let pb = KeyResult::from_pb(EddyKeyResult {
            key: b"a".to_vec(),
            status: Status::Ok as i32,
            content: vec![RpbContent {
                value: vec![0xff],
                content_type: Some(b"x/y".to_vec()),
                ..Default::default()
            }],
            vclock: Some(vec![1, 2]),
            errmsg: None,
        });
        assert_eq!(http[0], pb);
        assert_eq!(
            (http[1].key.clone(), http[1].status),
            (vec![0xff], KeyStatus::NotFound)
        );
        assert_eq!(http[2].error.as_deref(), Some("timeout"));
        assert!(parse_results(b"{\"results\":[{\"status\":\"maybe\"}]}").is_err());
        assert!(parse_results(b"[]").is_err());
    }
}
