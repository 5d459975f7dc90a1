//! Conditional request headers (`If-Match`, `If-None-Match`,
//! `If-Modified-Since`, `If-Unmodified-Since`) judged as webmachine's
//! decision graph judges them for Riak: a failed `If-Match` or
//! `If-Unmodified-Since` is 412; a matching `If-None-Match` is 304 for
//! GET/HEAD and 412 otherwise; an unmodified `If-Modified-Since` is 304
//! for GET/HEAD. Dates compare at whole seconds, as HTTP dates carry.
//!
//! Besides HTTP's three date formats, an RFC 1123 date with a numeric
//! zone (`Sat, 01 Jan 2000 00:00:00 +0000`, what `date -R` prints) counts,
//! with its offset applied: Riak's date parser (Erlang's `httpd_util`)
//! reads such a date too, so clients send it. A date that still does not
//! parse is ignored, as HTTP says.

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
    parse_http_date(text)
        .or_else(|| parse_numeric_zone(text))
        .map(secs)
}

/// An RFC 1123 date whose zone is `+hhmm` or `-hhmm` instead of `GMT`, in
/// microseconds since the epoch (UTC).
fn parse_numeric_zone(text: &str) -> Option<u64> {
    let text = text.trim();
    let (date, zone) = text.rsplit_once(' ')?;
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1i64, &zone[1..]),
        b'-' => (-1i64, &zone[1..]),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i64 = digits[..2].parse().ok()?;
    let minutes: i64 = digits[2..].parse().ok()?;
    let offset_us = sign * (hours * 3600 + minutes * 60) * 1_000_000;
    let local = i64::try_from(parse_http_date(&format!("{date} GMT"))?).ok()?;
    u64::try_from(local.checked_sub(offset_us)?).ok()
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
        let zoned = with(
            header::IF_UNMODIFIED_SINCE,
            "Sat, 01 Jan 2000 00:00:00 +0000",
        );
        assert_eq!(evaluate(&zoned, cur, false), Verdict::Failed);
        assert!(!needs_current(&star) && is_create_only(&star));
    }

    #[test]
    fn numeric_zones_apply_their_offset() {
        let gmt = parse_http_date("Sat, 01 Jan 2000 12:00:00 GMT").unwrap();
        let zoned = |t: &str| parse_numeric_zone(t).unwrap();
        assert_eq!(zoned("Sat, 01 Jan 2000 12:00:00 +0000"), gmt);
        assert_eq!(zoned("Sat, 01 Jan 2000 13:30:00 +0130"), gmt);
        assert_eq!(zoned("Sat, 01 Jan 2000 07:00:00 -0500"), gmt);
        for bad in [
            "Sat, 01 Jan 2000 12:00:00 +00",
            "2000-01-01T00:00:00Z",
            "+0000",
            "",
        ] {
            assert_eq!(parse_numeric_zone(bad), None, "{bad}");
        }
    }
}
