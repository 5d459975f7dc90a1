//! `multipart/mixed` bodies for siblings: one part per sibling, each with
//! the headers a single-object GET would carry (Content-Type, Link, Etag,
//! Last-Modified, user metadata, indexes) and the sibling's value, in
//! Riak's layout (`\r\n--B\r\n` before each part, `\r\n--B--\r\n` at the
//! end); and the JSON parts of streamed 2i and MapReduce answers.

use eddy_model::BucketRef;
use eddy_object::Content;

use super::headers::content_headers;
use super::routes::Api;

/// A multipart body and the boundary that separates its parts.
pub struct Multipart {
    pub boundary: String,
    pub body: Vec<u8>,
}

/// Encodes `contents` as a multipart/mixed body.
pub fn encode<'a>(
    api: Api,
    bucket: &BucketRef,
    contents: impl Iterator<Item = &'a Content> + Clone,
) -> Multipart {
    let mut boundary = random_token();
    // A boundary must not occur inside any part; draw again if it does.
    while contents
        .clone()
        .any(|c| contains(&c.value, boundary.as_bytes()))
    {
        boundary = random_token();
    }
    let mut body = Vec::new();
    for c in contents {
        body.extend_from_slice(format!("\r\n--{boundary}\r\n").as_bytes());
        for (name, mut value) in content_headers(api, bucket, c) {
            if value.contains(&b'\r') || value.contains(&b'\n') {
                continue;
            }
            // Riak writes a part's entity tag unquoted, as `Etag`.
            let name = match name.as_str() {
                "ETag" => {
                    value.retain(|&b| b != b'"');
                    "Etag".to_string()
                }
                _ => name,
            };
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(b": ");
            body.extend_from_slice(&value);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(&c.value);
    }
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    Multipart { boundary, body }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A random base-62 token of 22 characters (about 131 bits).
pub fn random_token() -> String {
    eddy_object::base62::random_string(22)
}

/// JSON values as multipart/mixed parts (`Content-Type: application/json`
/// each), then the closing boundary. JSON text escapes line breaks, so no
/// part can hold a boundary line.
pub fn json_parts_body<'a>(
    parts: impl IntoIterator<Item = &'a serde_json::Value>,
    boundary: &str,
) -> String {
    let mut body = json_parts_text(parts, boundary);
    body.push_str(&closing_boundary(boundary));
    body
}

/// JSON values as multipart/mixed parts, without the closing boundary:
/// a piece of a body streamed part by part.
pub fn json_parts_text<'a>(
    parts: impl IntoIterator<Item = &'a serde_json::Value>,
    boundary: &str,
) -> String {
    let mut text = String::new();
    for json in parts {
        text.push_str(&format!(
            "\r\n--{boundary}\r\nContent-Type: application/json\r\n\r\n{json}"
        ));
    }
    text
}

/// The line that ends a multipart body.
pub fn closing_boundary(boundary: &str) -> String {
    format!("\r\n--{boundary}--\r\n")
}

/// The `Content-Type` of a multipart/mixed body under `boundary`.
pub fn multipart_content_type(boundary: &str) -> Option<axum::http::HeaderValue> {
    axum::http::HeaderValue::from_str(&format!("multipart/mixed; boundary={boundary}")).ok()
}

/// A multipart/mixed response of JSON parts under a random boundary.
pub fn json_parts_response<'a>(
    parts: impl IntoIterator<Item = &'a serde_json::Value>,
) -> axum::response::Response {
    let boundary = random_token();
    let body = json_parts_body(parts, &boundary);
    let mut resp = axum::response::Response::new(axum::body::Body::from(body));
    if let Some(v) = multipart_content_type(&boundary) {
        resp.headers_mut()
            .insert(axum::http::header::CONTENT_TYPE, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_carry_headers_and_values() {
        let mut a = Content::new(b"one".to_vec());
        a.meta.vtag = b"v1".to_vec();
        a.meta.content_type = Some(b"text/plain".to_vec());
        let mut b = Content::new(b"two".to_vec());
        b.meta.vtag = b"v2".to_vec();
        let bucket = BucketRef::default_type(b"b".to_vec());
        let m = encode(Api::Buckets, &bucket, [&a, &b].into_iter());
        let text = String::from_utf8(m.body).unwrap();
        let parts: Vec<&str> = text.split(&format!("\r\n--{}", m.boundary)).collect();
        assert_eq!(parts.len(), 4, "{text}");
        assert!(parts[1].contains("Content-Type: text/plain\r\n"));
        assert!(parts[1].contains("Etag: v1\r\n"));
        assert!(parts[1].ends_with("\r\n\r\none"));
        assert!(parts[2].contains("application/octet-stream"));
        assert_eq!(parts[3], "--\r\n");
        assert_ne!(random_token(), random_token());
    }
}
