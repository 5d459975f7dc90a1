//! Riak 1.4's counters over HTTP, `/buckets/B/counters/K`
//! (`riak_kv_wm_counter`): GET answers the value as a decimal integer (404
//! `not found` when absent); POST adds the decimal integer its body holds
//! (204; 200 and the new value with `returnvalue=true`).
//!
//! Invariants: only buckets of the `default` type, and only with
//! `allow_mult` (409 with Riak's text otherwise); the body is at most
//! [`super::HttpConfig::body_bytes_max`] bytes and must be an integer
//! within `i64` (400 otherwise).

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use eddy_dt::Op;
use eddy_kv::coordinator::datatype::{DtFetchRequest, DtUpdateRequest};
use eddy_model::BucketRef;

use super::error::ApiError;
use super::params::Query;
use super::props::no_content;
use super::render::set;
use super::server::{App, read_body};

/// Answers any method on the counter `key` of `bucket`.
pub async fn handle(
    app: &App,
    bucket: BucketRef,
    key: Vec<u8>,
    query: &Query,
    req: Request,
) -> Result<Response, ApiError> {
    query.validate_all()?;
    match *req.method() {
        Method::GET | Method::HEAD => {
            let request = DtFetchRequest {
                bucket,
                key,
                options: query.get_options()?,
            };
            match app
                .node
                .dt_fetch(request)
                .await?
                .body
                .and_then(|b| b.counter())
            {
                Some(n) => Ok(text(StatusCode::OK, n)),
                None => Err(ApiError::not_found()),
            }
        }
        Method::POST => {
            let mut options = query.put_options()?;
            options.return_body = query.is_true("returnvalue");
            let (parts, body) = req.into_parts();
            let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
            let amount = amount(&body)?;
            let request = DtUpdateRequest {
                bucket,
                key: Some(key),
                op: Op::Counter(amount),
                context: None,
                options,
            };
            match app
                .node
                .dt_update(request)
                .await?
                .body
                .and_then(|b| b.counter())
            {
                Some(n) => Ok(text(StatusCode::OK, n)),
                None => Ok(no_content()),
            }
        }
        _ => Err(ApiError::method_not_allowed("GET, HEAD, POST")),
    }
}

/// The amount a POST body holds: a decimal integer.
pub fn amount(body: &[u8]) -> Result<i64, ApiError> {
    std::str::from_utf8(body)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .ok_or_else(|| {
            ApiError::bad_request(
                "Counter amount must be a decimal integer within a signed 64-bit range\n",
            )
        })
}

fn text(status: StatusCode, n: i64) -> Response {
    let mut resp = Response::new(Body::from(n.to_string()));
    *resp.status_mut() = status;
    set(resp.headers_mut(), "content-type", b"text/plain");
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_decimal_integers() {
        assert_eq!(amount(b"5").unwrap(), 5);
        assert_eq!(amount(b" -12\n").unwrap(), -12);
        for bad in [&b""[..], b"x", b"1.5", b"99999999999999999999", b"\xff"] {
            assert_eq!(amount(bad).unwrap_err().status, StatusCode::BAD_REQUEST);
        }
    }
}
