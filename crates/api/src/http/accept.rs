//! Content negotiation as webmachine does it: the client's `Accept` entries
//! are taken in order of quality (ties keep their order), and the first
//! one that matches a provided type picks it (provided types are tried in
//! the resource's order). No `Accept` header picks the first provided.

/// One `Accept` entry.
#[derive(Debug, PartialEq)]
struct Range<'a> {
    media: &'a str,
    quality: f32,
}

/// The provided type to answer with, or `None` (406) if the client
/// accepts none of them.
pub fn choose<'p>(provided: &[&'p str], accept: Option<&str>) -> Option<&'p str> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return provided.first().copied();
    };
    let mut ranges: Vec<Range> = accept.split(',').filter_map(parse_range).collect();
    ranges.sort_by(|a, b| b.quality.total_cmp(&a.quality));
    ranges
        .iter()
        .filter(|r| r.quality > 0.0)
        .find_map(|r| provided.iter().copied().find(|p| matches(r.media, p)))
}

fn parse_range(entry: &str) -> Option<Range<'_>> {
    let mut parts = entry.split(';');
    let media = parts.next()?.trim();
    if media.is_empty() {
        return None;
    }
    let quality = parts
        .filter_map(|p| p.trim().strip_prefix("q="))
        .find_map(|q| q.trim().parse::<f32>().ok())
        .unwrap_or(1.0);
    Some(Range { media, quality })
}

/// Whether the range `range` (`*/*`, `type/*` or `type/sub`) covers
/// `media`, ignoring case and parameters.
fn matches(range: &str, media: &str) -> bool {
    let media = media.split(';').next().unwrap_or(media).trim();
    if range == "*/*" || range == "*" {
        return true;
    }
    match range.strip_suffix("/*") {
        Some(kind) => media
            .split('/')
            .next()
            .is_some_and(|m| m.eq_ignore_ascii_case(kind)),
        None => range.eq_ignore_ascii_case(media),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIBLINGS: &[&str] = &["text/plain", "multipart/mixed"];

    #[test]
    fn picks_like_webmachine() {
        assert_eq!(choose(SIBLINGS, None), Some("text/plain"));
        assert_eq!(choose(SIBLINGS, Some("*/*")), Some("text/plain"));
        assert_eq!(
            choose(SIBLINGS, Some("multipart/mixed")),
            Some("multipart/mixed")
        );
        assert_eq!(
            choose(
                SIBLINGS,
                Some("multipart/mixed, application/json;q=0.7, */*;q=0.5")
            ),
            Some("multipart/mixed")
        );
        assert_eq!(
            choose(SIBLINGS, Some("text/*;q=0.2, multipart/*")),
            Some("multipart/mixed")
        );
        assert_eq!(choose(&["text/html"], Some("application/json")), None);
        assert_eq!(choose(&["a/b"], Some("a/b;q=0")), None);
    }
}
