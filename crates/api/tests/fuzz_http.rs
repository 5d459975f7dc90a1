//! Fuzzes the HTTP server over raw TCP with random requests (methods,
//! paths in Riak's three URL styles, query parameters, headers, bodies)
//! and with those requests' bytes flipped, cut, inserted or appended.
//!
//! Invariants checked for every case: the server answers with a status
//! line or closes the connection without one, within a deadline (a hang
//! fails the case); no answer is a 5xx other than the deliberate ones
//! (503 and 507 for refused work, 501 for unsupported codings, 505 for
//! an unsupported HTTP version, and 500 only from the render limit on
//! header fields); and a fresh connection's `GET /ping` answers `OK`.

mod http_support;

use std::time::Duration;

use http_support::Server;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a whole answer may take before the server counts as hung.
const READ_DEADLINE: Duration = Duration::from_secs(10);
/// The most answer bytes read per case.
const ANSWER_BYTES_MAX: usize = 1024 * 1024;
/// The only text a 500 may carry: the render limit's.
const RENDER_LIMIT_TEXT: &str = "header fields";

/// One way to damage a request's bytes.
#[derive(Clone, Debug)]
enum Mutation {
    Flip { at: usize, mask: u8 },
    Truncate { at: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Append { bytes: Vec<u8> },
}

impl Mutation {
    fn apply(&self, req: &mut Vec<u8>) {
        let at = |i: usize, len: usize| i % (len + 1);
        match self {
            Mutation::Flip { at: i, mask } if !req.is_empty() => {
                let n = req.len();
                req[i % n] ^= mask;
            }
            Mutation::Truncate { at: i } => req.truncate(at(*i, req.len())),
            Mutation::Insert { at: i, bytes } => {
                let i = at(*i, req.len());
                req.splice(i..i, bytes.iter().copied());
            }
            Mutation::Append { bytes } => req.extend_from_slice(bytes),
            _ => {}
        }
    }
}

/// A request to send: well-formed (correct length, `Connection: close`)
/// unless mutated.
#[derive(Clone, Debug)]
struct Case {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    mutations: Vec<Mutation>,
}

impl Case {
    fn bytes(&self) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\nHost: eddy\r\n", self.method, self.path);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.body.len()
        ));
        let mut req = head.into_bytes();
        req.extend_from_slice(&self.body);
        for m in &self.mutations {
            m.apply(&mut req);
        }
        req
    }
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(vec!["GET", "GET", "PUT", "PUT", "POST", "DELETE", "HEAD"])
            .prop_map(String::from),
        1 => prop::sample::select(vec!["OPTIONS", "PATCH"]).prop_map(String::from),
        1 => "[A-Z]{1,8}",
    ]
}

/// A path segment: names, percent escapes (some broken), `+`, odd bytes.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9]{1,8}",
        2 => "([a-zA-Z0-9._~+-]|%[0-9A-Fa-f]{2}){0,12}",
        1 => "(%[0-9A-Fa-fg-z]{0,2}|[!$&'()*,;=:@])*",
    ]
}

fn path() -> impl Strategy<Value = String> {
    let templates = vec![
        "/",
        "/ping",
        "/stats",
        "/health",
        "/buckets",
        "/riak",
        "/buckets/B/keys",
        "/buckets/B/keys/K",
        "/buckets/B/keys/K",
        "/buckets/B/keys/K",
        "/buckets/B/keys/K/preflist",
        "/buckets/B/props",
        "/types/T/buckets",
        "/types/T/buckets/B/keys",
        "/types/T/buckets/B/keys/K",
        "/types/T/buckets/B/keys/K",
        "/types/T/buckets/B/props",
        "/types/T/props",
        "/riak/B",
        "/riak/B/K",
        "/admin/bucket-types/T",
        "/S/S/S",
    ];
    let param = (
        prop::sample::select(vec![
            "keys",
            "buckets",
            "props",
            "timeout",
            "r",
            "w",
            "dw",
            "pw",
            "pr",
            "rw",
            "returnbody",
            "vtag",
            "basic_quorum",
            "notfound_ok",
            "deletedvclock",
        ]),
        prop_oneof![
            Just("true".to_string()),
            Just("stream".to_string()),
            Just("0".to_string()),
            Just("quorum".to_string()),
            "[0-9]{1,3}",
            "[0-9]{1,12}",
            "[a-z%+=&]{0,8}",
        ],
    )
        .prop_map(|(k, v)| format!("{k}={v}"));
    (
        prop::sample::select(templates),
        segment(),
        segment(),
        prop_oneof![
            Just("default".to_string()),
            Just("maps".to_string()),
            segment()
        ],
        prop::collection::vec(param, 0..3),
    )
        .prop_map(|(template, b, k, t, params)| {
            let mut p = template
                .replace("/B", &format!("/{b}"))
                .replace("/K", &format!("/{k}"))
                .replace("/T", &format!("/{t}"))
                .replace("/S", &format!("/{b}"));
            if !params.is_empty() {
                p.push('?');
                p.push_str(&params.join("&"));
            }
            p
        })
}

