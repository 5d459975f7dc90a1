//! Riak's object headers, both ways: a request's `Content-Type` (with
//! `charset`), `Content-Encoding`, `X-Riak-Meta-*`, `X-Riak-Index-*`,
//! `Link` and `X-Riak-Vclock` become a [`Content`] and a causal context;
//! a stored [`Content`] becomes the same headers plus `ETag` and
//! `Last-Modified` on the way out.
//!
//! User metadata is stored without its `X-Riak-Meta-` prefix (the form PB
//! clients use), so both APIs see the same names. Index fields are stored
//! lower-cased, `_int` terms in canonical decimal.

use std::time::{Duration, UNIX_EPOCH};

use axum::http::HeaderMap;
use bytes::Bytes;
use eddy_model::BucketRef;
use eddy_model::index::term::canonical_entry;
use eddy_object::{Content, Link, Metadata, Pairs, VersionVector, context};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::error::ApiError;
use super::params::unquote_plus;
use super::routes::Api;
use axum::http::StatusCode;

pub const VCLOCK: &str = "x-riak-vclock";
pub const META_PREFIX: &str = "x-riak-meta-";
pub const INDEX_PREFIX: &str = "x-riak-index-";
pub const DELETED: &str = "x-riak-deleted";
pub const IF_NOT_MODIFIED: &str = "x-riak-if-not-modified";

/// What stays unescaped in bucket, key and tag names inside URLs.
const URL_NAME: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes a bucket, key or tag for a path.
pub fn url_name(name: &[u8]) -> String {
    percent_encoding::percent_encode(name, URL_NAME).to_string()
}

/// Percent-encodes a UTF-8 name (a bucket type) for a path.
pub fn url_text(name: &str) -> String {
    utf8_percent_encode(name, URL_NAME).to_string()
}

/// Whether the request's `Content-Type` names `application/json`
/// (parameters ignored); `None` when it has none.
pub fn is_json(headers: &HeaderMap) -> Option<bool> {
    let ct = headers.get(axum::http::header::CONTENT_TYPE)?;
    let media = ct.to_str().unwrap_or("").split(';').next().unwrap_or("");
    Some(media.trim().eq_ignore_ascii_case("application/json"))
}

/// The media type and charset of a PUT; Riak requires the header.
pub fn content_type(headers: &HeaderMap) -> Result<(Vec<u8>, Option<Vec<u8>>), ApiError> {
    let Some(raw) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return Err(ApiError::bad_request("Missing Content-Type request header"));
    };
    let text = std::str::from_utf8(raw.as_bytes())
        .map_err(|_| ApiError::bad_request("Content-Type is not valid UTF-8\n"))?;
    let mut parts = text.split(';');
    let media = parts.next().unwrap_or("").trim();
    let valid = media
        .split_once('/')
        .is_some_and(|(t, s)| !t.is_empty() && !s.is_empty() && !s.contains('/'));
    if !valid {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("\"{media}\" is not a valid media type for the Content-type header.\n"),
        ));
    }
    let charset = parts
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"').as_bytes().to_vec());
    Ok((media.as_bytes().to_vec(), charset))
}

/// The content a PUT describes: its value and every metadata header.
pub fn content_from_request(
    headers: &HeaderMap,
    value: Bytes,
    api: Api,
) -> Result<Content, ApiError> {
    let (media, charset) = content_type(headers)?;
    let meta = Metadata {
        content_type: Some(media),
        charset,
        content_encoding: headers
            .get(axum::http::header::CONTENT_ENCODING)
            .map(|v| v.as_bytes().to_vec()),
        user_meta: user_meta(headers),
        links: links(headers, api)?,
        indexes: indexes(headers)?,
        ..Metadata::default()
    };
    Ok(Content {
        value: value.to_vec(),
        meta,
    })
}

/// A causal context header (`X-Riak-Vclock` or `X-Riak-If-Not-Modified`).
pub fn context_header(headers: &HeaderMap, name: &str) -> Result<Option<VersionVector>, ApiError> {
    let Some(raw) = headers.get(name) else {
        return Ok(None);
    };
    let text = std::str::from_utf8(raw.as_bytes())
        .map_err(|_| ApiError::bad_request(format!("{name} is not valid UTF-8\n")))?;
    context::from_base64(text)
        .map(Some)
        .map_err(|e| ApiError::bad_request(format!("Bad {name} header: {e}\n")))
}

/// `X-Riak-Meta-*` pairs, names without the prefix, in request order.
pub fn user_meta(headers: &HeaderMap) -> Pairs {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let key = name.as_str().strip_prefix(META_PREFIX)?;
            Some((key.as_bytes().to_vec(), value.as_bytes().to_vec()))
        })
        .collect()
}

