//! Eddy's multi-key requests over HTTP (design note 016):
//! `POST /buckets/B/multi/get`, `…/multi/put`, `…/multi/delete` (also under
//! `/types/T`), a JSON body naming the keys or objects, a JSON answer with
//! one result per item in request order ([`super::multi_json`]).
//!
//! Options are the single operations' query parameters (`r`, `pr`, `w`,
//! `dw`, `pw`, `rw`, `basic_quorum`, `notfound_ok`, `deletedvclock`,
//! `returnbody`, `timeout`), checked as they check them (`timeout`, in ms,
//! bounds the whole request; 0 means the default); `If-None-Match: *`
//! makes every put a create. Other conditional headers are refused: they
//! name one object's version.
//!
//! What concerns the whole request is answered as an error: 405 for a
//! method other than POST, 415 for a body that says it is not JSON, 413
//! for one over the body limit, 400 for a body that is not JSON of the
//! documented shape (naming the item at fault) or names too many items,
//! and the single operations' answers for a bad bucket, type or quorum.
//! What concerns one item (bad base64, a bad vclock or index entry, and
//! everything the node refuses for one key) is that item's `error` result.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use eddy_model::index::term::canonical_entry;
use eddy_model::{
    MultiDeleteKey, MultiDeleteRequest, MultiGetRequest, MultiPutObject, MultiPutRequest,
};
use eddy_object::{Content, Link, Metadata, VersionVector, context};
use serde::Deserialize;
use serde_json::Value;

use super::conditional;
use super::error::ApiError;
use super::keys::json_response;
use super::multi_json::{self, Echo};
use super::params::Query;
use super::routes::Target;
use super::server::{App, read_body};
use crate::items;

/// Which multi-key request a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiOp {
    Get,
    Put,
    Delete,
}

impl MultiOp {
    /// The operation named by the path segment after `multi`.
    pub fn from_segment(segment: &[u8]) -> Option<MultiOp> {
        match segment {
            b"get" => Some(MultiOp::Get),
            b"put" => Some(MultiOp::Put),
            b"delete" => Some(MultiOp::Delete),
            _ => None,
        }
    }
}

/// Answers a multi-key request.
pub async fn handle(
    app: &App,
    t: Target,
    op: MultiOp,
    query: &Query,
    req: Request,
) -> Result<Response, ApiError> {
    if req.method() != Method::POST {
        return Err(ApiError::method_not_allowed("POST"));
    }
    query.validate_all()?;
    let (parts, body) = req.into_parts();
    check_headers(&parts.headers)?;
    let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
    let results = match op {
        MultiOp::Get => get(app, t, query, &body).await?,
        MultiOp::Put => put(app, t, query, &parts.headers, &body).await?,
        MultiOp::Delete => delete(app, t, query, &body).await?,
    };
    let answer = serde_json::json!({ "results": results });
    Ok(json_response(Body::from(answer.to_string())))
}

fn check_headers(headers: &HeaderMap) -> Result<(), ApiError> {
    if super::headers::is_json(headers) == Some(false) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "multi-key requests must be sent as application/json\n",
        ));
    }
    if conditional::needs_current(headers) {
        return Err(ApiError::bad_request(
            "multi-key requests take no conditional headers but If-None-Match: *\n",
        ));
    }
    Ok(())
}

/// `{"keys":[KEY,...]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysBody {
    keys: Vec<Value>,
}

/// `{"objects":[OBJECT,...]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectsBody {
    objects: Vec<Value>,
}

/// A key given as an object, with the context a delete may carry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyObject {
    key: Option<String>,
    key_base64: Option<String>,
    vclock: Option<String>,
}

/// One object of a multi-put.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutObject {
    key: Option<String>,
    key_base64: Option<String>,
    value: Option<String>,
    value_base64: Option<String>,
    content_type: Option<String>,
    charset: Option<String>,
    content_encoding: Option<String>,
    vclock: Option<String>,
    #[serde(default)]
    usermeta: BTreeMap<String, String>,
    #[serde(default)]
    indexes: BTreeMap<String, Terms>,
    #[serde(default)]
    links: Vec<LinkObject>,
}

/// An index field's terms: one, or a list.
#[derive(Deserialize)]
#[serde(untagged)]
enum Terms {
    One(Term),
    Many(Vec<Term>),
}

