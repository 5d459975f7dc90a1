//! Conditional request headers (`If-Match`, `If-None-Match`,
//! `If-Modified-Since`, `If-Unmodified-Since`) judged as webmachine's
//! decision graph judges them for Riak: a failed `If-Match` or
//! `If-Unmodified-Since` is 412; a matching `If-None-Match` is 304 for
//! GET/HEAD and 412 otherwise; an unmodified `If-Modified-Since` is 304
//! for GET/HEAD. Dates compare at whole seconds, as HTTP dates carry.

use axum::http::{HeaderMap, header};

use super::headers::parse_http_date;

/// What the conditions say about the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Proceed,
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

/// The current version of a resource, as conditions see it.
#[derive(Clone, Copy, Debug)]
pub struct Current<'a> {
    pub etag: &'a [u8],
    pub last_modified_us: u64,
}

/// True when the request carries a condition other than
/// `If-None-Match: *` (which a PUT makes atomic instead).
pub fn needs_current(headers: &HeaderMap) -> bool {
    let none_match = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes().trim_ascii() != b"*");
    none_match
        || headers.contains_key(header::IF_MATCH)
        || headers.contains_key(header::IF_UNMODIFIED_SINCE)
}

/// True for `If-None-Match: *`.
pub fn is_create_only(headers: &HeaderMap) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes().trim_ascii() == b"*")
}

/// Judges the conditions; `safe` is true for GET and HEAD.
pub fn evaluate(headers: &HeaderMap, current: Option<Current<'_>>, safe: bool) -> Verdict {
    let Some(cur) = current else {
        return match headers.get(header::IF_MATCH) {
            Some(_) => Verdict::Failed,
            None => Verdict::Proceed,
        };
    };
    if let Some(v) = headers.get(header::IF_MATCH)
        && !tag_listed(v.as_bytes(), cur.etag)
    {
        return Verdict::Failed;
    }
    if let Some(date) = date_header(headers, header::IF_UNMODIFIED_SINCE)
        && secs(cur.last_modified_us) > date
    {
        return Verdict::Failed;
    }
    if let Some(v) = headers.get(header::IF_NONE_MATCH) {
        if tag_listed(v.as_bytes(), cur.etag) {
            return if safe {
                Verdict::NotModified
            } else {
                Verdict::Failed
            };
        }
        return Verdict::Proceed;
    }
    if safe
        && let Some(date) = date_header(headers, header::IF_MODIFIED_SINCE)
        && secs(cur.last_modified_us) <= date
    {
        return Verdict::NotModified;
    }
    Verdict::Proceed
}

/// True when `list` is `*` or names `etag` (quoted or not, weak or not).
fn tag_listed(list: &[u8], etag: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(list) else {
        return false;
    };
    text.split(',').any(|t| {
        let t = t.trim();
        let t = t.strip_prefix("W/").unwrap_or(t);
        t == "*" || t.trim_matches('"').as_bytes() == etag
    })
}

fn date_header(headers: &HeaderMap, name: header::HeaderName) -> Option<u64> {
    let text = headers.get(name)?.to_str().ok()?;
    parse_http_date(text).map(secs)
}

fn secs(us: u64) -> u64 {
    us / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::headers::http_date;
    use axum::http::HeaderValue;

    fn with(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn judges_like_webmachine() {
        let lm = 1_700_000_000_000_000;
        let cur = Some(Current {
            etag: b"abc",
            last_modified_us: lm,
        });
        let inm = with(header::IF_NONE_MATCH, "\"abc\"");
        assert_eq!(evaluate(&inm, cur, true), Verdict::NotModified);
        assert_eq!(evaluate(&inm, cur, false), Verdict::Failed);
        let star = with(header::IF_NONE_MATCH, "*");
        assert_eq!(evaluate(&star, cur, false), Verdict::Failed);
        assert_eq!(evaluate(&star, None, false), Verdict::Proceed);
        let im = with(header::IF_MATCH, "\"zzz\"");
        assert_eq!(evaluate(&im, cur, false), Verdict::Failed);
        assert_eq!(evaluate(&im, None, false), Verdict::Failed);
        let im = with(header::IF_MATCH, "\"zzz\", \"abc\"");
        assert_eq!(evaluate(&im, cur, false), Verdict::Proceed);
        let ims = with(header::IF_MODIFIED_SINCE, &http_date(lm));
        assert_eq!(evaluate(&ims, cur, true), Verdict::NotModified);
        let ims = with(header::IF_MODIFIED_SINCE, &http_date(lm - 5_000_000));
        assert_eq!(evaluate(&ims, cur, true), Verdict::Proceed);
        let ius = with(header::IF_UNMODIFIED_SINCE, &http_date(lm - 5_000_000));
        assert_eq!(evaluate(&ius, cur, false), Verdict::Failed);
        assert!(needs_current(&ius));
        assert!(!needs_current(&star) && is_create_only(&star));
    }
}