/// `X-Riak-Index-*` entries: values split on a comma followed by a space
/// (as Riak does); fields must end in `_bin` or `_int`, and `_int` terms
/// must be integers.
pub fn indexes(headers: &HeaderMap) -> Result<Pairs, ApiError> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (name, value) in headers {
        let Some(field) = name.as_str().strip_prefix(INDEX_PREFIX) else {
            continue;
        };
        for term in split_index_values(value.as_bytes()) {
            match index_term(field, term) {
                Ok(t) => out.push((field.as_bytes().to_vec(), t)),
                Err(e) => errors.push(e),
            }
        }
    }
    if !errors.is_empty() {
        errors.sort();
        errors.dedup();
        return Err(ApiError::bad_request(errors.concat()));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn split_index_values(raw: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + 1 < raw.len() {
        if raw[i] == b',' && raw[i + 1].is_ascii_whitespace() {
            parts.push(&raw[start..i]);
            start = i + 2;
            i += 2;
        } else {
            i += 1;
        }
    }
    parts.push(&raw[start..]);
    parts
}

/// An entry as an object keeps it, or Riak's text for why not.
fn index_term(field: &str, term: &[u8]) -> Result<Vec<u8>, String> {
    canonical_entry(field.as_bytes(), term)
        .map(|(_, t)| t)
        .map_err(|e| format!("{e}\n"))
}

/// Parses `Link` headers: `</riak/B/K>; riaktag="T"` or
/// `</buckets/B/keys/K>; riaktag="T"` entries, comma-separated. A
/// `rel="up"` link to a bucket is accepted and ignored.
pub fn links(headers: &HeaderMap, api: Api) -> Result<Vec<Link>, ApiError> {
    let mut out = Vec::new();
    for value in headers.get_all(axum::http::header::LINK) {
        let text = std::str::from_utf8(value.as_bytes()).map_err(|_| link_error(api))?;
        for entry in text.split(',').filter(|e| !e.trim().is_empty()) {
            if let Some(link) = parse_link(entry.trim()).ok_or_else(|| link_error(api))? {
                out.push(link);
            }
        }
    }
    Ok(out)
}

/// `Some(Some(link))` for a key link, `Some(None)` for a bucket `rel`
/// link, `None` when malformed.
fn parse_link(entry: &str) -> Option<Option<Link>> {
    let rest = entry.strip_prefix('<')?;
    let (path, params) = rest.split_once('>')?;
    let param = params.trim_start().strip_prefix(';')?.trim();
    let (name, quoted) = param.split_once('=')?;
    let value = quoted.trim().strip_prefix('"')?.strip_suffix('"')?;
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match (name.trim(), segments.as_slice()) {
        ("rel", ["riak", _] | ["buckets", _]) => Some(None),
        ("riaktag", ["riak", b, k] | ["buckets", b, "keys", k]) => Some(Some(Link {
            bucket: unquote_plus(b),
            key: unquote_plus(k),
            tag: unquote_plus(value),
        })),
        ("riaktag", ["types", _, "buckets", b, "keys", k]) => Some(Some(Link {
            bucket: unquote_plus(b),
            key: unquote_plus(k),
            tag: unquote_plus(value),
        })),
        _ => None,
    }
}

fn link_error(api: Api) -> ApiError {
    let form = match api {
        Api::Legacy => "</riak/BUCKET/KEY>; riaktag=\"TAG\"",
        _ => "</buckets/BUCKET/keys/KEY>; riaktag=\"TAG\"",
    };
    ApiError::bad_request(format!(
        "Invalid Link header. Links must be of the form\n{form}\n"
    ))
}

/// The path of an object in `api`'s URL style.
pub fn object_path(api: Api, bucket: &BucketRef, key: &[u8]) -> String {
    let (b, k) = (url_name(&bucket.bucket), url_name(key));
    match api {
        Api::Legacy => format!("/riak/{b}/{k}"),
        Api::Buckets => format!("/buckets/{b}/keys/{k}"),
        Api::Typed => format!(
            "/types/{}/buckets/{b}/keys/{k}",
            url_text(&bucket.bucket_type)
        ),
    }
}

/// The `Link` header value: the `up` link to the bucket, then the
/// object's links.
pub fn link_header(api: Api, bucket: &BucketRef, links: &[Link]) -> String {
    let b = url_name(&bucket.bucket);
    let up = match api {
        Api::Legacy => format!("</riak/{b}>; rel=\"up\""),
        Api::Buckets => format!("</buckets/{b}>; rel=\"up\""),
        Api::Typed => format!(
            "</types/{}/buckets/{b}>; rel=\"up\"",
            url_text(&bucket.bucket_type)
        ),
    };
    let mut parts = vec![up];
    for l in links {
        let path = match api {
            Api::Legacy => format!("/riak/{}/{}", url_name(&l.bucket), url_name(&l.key)),
            _ => format!("/buckets/{}/keys/{}", url_name(&l.bucket), url_name(&l.key)),
        };
        parts.push(format!("<{path}>; riaktag=\"{}\"", url_name(&l.tag)));
    }
    parts.join(", ")
}

/// An HTTP date (RFC 1123) from microseconds since the epoch.
pub fn http_date(us: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_micros(us))
}

