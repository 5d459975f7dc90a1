//! Fuzzes the PB server with random and mutated frames: valid-ish encodings
//! of every served request with bytes flipped, cut, inserted or appended,
//! random codes and bodies, and bad length prefixes.
//!
//! Invariants checked for every case: each reply is a well-formed frame
//! whose code answers the request (or is `RpbErrorResp`) and whose body
//! decodes; no handler panics (the panic net's text never appears); the
//! server never hangs (every read has a deadline); after a length-valid
//! frame the same connection still answers a ping, after a bad length the
//! server answers an error and closes; and a fresh connection always pings.

mod pb_support;

use std::time::Duration;

use eddy_api::pb::PbConfig;
use eddy_wire::proto::eddy;
use eddy_wire::{codes, proto};
use pb_support::Server;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest frame the fuzzed server accepts, so "too large" is cheap.
const FRAME_MAX: usize = 64 * 1024;
/// How long any one read may take before the server counts as hung.
const READ_DEADLINE: Duration = Duration::from_secs(10);
/// Texts the panic net and worker failures answer with.
const INTERNAL_TEXTS: [&str; 2] = ["failed unexpectedly", "worker failed"];

/// One way to damage an encoding.
#[derive(Clone, Debug)]
enum Mutation {
    Flip { at: usize, mask: u8 },
    Set { at: usize, byte: u8 },
    Truncate { at: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Append { bytes: Vec<u8> },
}

impl Mutation {
    fn apply(&self, body: &mut Vec<u8>) {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
        match self {
            Mutation::Flip { at: i, mask } if !body.is_empty() => {
                let n = body.len();
                body[i % n] ^= mask;
            }
            Mutation::Set { at: i, byte } if !body.is_empty() => {
                let n = body.len();
                body[i % n] = *byte;
            }
            Mutation::Truncate { at: i } => body.truncate(at(*i, body.len())),
            Mutation::Insert { at: i, bytes } => {
                let i = at(*i, body.len());
                body.splice(i..i, bytes.iter().copied());
            }
            Mutation::Append { bytes } => body.extend_from_slice(bytes),
            _ => {}
        }
    }
}

/// What a case sends on its connection.
#[derive(Clone, Debug)]
enum Case {
    /// A frame whose length prefix matches its body.
    Frame { code: u8, body: Vec<u8> },
    /// A length prefix of zero.
    Empty,
    /// A length prefix above the server's limit, then some bytes.
    TooLarge { extra: u32, tail: Vec<u8> },
    /// A prefix promising more than is sent before the client closes.
    Cut {
        code: u8,
        body: Vec<u8>,
        missing: u16,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let bytes = prop::collection::vec(any::<u8>(), 1..24);
    prop_oneof![
        (any::<usize>(), 1u8..).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), bytes.clone()).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        bytes.prop_map(|bytes| Mutation::Append { bytes }),
    ]
}

/// A served request code and a valid encoding of one of its messages,
/// damaged by up to four mutations.
fn mutated_request() -> impl Strategy<Value = Case> {
    let seeds = seeds();
    (
        0..seeds.len(),
        prop::collection::vec(mutation(), 0..4),
        any::<bool>(),
    )
        .prop_map(move |(i, mutations, random_code)| {
            let (mut code, mut body) = seeds[i].clone();
            for m in &mutations {
                m.apply(&mut body);
            }
            if random_code && mutations.is_empty() {
                // A valid body under another served code.
                code = seeds[(i + 1) % seeds.len()].0;
            }
            Case::Frame { code, body }
        })
}

fn case() -> impl Strategy<Value = Case> {
    let random_frame = (any::<u8>(), prop::collection::vec(any::<u8>(), 0..64))
        .prop_map(|(code, body)| Case::Frame { code, body });
    prop_oneof![
        6 => mutated_request(),
        2 => random_frame,
        1 => Just(Case::Empty),
        1 => (any::<u32>(), prop::collection::vec(any::<u8>(), 0..32))
            .prop_map(|(extra, tail)| Case::TooLarge { extra, tail }),
        // The prefix stays within the frame limit (body + code + missing
        // at most 32 + 1 + 65,000): a larger one is refused at once, which
        // is `TooLarge`'s case, not a cut frame's.
        1 => (served_code(), prop::collection::vec(any::<u8>(), 0..32), 1u16..=65_000)
            .prop_map(|(code, body, missing)| Case::Cut { code, body, missing }),
    ]
}

fn served_code() -> impl Strategy<Value = u8> {
    prop::sample::select(seeds().into_iter().map(|(c, _)| c).collect::<Vec<_>>())
}