/// A term as text or as an integer.
#[derive(Deserialize)]
#[serde(untagged)]
enum Term {
    Text(String),
    Int(i64),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkObject {
    bucket: String,
    key: String,
    tag: String,
}

async fn get(app: &App, t: Target, query: &Query, body: &[u8]) -> Result<Vec<Value>, ApiError> {
    let items = parse_keys(body, false)?;
    let mut options = query.get_options()?;
    options.timeout_ms = whole_request_timeout(options.timeout_ms);
    let deleted_vclock = options.deleted_vclock;
    let echoes: Vec<Echo> = items.iter().map(|i| i.echo.clone()).collect();
    let (keys, failed) = items::split(items.into_iter().map(|i| i.key.map(|(k, _)| k)));
    let request = MultiGetRequest {
        bucket: t.bucket,
        keys,
        options,
    };
    let ran = app.node.multi_get(request).await?;
    let results = failed.join(ran, ApiError::from);
    Ok(echoes
        .into_iter()
        .zip(results)
        .map(|(echo, r)| multi_json::got(echo, r, deleted_vclock))
        .collect())
}

async fn put(
    app: &App,
    t: Target,
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Vec<Value>, ApiError> {
    let items = parse_objects(body)?;
    let mut options = query.put_options()?;
    options.timeout_ms = whole_request_timeout(options.timeout_ms);
    options.if_none_match = conditional::is_create_only(headers);
    let echoes: Vec<Echo> = items.iter().map(|i| i.echo.clone()).collect();
    let (objects, failed) = items::split(items.into_iter().map(|i| i.object));
    let request = MultiPutRequest {
        bucket: t.bucket,
        objects,
        options,
    };
    let ran = app.node.multi_put(request).await?;
    let results = failed.join(ran, ApiError::from);
    Ok(echoes
        .into_iter()
        .zip(results)
        .map(|(echo, r)| multi_json::written(echo, r))
        .collect())
}

async fn delete(app: &App, t: Target, query: &Query, body: &[u8]) -> Result<Vec<Value>, ApiError> {
    let items = parse_keys(body, true)?;
    let echoes: Vec<Echo> = items.iter().map(|i| i.echo.clone()).collect();
    let keys = items
        .into_iter()
        .map(|i| i.key.map(|(key, context)| MultiDeleteKey { key, context }));
    let (keys, failed) = items::split(keys);
    let mut options = query.delete_options()?;
    options.timeout_ms = whole_request_timeout(options.timeout_ms);
    let request = MultiDeleteRequest {
        bucket: t.bucket,
        keys,
        options,
    };
    let ran = app.node.multi_delete(request).await?;
    let results = failed.join(ran, ApiError::from);
    Ok(echoes
        .into_iter()
        .zip(results)
        .map(|(echo, r)| multi_json::deleted(echo, r))
        .collect())
}

/// One item of `keys`: how to name it in its result, and its key and
/// context, or why they do not decode.
struct KeyItem {
    echo: Echo,
    key: Result<(Vec<u8>, Option<VersionVector>), ApiError>,
}

/// Reads `{"keys":[...]}`; `with_context` lets a key object carry a
/// `vclock` (delete).
fn parse_keys(body: &[u8], with_context: bool) -> Result<Vec<KeyItem>, ApiError> {
    let parsed: KeysBody = parse_body(body, "{\"keys\":[...]}")?;
    parsed
        .keys
        .into_iter()
        .enumerate()
        .map(|(i, value)| key_item(i, value, with_context))
        .collect()
}

fn key_item(i: usize, value: Value, with_context: bool) -> Result<KeyItem, ApiError> {
    let o = match value {
        Value::String(text) => {
            return Ok(KeyItem {
                echo: Echo::Key(text.clone().into_bytes()),
                key: Ok((text.into_bytes(), None)),
            });
        }
        Value::Object(_) => serde_json::from_value::<KeyObject>(value)
            .map_err(|e| shape_error(&format!("keys[{i}]"), &e))?,
        _ => {
            return Err(ApiError::bad_request(format!(
                "keys[{i}]: a key is a string, or an object with \"key\" or \"key_base64\"\n"
            )));
        }
    };
    if o.vclock.is_some() && !with_context {
        return Err(ApiError::bad_request(format!(
            "keys[{i}]: \"vclock\" is taken by multi/delete only\n"
        )));
    }
    let echo = Echo::given(o.key.as_deref(), o.key_base64.as_deref());
    let key = bytes_field("key", o.key, o.key_base64).and_then(|key| {
        let context = o.vclock.as_deref().map(parse_vclock).transpose()?;
        Ok((key, context))
    });
    Ok(KeyItem { echo, key })
}

/// One item of `objects`: how to name it in its result, and the object,
/// or why it does not translate.
struct ObjectItem {
    echo: Echo,
    object: Result<MultiPutObject, ApiError>,
}

/// Reads `{"objects":[...]}`.
fn parse_objects(body: &[u8]) -> Result<Vec<ObjectItem>, ApiError> {
    let parsed: ObjectsBody = parse_body(body, "{\"objects\":[...]}")?;
    parsed
        .objects
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            let o: PutObject = serde_json::from_value(value)
                .map_err(|e| shape_error(&format!("objects[{i}]"), &e))?;
            let echo = Echo::given(o.key.as_deref(), o.key_base64.as_deref());
            Ok(ObjectItem {
                echo,
                object: put_object(o),
            })
        })
        .collect()
}

