//! Secondary-index queries (`riak_kv_wm_index`): reading a query from
//! the path and Riak's parameters, running it on the kv layer, and
//! writing its page as JSON or, with `stream=true`, as multipart/mixed.
//!
//! `.../index/FIELD/VALUE` is an equality query, `.../index/FIELD/START/END`
//! a range; `$bucket` needs no value (one is ignored). Parameters, as Riak
//! names them: `return_terms`, `max_results`, `continuation`, `term_regex`,
//! `pagination_sort` (checked, then ignored: results are always sorted),
//! `stream` and `timeout` (ms; 0 is no limit).
//!
//! A page is `{"keys":[...]}`, or `{"results":[{"TERM":"KEY"},...]}` when
//! terms are returned, with `"continuation"` when the page is full. A
//! streamed page is the same entries in parts of at most
//! [`PART_RESULTS_MAX`], each `Content-Type: application/json`, then a
//! `{"continuation":...}` part if there is one. Keys and terms that are
//! not UTF-8 are percent-encoded, as key lists write them.
//!
//! The query's rules (field kinds, `_int` order, pagination, the regex)
//! are kv's ([`eddy_model::index`]); this module owns only the HTTP shape.
//! A malformed query is a 400 saying what is wrong, in Riak's words where
//! Riak has them; a query over its time is a 503.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use eddy_model::KvError;
use eddy_model::index::query::BUCKET_FIELD;
use eddy_model::index::term::{self, FieldKind};
use eddy_model::index::{IndexPage, IndexRequest};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::error::ApiError;
use super::keys::{json_response, name_text};
use super::multipart::{
    closing_boundary, json_parts_body, json_parts_text, multipart_content_type, random_token,
};
use super::params::Query;
use super::routes::Target;
use super::server::App;

/// The most entries one part of a streamed answer holds.
pub const PART_RESULTS_MAX: usize = 1000;

type Entry = (Vec<u8>, Vec<u8>);

/// Answers an index query; `segments` are the decoded path segments
/// after `index` (the field, then its value or range).
pub async fn get(
    app: Arc<App>,
    t: Target,
    segments: Vec<Vec<u8>>,
    query: &Query,
) -> Result<Response, ApiError> {
    let request = index_request(segments, query)?;
    if query.get("stream") == Some("true") {
        return stream(&app, &t, request).await;
    }
    let page = run(&app, &t, request).await?;
    Ok(json_response(Body::from(page_json(&page).to_string())))
}

/// The kv request for a path's segments and the query parameters.
pub fn index_request(segments: Vec<Vec<u8>>, query: &Query) -> Result<IndexRequest, ApiError> {
    let path = path_request(segments)?;
    let term_regex = query.get("term_regex").map(str::to_owned);
    if term_regex.is_some() && is_int_field(&path.field) {
        return Err(ApiError::bad_request(
            "Can not use term regular expressions on integer queries\n",
        ));
    }
    flag(query, "pagination_sort")?;
    Ok(IndexRequest {
        return_terms: flag(query, "return_terms")?.unwrap_or(false),
        max_results: max_results(query)?,
        continuation: query.get("continuation").map(continuation_bytes),
        term_regex,
        timeout: query.timeout_ms()?.map(Duration::from_millis),
        ..path
    })
}

/// The request's field and bounds: `[field, term]` or
/// `[field, start, end]`; `$bucket` may also stand alone.
fn path_request(mut segments: Vec<Vec<u8>>) -> Result<IndexRequest, ApiError> {
    let end = match segments.len() {
        3 => segments.pop(),
        2 => None,
        1 if segments[0].eq_ignore_ascii_case(BUCKET_FIELD) => {
            segments.push(Vec::new());
            None
        }
        _ => {
            return Err(ApiError::bad_request(
                "Invalid query: an index query names a field and then one term, \
                 or a start and an end term\n",
            ));
        }
    };
    let start = segments.pop().unwrap_or_default();
    let field = segments.pop().unwrap_or_default();
    Ok(IndexRequest {
        field,
        start,
        end,
        ..IndexRequest::default()
    })
}

fn is_int_field(field: &[u8]) -> bool {
    term::kind_of(&field.to_ascii_lowercase()) == Some(FieldKind::Int)
}

/// A boolean parameter as Riak's index resource reads it: `true` or
/// `false` in any case, anything else refused.
fn flag(query: &Query, name: &str) -> Result<Option<bool>, ApiError> {
    let Some(text) = query.get(name) else {
        return Ok(None);
    };
    match text.to_ascii_lowercase().as_str() {
        "true" => Ok(Some(true)),
        "false" => Ok(Some(false)),
        _ => Err(ApiError::bad_request(format!(
            "Invalid \"{name}\". {text:?} is not a boolean\n"
        ))),
    }
}