/// Parses an HTTP date to microseconds since the epoch.
pub fn parse_http_date(text: &str) -> Option<u64> {
    let t = httpdate::parse_http_date(text.trim()).ok()?;
    let d = t.duration_since(UNIX_EPOCH).ok()?;
    Some(d.as_micros() as u64)
}

/// The content type a stored content is served with.
pub fn served_content_type(meta: &Metadata) -> Vec<u8> {
    let mut out = meta
        .content_type
        .clone()
        .unwrap_or_else(|| b"application/octet-stream".to_vec());
    if let Some(cs) = &meta.charset {
        out.extend_from_slice(b"; charset=");
        out.extend_from_slice(cs);
    }
    out
}

/// The headers describing one stored content, in Riak's names, with
/// repeated index fields joined by ", " as Riak merges them.
pub fn content_headers(api: Api, bucket: &BucketRef, content: &Content) -> Vec<(String, Vec<u8>)> {
    let meta = &content.meta;
    let mut out = vec![("Content-Type".to_string(), served_content_type(meta))];
    if let Some(enc) = &meta.content_encoding {
        out.push(("Content-Encoding".to_string(), enc.clone()));
    }
    let link = link_header(api, bucket, &meta.links);
    out.push(("Link".to_string(), link.into_bytes()));
    out.push(("ETag".to_string(), quoted(&meta.vtag)));
    let lm = http_date(meta.last_modified_us);
    out.push(("Last-Modified".to_string(), lm.into_bytes()));
    if meta.deleted {
        out.push(("X-Riak-Deleted".to_string(), b"true".to_vec()));
    }
    for (k, v) in &meta.user_meta {
        let name = format!("X-Riak-Meta-{}", String::from_utf8_lossy(k));
        out.push((name, v.clone()));
    }
    out.extend(index_headers(&meta.indexes));
    out
}

fn index_headers(indexes: &Pairs) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for (field, term) in indexes {
        let name = format!("X-Riak-Index-{}", String::from_utf8_lossy(field));
        match out.last_mut() {
            Some((last, joined)) if *last == name => {
                joined.extend_from_slice(b", ");
                joined.extend_from_slice(term);
            }
            _ => out.push((name, term.clone())),
        }
    }
    out
}

/// `"tag"`: an entity tag as sent in `ETag`.
pub fn quoted(tag: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(tag.len() + 2);
    out.push(b'"');
    out.extend_from_slice(tag);
    out.push(b'"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn request_headers_become_content() {
        let h = map(&[
            ("content-type", "text/plain; charset=utf-8"),
            ("x-riak-meta-color", "blue"),
            ("x-riak-index-age_int", "042, 7"),
            ("x-riak-index-tag_bin", "a,b"),
            (
                "link",
                "</riak/b/k%20x>; riaktag=\"friend\", </buckets/b>; rel=\"up\"",
            ),
        ]);
        let c = content_from_request(&h, Bytes::from_static(b"v"), Api::Legacy).unwrap();
        assert_eq!(c.meta.content_type.as_deref(), Some(&b"text/plain"[..]));
        assert_eq!(c.meta.charset.as_deref(), Some(&b"utf-8"[..]));
        assert_eq!(
            c.meta.user_meta,
            vec![(b"color".to_vec(), b"blue".to_vec())]
        );
        assert_eq!(
            c.meta.indexes,
            vec![
                (b"age_int".to_vec(), b"42".to_vec()),
                (b"age_int".to_vec(), b"7".to_vec()),
                (b"tag_bin".to_vec(), b"a,b".to_vec()),
            ]
        );
        assert_eq!(c.meta.links[0].key, b"k x");
        assert_eq!(c.meta.links.len(), 1);
    }

    #[test]
    fn bad_headers_are_refused_with_riak_messages() {
        let bad_int = map(&[("content-type", "a/b"), ("x-riak-index-n_int", "x1")]);
        let e = content_from_request(&bad_int, Bytes::new(), Api::Buckets).unwrap_err();
        assert_eq!(e.message, "Could not parse field 'n_int', value 'x1'.\n");
        let bad_field = map(&[("content-type", "a/b"), ("x-riak-index-n", "1")]);
        let e = content_from_request(&bad_field, Bytes::new(), Api::Buckets).unwrap_err();
        assert!(e.message.starts_with("Unknown field type"));
        let bad_link = map(&[("content-type", "a/b"), ("link", "<nope>")]);
        let e = content_from_request(&bad_link, Bytes::new(), Api::Buckets).unwrap_err();
        assert!(e.message.starts_with("Invalid Link header"));
        assert!(content_type(&HeaderMap::new()).is_err());
        let e = content_type(&map(&[("content-type", "text")])).unwrap_err();
        assert_eq!(e.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[test]
    fn dates_roundtrip_at_second_precision() {
        let us = 1_700_000_000_000_000;
        assert_eq!(http_date(us), "Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(parse_http_date(&http_date(us)), Some(us));
    }
}