fn put_object(o: PutObject) -> Result<MultiPutObject, ApiError> {
    let key = bytes_field("key", o.key, o.key_base64)?;
    let value = bytes_field("value", o.value, o.value_base64)?;
    let context = o.vclock.as_deref().map(parse_vclock).transpose()?;
    let mut indexes = Vec::new();
    for (field, terms) in o.indexes {
        let terms = match terms {
            Terms::One(t) => vec![t],
            Terms::Many(ts) => ts,
        };
        for term in terms {
            let term = match term {
                Term::Text(t) => t.into_bytes(),
                Term::Int(n) => n.to_string().into_bytes(),
            };
            let entry = canonical_entry(field.as_bytes(), &term)
                .map_err(|e| ApiError::bad_request(format!("{e}\n")))?;
            indexes.push(entry);
        }
    }
    let meta = Metadata {
        content_type: Some(
            o.content_type
                .unwrap_or_else(|| "application/octet-stream".into())
                .into_bytes(),
        ),
        charset: o.charset.map(String::into_bytes),
        content_encoding: o.content_encoding.map(String::into_bytes),
        user_meta: o
            .usermeta
            .into_iter()
            .map(|(k, v)| (k.into_bytes(), v.into_bytes()))
            .collect(),
        links: o.links.into_iter().map(link).collect(),
        indexes,
        ..Metadata::default()
    };
    Ok(MultiPutObject {
        key,
        context,
        content: Content { value, meta },
    })
}

fn link(l: LinkObject) -> Link {
    Link {
        bucket: l.bucket.into_bytes(),
        key: l.key.into_bytes(),
        tag: l.tag.into_bytes(),
    }
}

/// The `timeout` of a multi-key request, which bounds all its keys
/// together: 0 means none was given, as it does for key listings, 2i and
/// every PB request, rather than a deadline already past.
fn whole_request_timeout(ms: Option<u64>) -> Option<u64> {
    ms.filter(|ms| *ms > 0)
}

/// Parses the body as `T`, or says what it should look like.
fn parse_body<T: for<'de> Deserialize<'de>>(body: &[u8], shape: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the body must be JSON of the form {shape}: {e}\n"))
    })
}

fn shape_error(at: &str, e: &serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("{at}: {e}\n"))
}

/// A byte field given as text (`name`) or base64 (`name_base64`): exactly
/// one of them.
fn bytes_field(
    name: &str,
    text: Option<String>,
    base64: Option<String>,
) -> Result<Vec<u8>, ApiError> {
    match (text, base64) {
        (Some(t), None) => Ok(t.into_bytes()),
        (None, Some(b)) => STANDARD
            .decode(b.as_bytes())
            .map_err(|e| ApiError::bad_request(format!("{name}_base64 is not base64: {e}\n"))),
        _ => Err(ApiError::bad_request(format!(
            "give exactly one of \"{name}\" and \"{name}_base64\"\n"
        ))),
    }
}

fn parse_vclock(text: &str) -> Result<VersionVector, ApiError> {
    context::from_base64(text).map_err(|e| ApiError::bad_request(format!("Bad vclock: {e}\n")))
}
