//! Object answers shared by GET and PUT-with-returnbody: one content with
//! its headers and value, or siblings as 300 Multiple Choices in
//! text/plain (a list of vtags) or multipart/mixed (every sibling).

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use eddy_object::{Content, RiakObject, VersionVector, base62, context};

use super::accept;
use super::error::ApiError;
use super::headers::{content_headers, http_date, quoted};
use super::multipart;
use super::routes::Target;

/// Which of an object's contents an answer shows.
#[derive(Clone, Copy, Debug)]
pub enum Selection<'a> {
    One(&'a Content),
    Siblings,
}

/// Picks the content to show: the sibling named by `vtag` (404 if none
/// is), the only sibling, or all of them.
pub fn select<'a>(obj: &'a RiakObject, vtag: Option<&str>) -> Result<Selection<'a>, ApiError> {
    if let Some(tag) = vtag {
        return obj
            .contents()
            .find(|c| c.meta.vtag == tag.as_bytes())
            .map(Selection::One)
            .ok_or_else(ApiError::not_found);
    }
    match obj.siblings.as_slice() {
        [one] => Ok(Selection::One(&one.content)),
        _ => Ok(Selection::Siblings),
    }
}

/// The entity tag and last-modified time of what is shown: the content's
/// own, or for siblings a tag derived from the causal context and the
/// newest sibling's time.
pub fn validators(obj: &RiakObject, sel: Selection<'_>) -> (Vec<u8>, u64) {
    match sel {
        Selection::One(c) => (c.meta.vtag.clone(), c.meta.last_modified_us),
        Selection::Siblings => (siblings_etag(&obj.vv).into_bytes(), obj.last_modified_us()),
    }
}

/// The entity tag of a sibling set: the xxh3 of its causal context, in
/// base 62. A function of the version vector alone, the same on every node
/// and across Rust releases (std's `DefaultHasher` promises neither), so a
/// client's `If-None-Match` keeps matching.
fn siblings_etag(vv: &VersionVector) -> String {
    base62::encode_u64(xxhash_rust::xxh3::xxh3_64(&context::to_bytes(vv)))
}

/// The answer showing `sel` of `obj`; `status` is used for one content
/// (siblings are always 300).
pub fn object_response(
    target: &Target,
    obj: &RiakObject,
    sel: Selection<'_>,
    accept_header: Option<&str>,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let mut resp = match sel {
        Selection::One(c) => one(target, c, status)?,
        Selection::Siblings => siblings(target, obj, accept_header)?,
    };
    set(
        resp.headers_mut(),
        "x-riak-vclock",
        context::to_base64(&obj.vv).as_bytes(),
    );
    Ok(resp)
}

/// The most header fields an object answer carries. An object stored
/// within the metadata limits never comes near it; one stored before them
/// (or merged from many siblings) is refused with a 500 rather than
/// overflowing the header map.
pub const HEADER_FIELDS_MAX: usize = 16_384;

fn one(target: &Target, c: &Content, status: StatusCode) -> Result<Response, ApiError> {
    let headers = content_headers(target.api, &target.bucket, c);
    if headers.len() > HEADER_FIELDS_MAX {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "the object's metadata needs {} header fields, more than the {HEADER_FIELDS_MAX} \
                 an HTTP answer may carry; read it over PB\n",
                headers.len()
            ),
        ));
    }
    let mut resp = Response::new(Body::from(c.value.clone()));
    *resp.status_mut() = status;
    for (name, value) in headers {
        set(resp.headers_mut(), &name, &value);
    }
    Ok(resp)
}

fn siblings(
    target: &Target,
    obj: &RiakObject,
    accept_header: Option<&str>,
) -> Result<Response, ApiError> {
    let provided = ["text/plain", "multipart/mixed"];
    let chosen = accept::choose(&provided, accept_header).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_ACCEPTABLE,
            "siblings can be served as text/plain or multipart/mixed\n",
        )
    })?;
    let (body, content_type) = match chosen {
        "multipart/mixed" => {
            let contents: Vec<&Content> = obj.contents().collect();
            let m = multipart::encode(target.api, &target.bucket, contents.into_iter());
            let ct = format!("multipart/mixed; boundary={}", m.boundary);
            (m.body, ct)
        }
        _ => (sibling_list(obj), "text/plain".to_string()),
    };
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::MULTIPLE_CHOICES;
    let headers = resp.headers_mut();
    set(headers, "content-type", content_type.as_bytes());
    let (etag, lm) = validators(obj, Selection::Siblings);
    set(headers, "etag", &quoted(&etag));
    set(headers, "last-modified", http_date(lm).as_bytes());
    Ok(resp)
}

/// `Siblings:\n` and one vtag per line.
fn sibling_list(obj: &RiakObject) -> Vec<u8> {
    let mut out = b"Siblings:\n".to_vec();
    for c in obj.contents() {
        out.extend_from_slice(&c.meta.vtag);
        out.push(b'\n');
    }
    out
}

/// The 404 for a missing object; a tombstone's context comes along with
/// `X-Riak-Deleted: true`, as Riak sends it.
pub fn not_found(tombstone: Option<&VersionVector>) -> Response {
    let mut resp = ApiError::not_found().into_response();
    if let Some(vv) = tombstone {
        set(
            resp.headers_mut(),
            "x-riak-vclock",
            context::to_base64(vv).as_bytes(),
        );
        set(resp.headers_mut(), "x-riak-deleted", b"true");
    }
    resp
}

/// Sets a header, skipping (with a log line) a value HTTP cannot carry,
/// such as user metadata written over PB with a newline in it, or one past
/// the header map's capacity (never a panic).
pub fn set(headers: &mut HeaderMap, name: &str, value: &[u8]) {
    let (Ok(n), Ok(v)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_bytes(value),
    ) else {
        tracing::debug!(name, "header not representable in HTTP; skipped");
        return;
    };
    if headers.try_insert(n, v).is_err() {
        tracing::warn!(name, "header map full; header skipped");
    }
}

/// The `Accept` header as text, if present and readable.
pub fn accept_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::Actor;

    /// The tag is pinned: it must not move with the compiler or the node.
    #[test]
    fn a_sibling_sets_etag_is_a_pinned_function_of_its_context() {
        let vv = VersionVector::from_entries([(Actor(1), 2), (Actor(0x00ff_00ff), 7)]);
        assert_eq!(siblings_etag(&vv), "CNukNH0J8R1");
        assert_eq!(siblings_etag(&vv), siblings_etag(&vv.clone()));
        assert_ne!(siblings_etag(&vv), siblings_etag(&VersionVector::new()));
    }
}