/// A valid encoding of every request Eddy serves (StartTLS and
/// authentication are answered with Riak's "security not enabled" error).
fn seeds() -> Vec<(u8, Vec<u8>)> {
    let bucket = || b"fz".to_vec();
    let key = || b"k1".to_vec();
    let content = proto::RpbContent {
        value: b"v".to_vec(),
        content_type: Some(b"text/plain".to_vec()),
        links: vec![proto::RpbLink {
            bucket: Some(bucket()),
            key: Some(key()),
            tag: Some(b"t".to_vec()),
        }],
        usermeta: vec![proto::RpbPair {
            key: b"m".to_vec(),
            value: Some(b"1".to_vec()),
        }],
        indexes: vec![proto::RpbPair {
            key: b"i_int".to_vec(),
            value: Some(b"7".to_vec()),
        }],
        ..Default::default()
    };
    let props = proto::RpbBucketProps {
        n_val: Some(3),
        allow_mult: Some(true),
        r: Some(eddy_wire::quorum::QUORUM),
        ..Default::default()
    };
    let enc = |m: &dyn Fn(&mut Vec<u8>)| {
        let mut b = Vec::new();
        m(&mut b);
        b
    };
    vec![
        (codes::PING_REQ, Vec::new()),
        (codes::GET_CLIENT_ID_REQ, Vec::new()),
        (codes::GET_SERVER_INFO_REQ, Vec::new()),
        (codes::START_TLS, Vec::new()),
        (
            codes::AUTH_REQ,
            enc(&|b| {
                proto::RpbAuthReq {
                    user: b"u".to_vec(),
                    password: b"p".to_vec(),
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::SET_CLIENT_ID_REQ,
            enc(&|b| {
                proto::RpbSetClientIdReq {
                    client_id: b"abcd".to_vec(),
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::GET_REQ,
            enc(&|b| {
                proto::RpbGetReq {
                    bucket: bucket(),
                    key: key(),
                    r: Some(2),
                    notfound_ok: Some(true),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::PUT_REQ,
            enc(&|b| {
                proto::RpbPutReq {
                    bucket: bucket(),
                    key: Some(key()),
                    content: content.clone(),
                    w: Some(2),
                    return_body: Some(true),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::DEL_REQ,
            enc(&|b| {
                proto::RpbDelReq {
                    bucket: bucket(),
                    key: key(),
                    rw: Some(2),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::LIST_BUCKETS_REQ,
            enc(&|b| {
                proto::RpbListBucketsReq {
                    stream: Some(true),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::LIST_KEYS_REQ,
            enc(&|b| {
                proto::RpbListKeysReq {
                    bucket: bucket(),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::INDEX_REQ,
            enc(&|b| {
                proto::RpbIndexReq {
                    bucket: bucket(),
                    index: b"$bucket".to_vec(),
                    stream: Some(true),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::MAP_RED_REQ,
            enc(&|b| {
                proto::RpbMapRedReq {
                    request: br#"{"inputs":"fz","query":[]}"#.to_vec(),
                    content_type: b"application/json".to_vec(),
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::GET_BUCKET_REQ,
            enc(&|b| {
                proto::RpbGetBucketReq {
                    bucket: bucket(),
                    r#type: None,
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::SET_BUCKET_REQ,
            enc(&|b| {
                proto::RpbSetBucketReq {
                    bucket: bucket(),
                    props: props.clone(),
                    r#type: None,
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::RESET_BUCKET_REQ,
            enc(&|b| {
                proto::RpbResetBucketReq {
                    bucket: bucket(),
                    r#type: None,
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::GET_BUCKET_TYPE_REQ,
            enc(&|b| {
                proto::RpbGetBucketTypeReq {
                    r#type: b"default".to_vec(),
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::SET_BUCKET_TYPE_REQ,
            enc(&|b| {
                proto::RpbSetBucketTypeReq {
                    r#type: b"fuzzed".to_vec(),
                    props: props.clone(),
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::GET_BUCKET_KEY_PREFLIST_REQ,
            enc(&|b| {
                proto::RpbGetBucketKeyPreflistReq {
                    bucket: bucket(),
                    key: key(),
                    r#type: None,
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::MULTI_GET_REQ,
            enc(&|b| {
                eddy::EddyMultiGetReq {
                    bucket: bucket(),
                    keys: vec![key(), b"k2".to_vec()],
                    r: Some(2),
                    deletedvclock: Some(true),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::MULTI_PUT_REQ,
            enc(&|b| {
                eddy::EddyMultiPutReq {
                    bucket: bucket(),
                    objects: vec![eddy::EddyPutObject {
                        key: key(),
                        vclock: None,
                        content: content.clone(),
                    }],
                    w: Some(2),
                    return_body: Some(true),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
        (
            codes::MULTI_DEL_REQ,
            enc(&|b| {
                eddy::EddyMultiDelReq {
                    bucket: bucket(),
                    keys: vec![eddy::EddyDelKey {
                        key: key(),
                        vclock: None,
                    }],
                    rw: Some(2),
                    ..Default::default()
                }
                .encode(b)
                .unwrap()
            }),
        ),
    ]
}

/// The success code that answers `code`, if Eddy serves it.
fn answer_code(code: u8) -> Option<u8> {
    match code {
        codes::GET_BUCKET_TYPE_REQ => Some(codes::GET_BUCKET_RESP),
        codes::SET_BUCKET_TYPE_REQ => Some(codes::SET_BUCKET_RESP),
        codes::PING_REQ
        | codes::GET_CLIENT_ID_REQ
        | codes::SET_CLIENT_ID_REQ
        | codes::GET_SERVER_INFO_REQ
        | codes::GET_REQ
        | codes::PUT_REQ
        | codes::DEL_REQ
        | codes::LIST_BUCKETS_REQ
        | codes::LIST_KEYS_REQ
        | codes::GET_BUCKET_REQ
        | codes::SET_BUCKET_REQ
        | codes::RESET_BUCKET_REQ
        | codes::GET_BUCKET_KEY_PREFLIST_REQ
        | codes::INDEX_REQ
        | codes::MAP_RED_REQ
        | codes::MULTI_GET_REQ
        | codes::MULTI_PUT_REQ
        | codes::MULTI_DEL_REQ => Some(code + 1),
        _ => None,
    }
}

/// A reply's body is the message its code names.
fn check_body(code: u8, body: &[u8]) -> Result<(), TestCaseError> {
    let decoded = match code {
        codes::ERROR_RESP => {
            let e = proto::RpbErrorResp::decode(body).map_err(fail)?;
            let text = String::from_utf8_lossy(&e.errmsg);
            prop_assert!(
                !INTERNAL_TEXTS.iter().any(|t| text.contains(t)),
                "internal failure: {text}"
            );
            return Ok(());
        }
        codes::PING_RESP
        | codes::SET_CLIENT_ID_RESP
        | codes::DEL_RESP
        | codes::SET_BUCKET_RESP
        | codes::RESET_BUCKET_RESP => {
            prop_assert!(body.is_empty(), "code {code} with a body");
            Ok(())
        }
        codes::GET_CLIENT_ID_RESP => proto::RpbGetClientIdResp::decode(body).map(drop),
        codes::GET_SERVER_INFO_RESP => proto::RpbGetServerInfoResp::decode(body).map(drop),
        codes::GET_RESP => proto::RpbGetResp::decode(body).map(drop),
        codes::PUT_RESP => proto::RpbPutResp::decode(body).map(drop),
        codes::LIST_BUCKETS_RESP => proto::RpbListBucketsResp::decode(body).map(drop),
        codes::LIST_KEYS_RESP => proto::RpbListKeysResp::decode(body).map(drop),
        codes::INDEX_RESP => proto::RpbIndexResp::decode(body).map(drop),
        codes::MAP_RED_RESP => proto::RpbMapRedResp::decode(body).map(drop),
        codes::GET_BUCKET_RESP => proto::RpbGetBucketResp::decode(body).map(drop),
        codes::GET_BUCKET_KEY_PREFLIST_RESP => {
            proto::RpbGetBucketKeyPreflistResp::decode(body).map(drop)
        }
        codes::MULTI_GET_RESP => eddy::EddyMultiGetResp::decode(body).map(drop),
        codes::MULTI_PUT_RESP => eddy::EddyMultiPutResp::decode(body).map(drop),
        codes::MULTI_DEL_RESP => eddy::EddyMultiDelResp::decode(body).map(drop),
        other => return Err(fail(format!("unexpected reply code {other}"))),
    };
    decoded.map_err(fail)
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

/// Reads one frame; `Ok(None)` when the server closed cleanly.
async fn recv(stream: &mut TcpStream) -> Result<Option<(u8, Vec<u8>)>, TestCaseError> {
    let read = async {
        let mut header = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match stream.read(&mut header[got..]).await {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(fail("server closed inside a frame header")),
                Ok(n) => got += n,
                // A reset after the server's last frame is a close.
                Err(_) if got == 0 => return Ok(None),
                Err(e) => return Err(fail(e)),
            }
        }
        let len = u32::from_be_bytes(header) as usize;
        prop_assert!(len >= 1, "reply frame without a code");
        let mut body = vec![0u8; len];
        stream.read_exact(&mut body).await.map_err(fail)?;
        let code = body.remove(0);
        Ok(Some((code, body)))
    };
    tokio::time::timeout(READ_DEADLINE, read)
        .await
        .map_err(|_| fail("server hung"))?
}

/// The code the `test-hooks` feature serves by panicking on purpose (the
/// panic net's own test): fuzzing sends an unserved code in its place.
fn not_the_panic_hook(code: u8) -> u8 {
    match code {
        codes::TEST_PANIC_REQ => codes::TEST_PANIC_REQ - 1,
        other => other,
    }
}

fn frame(code: u8, body: &[u8]) -> Vec<u8> {
    let mut f = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    f.push(code);
    f.extend_from_slice(body);
    f
}

/// Sends a length-valid frame followed by a ping, and checks every reply
/// up to the ping's answer.
async fn run_frame(stream: &mut TcpStream, code: u8, body: &[u8]) -> Result<(), TestCaseError> {
    let mut bytes = frame(code, body);
    bytes.extend(frame(codes::PING_REQ, &[]));
    stream.write_all(&bytes).await.map_err(fail)?;
    let streamed = matches!(
        code,
        codes::LIST_KEYS_REQ | codes::LIST_BUCKETS_REQ | codes::INDEX_REQ | codes::MAP_RED_REQ
    );
    let mut replies = 0;
    loop {
        let Some((reply, reply_body)) = recv(stream).await? else {
            return Err(fail("server closed after a length-valid frame"));
        };
        if reply == codes::PING_RESP && replies > 0 {
            prop_assert!(reply_body.is_empty());
            return Ok(());
        }
        let expected = if code == codes::PING_REQ {
            Some(codes::PING_RESP)
        } else {
            answer_code(code)
        };
        prop_assert!(
            reply == codes::ERROR_RESP || Some(reply) == expected,
            "code {code} answered by code {reply}"
        );
        check_body(reply, &reply_body)?;
        replies += 1;
        prop_assert!(streamed || replies == 1, "{replies} answers to code {code}");
    }
}

/// A bad length prefix is answered with an error, then the server closes.
async fn run_refused(stream: &mut TcpStream, bytes: &[u8]) -> Result<(), TestCaseError> {
    stream.write_all(bytes).await.map_err(fail)?;
    let reply = recv(stream).await?;
    let Some((code, body)) = reply else {
        return Err(fail("no error before closing"));
    };
    prop_assert_eq!(code, codes::ERROR_RESP);
    check_body(code, &body)?;
    prop_assert!(recv(stream).await?.is_none(), "frames after a refusal");
    Ok(())
}

/// A frame cut short by the client's close is dropped without an answer.
async fn run_cut(stream: &mut TcpStream, bytes: &[u8]) -> Result<(), TestCaseError> {
    stream.write_all(bytes).await.map_err(fail)?;
    stream.shutdown().await.map_err(fail)?;
    prop_assert!(recv(stream).await?.is_none(), "an answer to a cut frame");
    Ok(())
}

async fn run_case(server: &Server, case: &Case) -> Result<(), TestCaseError> {
    let mut stream = TcpStream::connect(server.addr).await.map_err(fail)?;
    match case {
        Case::Frame { code, body } => {
            run_frame(&mut stream, not_the_panic_hook(*code), body).await?
        }
        Case::Empty => run_refused(&mut stream, &[0, 0, 0, 0]).await?,
        Case::TooLarge { extra, tail } => {
            let len = (FRAME_MAX as u32).saturating_add(1).saturating_add(*extra);
            let mut bytes = len.to_be_bytes().to_vec();
            bytes.extend_from_slice(tail);
            run_refused(&mut stream, &bytes).await?
        }
        Case::Cut {
            code,
            body,
            missing,
        } => {
            let len = body.len() as u32 + 1 + u32::from(*missing);
            let mut bytes = len.to_be_bytes().to_vec();
            bytes.push(*code);
            bytes.extend_from_slice(body);
            run_cut(&mut stream, &bytes).await?
        }
    }
    let mut fresh = TcpStream::connect(server.addr).await.map_err(fail)?;
    run_frame(&mut fresh, codes::PING_REQ, &[]).await
}

/// 256 cases (a few seconds in CI) unless `PROPTEST_CASES` asks for more.
fn cases() -> u32 {
    let asked = std::env::var("PROPTEST_CASES").ok();
    asked.and_then(|v| v.parse().ok()).unwrap_or(256)
}

#[test]
fn random_and_mutated_frames_get_well_formed_answers() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config = PbConfig {
        frame_bytes_max: FRAME_MAX,
        ..PbConfig::default()
    };
    let server = rt.block_on(pb_support::start_with(config));
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
