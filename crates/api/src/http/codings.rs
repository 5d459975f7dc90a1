//! Transfer codings of request bodies. The HTTP layer undoes `chunked`;
//! no other transfer coding (`gzip`, `deflate`, `compress`, ...) is
//! implemented, so a body sent in one is refused with 501 Not Implemented,
//! as HTTP/1.1 requires of a server meeting a coding it does not
//! understand (RFC 9112 §6.1). Invariant: a coded body is never read as
//! the value, so it is never stored still coded.

use axum::http::{HeaderMap, StatusCode, header};

use super::error::ApiError;

/// Refuses a request whose `Transfer-Encoding` names any coding other than
/// `chunked` (or the no-op `identity`).
pub fn check_transfer_coding(headers: &HeaderMap) -> Result<(), ApiError> {
    for value in headers.get_all(header::TRANSFER_ENCODING) {
        let text = String::from_utf8_lossy(value.as_bytes());
        for coding in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if !coding.eq_ignore_ascii_case("chunked") && !coding.eq_ignore_ascii_case("identity") {
                return Err(not_implemented(coding));
            }
        }
    }
    Ok(())
}

fn not_implemented(coding: &str) -> ApiError {
    let shown: String = coding.chars().take(64).collect();
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "Transfer-Encoding {shown:?} is not implemented; send the body unencoded or chunked\n"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(value: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::TRANSFER_ENCODING, HeaderValue::from_static(value));
        h
    }

    #[test]
    fn only_chunked_is_served() {
        assert!(check_transfer_coding(&HeaderMap::new()).is_ok());
        assert!(check_transfer_coding(&with("chunked")).is_ok());
        assert!(check_transfer_coding(&with("Chunked")).is_ok());
        for coded in ["gzip, chunked", "deflate,chunked", "x-custom, chunked"] {
            let e = check_transfer_coding(&with(coded)).unwrap_err();
            assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED, "{coded}");
        }
    }
}