/// `max_results`: a positive integer (one past `u32` asks for as much as
/// a page can hold).
fn max_results(query: &Query) -> Result<Option<u32>, ApiError> {
    let Some(text) = query.get("max_results") else {
        return Ok(None);
    };
    let shown = match text.parse::<i64>() {
        Ok(n) if n > 0 => return Ok(Some(u32::try_from(n).unwrap_or(u32::MAX))),
        Ok(n) => n.to_string(),
        Err(_) => format!("{text:?}"),
    };
    Err(ApiError::bad_request(format!(
        "Invalid \"max_results\". {shown} is not a positive integer\n"
    )))
}

/// A continuation as sent. It is base64, which never holds a space: a
/// space is a `+` that the client did not escape (form decoding turned it
/// into one), so it is put back.
fn continuation_bytes(sent: &str) -> Vec<u8> {
    sent.replace(' ', "+").into_bytes()
}

/// Runs the query on a blocking thread.
async fn run(app: &App, t: &Target, request: IndexRequest) -> Result<IndexPage, ApiError> {
    let node = app.node.clone();
    let bucket = t.bucket.clone();
    let joined =
        tokio::task::spawn_blocking(move || node.index_query_blocking(&bucket, &request)).await;
    match joined {
        Ok(result) => result.map_err(query_error),
        Err(e) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("index query failed: {e}\n"),
        )),
    }
}

/// A kv error as an answer: a bad query is a 400 in Riak's words (its
/// messages that already say what was invalid stand as they are).
fn query_error(e: KvError) -> ApiError {
    match e {
        KvError::BadQuery(msg) if msg.starts_with("Invalid ") => {
            ApiError::bad_request(format!("{msg}\n"))
        }
        KvError::BadQuery(msg) => ApiError::bad_request(format!("Invalid query: {msg}\n")),
        other => other.into(),
    }
}

/// The whole page as one JSON object.
fn page_json(page: &IndexPage) -> Value {
    let mut json = entries_json(page.return_terms, &page.results);
    if let (Value::Object(map), Some(c)) = (&mut json, &page.continuation) {
        map.insert("continuation".into(), continuation_json(c));
    }
    json
}

/// `{"keys":[...]}`, or `{"results":[{"TERM":"KEY"},...]}` with terms.
fn entries_json(return_terms: bool, entries: &[Entry]) -> Value {
    if return_terms {
        let results = entries.iter().map(|(t, k)| term_key_json(t, k)).collect();
        json!({ "results": Value::Array(results) })
    } else {
        let keys = entries.iter().map(|(_, k)| Value::String(name_text(k)));
        json!({ "keys": Value::Array(keys.collect()) })
    }
}

fn term_key_json(term: &[u8], key: &[u8]) -> Value {
    let mut one = Map::new();
    one.insert(name_text(term), Value::String(name_text(key)));
    Value::Object(one)
}

fn continuation_json(c: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(c).into_owned())
}

/// The answer as multipart/mixed, as Riak streams it, written as the
/// query's steps are merged (kv's [`eddy_kv::coordinator::index::STREAM_STEP`]):
/// without `max_results`, every entry, with a step or two in memory. A
/// query refused before its first step is an error response; one that
/// fails later ends with an `{"error":...}` part.
async fn stream(app: &App, t: &Target, request: IndexRequest) -> Result<Response, ApiError> {
    let (tx, mut rx) = mpsc::channel::<Result<IndexPage, KvError>>(2);
    let node = app.node.clone();
    let bucket = t.bucket.clone();
    tokio::task::spawn_blocking(move || {
        let sent = node
            .index_stream_blocking(&bucket, &request, |page| tx.blocking_send(Ok(page)).is_ok());
        if let Err(e) = sent {
            let _ = tx.blocking_send(Err(e));
        }
    });
    let first = match rx.recv().await {
        Some(Err(e)) => return Err(query_error(e)),
        first => first,
    };
    let boundary = random_token();
    let (out, body) = mpsc::channel::<Bytes>(2);
    let parts_boundary = boundary.clone();
    tokio::spawn(async move {
        let mut next = first;
        while let Some(sent) = next {
            let text = match sent {
                Ok(page) => json_parts_text(&page_parts(&page), &parts_boundary),
                Err(e) => {
                    let error = json!({ "error": query_error(e).message.trim_end() });
                    json_parts_text([&error], &parts_boundary)
                }
            };
            if out.send(Bytes::from(text)).await.is_err() {
                return;
            }
            next = rx.recv().await;
        }
        let _ = out
            .send(Bytes::from(closing_boundary(&parts_boundary)))
            .await;
    });
    let body = Body::from_stream(ReceiverStream::new(body).map(Ok::<Bytes, Infallible>));
    let mut resp = Response::new(body);
    if let Some(v) = multipart_content_type(&boundary) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    Ok(resp)
}