fn header() -> impl Strategy<Value = (String, String)> {
    let names = vec![
        "Content-Type",
        "Accept",
        "X-Riak-Vclock",
        "X-Riak-ClientId",
        "X-Riak-Meta-Color",
        "X-Riak-Index-field_bin",
        "X-Riak-Index-field_int",
        "X-Riak-Index-bad",
        "Link",
        "If-Match",
        "If-None-Match",
        "If-Modified-Since",
        "If-Unmodified-Since",
        "Content-Encoding",
        "Content-Type",
    ];
    let value = prop_oneof![
        Just("text/plain".to_string()),
        Just("application/json".to_string()),
        Just("multipart/mixed".to_string()),
        Just("Tue, 15 Nov 1994 08:12:31 GMT".to_string()),
        Just("</buckets/b/keys/k>; riaktag=\"t\"".to_string()),
        "[0-9]{1,20}",
        "[ -~]{0,40}",
    ];
    (prop::sample::select(names).prop_map(String::from), value)
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => prop::collection::vec(any::<u8>(), 0..128),
        1 => Just(br#"{"props":{"n_val":3,"allow_mult":true}}"#.to_vec()),
        1 => "\\{\"props\":\\{\"[a-z_]{1,10}\":([0-9]{1,4}|true|\"[a-z]{0,5}\")\\}\\}"
            .prop_map(String::into_bytes),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let bytes = prop::collection::vec(any::<u8>(), 1..16);
    prop_oneof![
        (any::<usize>(), 1u8..).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), bytes.clone()).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        bytes.prop_map(|bytes| Mutation::Append { bytes }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        method(),
        path(),
        prop::collection::vec(header(), 0..6),
        body(),
        prop_oneof![
            1 => Just(Vec::new()),
            1 => prop::collection::vec(mutation(), 1..4),
        ],
    )
        .prop_map(|(method, path, headers, body, mutations)| Case {
            method,
            path,
            headers,
            body,
            mutations,
        })
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Sends `req` and reads until the server closes. A mutated request is
/// followed by closing the write side, so one cut short ends too.
async fn exchange(server: &Server, req: &[u8], half_close: bool) -> Result<Vec<u8>, TestCaseError> {
    let addr = server.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.map_err(fail)?;
    // The server may answer and close before reading everything sent.
    let _ = stream.write_all(req).await;
    if half_close {
        let _ = stream.shutdown().await;
    }
    let read = async {
        let mut answer = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        while answer.len() < ANSWER_BYTES_MAX {
            match stream.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                // A reset after (or instead of) the answer is a close.
                Err(_) => break,
            }
        }
        answer
    };
    tokio::time::timeout(READ_DEADLINE, read)
        .await
        .map_err(|_| fail("server hung"))
}

/// The status code of an answer's first status line, if it has one.
fn status(answer: &[u8]) -> Result<Option<u16>, TestCaseError> {
    if answer.is_empty() {
        return Ok(None);
    }
    let line_end = answer
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or_else(|| fail("answer without a status line"))?;
    let line = String::from_utf8_lossy(&answer[..line_end]);
    let mut parts = line.splitn(3, ' ');
    prop_assert_eq!(parts.next(), Some("HTTP/1.1"), "status line {}", line);
    let code = parts.next().and_then(|c| c.parse::<u16>().ok());
    code.map(Some)
        .ok_or_else(|| fail(format!("status line {line}")))
}

fn check_status(code: u16, answer: &[u8]) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(answer);
    let allowed = match code {
        100..=499 | 501 | 503 | 505 | 507 => true,
        500 => text.contains(RENDER_LIMIT_TEXT),
        _ => false,
    };
    prop_assert!(allowed, "answered {}: {}", code, text);
    Ok(())
}

async fn run_case(server: &Server, case: &Case) -> Result<(), TestCaseError> {
    let mutated = !case.mutations.is_empty();
    let answer = exchange(server, &case.bytes(), mutated).await?;
    match status(&answer)? {
        Some(code) => check_status(code, &answer)?,
        None => prop_assert!(mutated, "no answer to a well-formed request"),
    }
    let ping = b"GET /ping HTTP/1.1\r\nHost: eddy\r\nConnection: close\r\n\r\n";
    let answer = exchange(server, ping, false).await?;
    prop_assert_eq!(status(&answer)?, Some(200));
    prop_assert!(
        answer.ends_with(b"\r\n\r\nOK"),
        "ping answered {:?}",
        answer
    );
    Ok(())
}

/// 256 cases (a few seconds in CI) unless `PROPTEST_CASES` asks for more.
fn cases() -> u32 {
    let asked = std::env::var("PROPTEST_CASES").ok();
    asked.and_then(|v| v.parse().ok()).unwrap_or(256)
}

#[test]
fn random_and_mutated_requests_get_sane_answers() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(http_support::start());
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |case| rt.block_on(run_case(&server, &case)));
    if let Err(e) = result {
        panic!("{e}");
    }
}