/// One JSON part per [`PART_RESULTS_MAX`] entries, then the
/// continuation's part.
fn page_parts(page: &IndexPage) -> Vec<Value> {
    let mut parts: Vec<Value> = page
        .results
        .chunks(PART_RESULTS_MAX)
        .map(|chunk| entries_json(page.return_terms, chunk))
        .collect();
    if let Some(c) = &page.continuation {
        parts.push(json!({ "continuation": continuation_json(c) }));
    }
    parts
}

/// [`page_parts`] as a multipart body under `boundary`.
pub fn multipart_body(page: &IndexPage, boundary: &str) -> String {
    json_parts_body(&page_parts(page), boundary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(parts: &[&str]) -> Vec<Vec<u8>> {
        parts.iter().map(|p| p.as_bytes().to_vec()).collect()
    }

    fn request(parts: &[&str], query: &str) -> Result<IndexRequest, ApiError> {
        index_request(segs(parts), &Query::parse(Some(query)).unwrap())
    }

    #[test]
    fn paths_and_parameters_make_the_kv_request() {
        let r = request(&["f_bin", "a"], "").unwrap();
        assert_eq!((r.start.as_slice(), r.end), (&b"a"[..], None));
        let r = request(
            &["n_int", "1", "9"],
            "return_terms=TRUE&max_results=5&continuation=a+b&timeout=0",
        )
        .unwrap();
        assert_eq!(r.end, Some(b"9".to_vec()));
        assert!(r.return_terms);
        assert_eq!(r.max_results, Some(5));
        assert_eq!(r.continuation, Some(b"a+b".to_vec()));
        assert_eq!(r.timeout, Some(Duration::ZERO));
        let r = request(&["$bucket"], "max_results=99999999999").unwrap();
        assert_eq!(
            (r.field.as_slice(), r.max_results),
            (&b"$bucket"[..], Some(u32::MAX))
        );
    }

    #[test]
    fn bad_parameters_are_refused_in_riaks_words() {
        let message = |parts: &[&str], q: &str| request(parts, q).unwrap_err().message;
        assert_eq!(
            message(&["f_bin", "a"], "max_results=x"),
            "Invalid \"max_results\". \"x\" is not a positive integer\n"
        );
        assert_eq!(
            message(&["f_bin", "a"], "max_results=0"),
            "Invalid \"max_results\". 0 is not a positive integer\n"
        );
        assert!(message(&["f_bin", "a"], "return_terms=yes").contains("is not a boolean"));
        assert!(message(&["f_bin", "a"], "pagination_sort=1").contains("pagination_sort"));
        assert!(message(&["N_INT", "1"], "term_regex=.").contains("integer queries"));
        assert!(message(&["f_bin"], "").starts_with("Invalid query"));
        assert!(message(&["f_bin", "a", "b", "c"], "").starts_with("Invalid query"));
    }

    #[test]
    fn kv_refusals_read_as_riak_words_them() {
        let e = query_error(KvError::BadQuery("Invalid continuation".into()));
        assert_eq!(
            (e.status, e.message.as_str()),
            (StatusCode::BAD_REQUEST, "Invalid continuation\n")
        );
        let e = query_error(KvError::BadQuery(
            "Unknown field type for field: 'x'.".into(),
        ));
        assert_eq!(
            e.message,
            "Invalid query: Unknown field type for field: 'x'.\n"
        );
        assert_eq!(
            query_error(KvError::Timeout).status,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn pages_render_as_json_and_as_parts() {
        let page = IndexPage {
            results: vec![
                (b"t\xff".to_vec(), b"k1".to_vec()),
                (b"t".to_vec(), b"k\xfe".to_vec()),
            ],
            return_terms: true,
            continuation: Some(b"Yw==".to_vec()),
        };
        assert_eq!(
            page_json(&page),
            json!({"results": [{"t%FF": "k1"}, {"t": "k%FE"}], "continuation": "Yw=="})
        );
        let keys = IndexPage {
            return_terms: false,
            continuation: None,
            ..page.clone()
        };
        assert_eq!(page_json(&keys), json!({"keys": ["k1", "k%FE"]}));
        let body = multipart_body(&page, "B");
        let parts: Vec<&str> = body.split("\r\n--B").collect();
        assert_eq!(parts.len(), 4, "{body}");
        assert!(parts[1].starts_with("\r\nContent-Type: application/json\r\n\r\n{\"results\""));
        assert!(parts[2].ends_with("{\"continuation\":\"Yw==\"}"));
        assert_eq!(parts[3], "--\r\n");
        let empty = IndexPage::default();
        assert_eq!(multipart_body(&empty, "B"), "\r\n--B--\r\n");
    }
}
