//! The `multi_get` and `multi_put` operations run by the runner against
//! small servers in this process that speak Eddy's multi-key requests (PB
//! codes 160–163, `POST …/multi/{get,put}`) and store what they are
//! given: each request carries its batch of keys, missing keys are
//! counted as not found, and a key's error fails the request.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use eddy_bench::config::parse_valid;
use eddy_bench::ops::OpKind;
use eddy_bench::{Output, RunOptions, RunOutcome, run_config};
use eddy_wire::codes;
use eddy_wire::frame::{encode_empty, encode_frame};
use eddy_wire::proto::RpbPutReq;
use eddy_wire::proto::eddy::{
    EddyKeyResult, EddyMultiGetReq, EddyMultiGetResp, EddyMultiPutReq, EddyMultiPutResp,
    eddy_key_result::Status,
};
use prost::Message;
use serde_json::{Value, json};

/// What a server has seen.
#[derive(Default)]
struct Seen {
    keys: HashSet<Vec<u8>>,
    /// Keys per multi-key request, in arrival order.
    batches: Vec<usize>,
    /// A key whose operations fail.
    poisoned: Option<Vec<u8>>,
}

impl Seen {
    fn status(&self, key: &[u8], stored: bool) -> (Status, Option<Vec<u8>>) {
        match (self.poisoned.as_deref() == Some(key), stored) {
            (true, _) => (Status::Error, Some(b"timeout".to_vec())),
            (false, true) => (Status::Ok, None),
            (false, false) => (Status::NotFound, None),
        }
    }

    fn put(&mut self, keys: Vec<Vec<u8>>) -> Vec<EddyKeyResult> {
        self.batches.push(keys.len());
        let results = keys.iter().map(|k| self.result(k, true)).collect();
        self.keys.extend(keys);
        results
    }

    fn get(&mut self, keys: Vec<Vec<u8>>) -> Vec<EddyKeyResult> {
        self.batches.push(keys.len());
        keys.iter()
            .map(|k| self.result(k, self.keys.contains(k)))
            .collect()
    }

    fn result(&self, key: &[u8], stored: bool) -> EddyKeyResult {
        let (status, errmsg) = self.status(key, stored);
        EddyKeyResult {
            key: key.to_vec(),
            status: status as i32,
            errmsg,
            ..Default::default()
        }
    }
}

type Shared = Arc<Mutex<Seen>>;

/// Runs `serve` for each connection to a fresh port.
fn server(serve: fn(TcpStream, &Mutex<Seen>)) -> (String, Shared) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Shared::default();
    let shared = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let seen = shared.clone();
            std::thread::spawn(move || serve(stream.unwrap(), &seen));
        }
    });
    (addr, seen)
}

fn serve_pb(mut s: TcpStream, seen: &Mutex<Seen>) {
    loop {
        let mut len = [0u8; 4];
        if s.read_exact(&mut len).is_err() {
            return;
        }
        let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut frame).unwrap();
        let (code, body) = (frame[0], &frame[1..]);
        let mut out = Vec::new();
        let mut seen = seen.lock().unwrap();
        match code {
            codes::PUT_REQ => {
                let req = RpbPutReq::decode(body).unwrap();
                seen.keys.insert(req.key.unwrap());
                encode_empty(codes::PUT_RESP, &mut out);
            }
            codes::MULTI_PUT_REQ => {
                let req = EddyMultiPutReq::decode(body).unwrap();
                assert!(req.objects.iter().all(|o| !o.content.value.is_empty()));
                let keys = req.objects.into_iter().map(|o| o.key).collect();
                let resp = EddyMultiPutResp {
                    results: seen.put(keys),
                };
                encode_frame(codes::MULTI_PUT_RESP, &resp, &mut out);
            }
            codes::MULTI_GET_REQ => {
                let req = EddyMultiGetReq::decode(body).unwrap();
                let resp = EddyMultiGetResp {
                    results: seen.get(req.keys),
                };
                encode_frame(codes::MULTI_GET_RESP, &resp, &mut out);
            }
            other => encode_empty(other + 1, &mut out),
        }
        drop(seen);
        s.write_all(&out).unwrap();
    }
}

/// Eddy's multi-key requests over HTTP/1.1 with keep-alive: the body's
/// keys (as text) are stored or looked up; `/ping` answers `OK`, and
/// anything else 404.
fn serve_http(s: TcpStream, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut writer = s;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_string();
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            if header.trim().is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).unwrap();
        let (status, answer) = http_answer(&path, &body, seen);
        let reply = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        writer.write_all(reply.as_bytes()).unwrap();
    }
}

fn http_answer(path: &str, body: &[u8], seen: &Mutex<Seen>) -> (&'static str, String) {
    let path = path.split('?').next().unwrap();
    if path == "/ping" {
        return ("200 OK", "OK".into());
    }
    let doc: Value = serde_json::from_slice(body).unwrap_or_default();
    let keys = |list: &Value, field: &str| -> Vec<Vec<u8>> {
        let items = list.as_array().cloned().unwrap_or_default();
        items
            .iter()
            .map(|i| i[field].as_str().unwrap().as_bytes().to_vec())
            .collect()
    };
    let mut seen = seen.lock().unwrap();
    let results = match path {
        "/types/default/buckets/b/multi/put" => seen.put(keys(&doc["objects"], "key")),
        "/types/default/buckets/b/multi/get" => seen.get(keys(&doc["keys"], "key")),
        _ => return ("404 Not Found", "no such resource".into()),
    };
    let results: Vec<Value> = results.iter().map(result_json).collect();
    ("200 OK", json!({ "results": results }).to_string())
}

fn result_json(r: &EddyKeyResult) -> Value {
    let status = match Status::try_from(r.status).unwrap() {
        Status::Ok => "ok",
        Status::NotFound => "not_found",
        Status::Error => "error",
    };
    let mut v = json!({"key": String::from_utf8_lossy(&r.key), "status": status});
    if let Some(e) = &r.errmsg {
        v["error"] = String::from_utf8_lossy(e).into();
    }
    v
}

fn config(protocol: &str, addr: &str, ops: &str, extra: &str) -> String {
    format!(
        r#"
        duration = "300ms"
        concurrent = 2
        baseline = "0s"
        [driver]
        protocol = "{protocol}"
        endpoints = ["{addr}"]
        bucket = "b"
        [operations]
        {ops}
        [multi_get]
        keys = 7
        [multi_put]
        keys = 5
        [keys]
        generator = "uniform_int"
        max = 40
        [values]
        generator = "fixed_bin"
        size = 20
        {extra}
        "#
    )
}

fn run(text: &str) -> RunOutcome {
    let options = RunOptions {
        out: Output::None,
        threads: Some(1),
        ..RunOptions::default()
    };
    let config = parse_valid(text).unwrap();
    run_config(&config, "multi", &options).unwrap()
}

fn successes(o: &RunOutcome, op: OpKind) -> u64 {
    o.totals.get(&op).map_or(0, |w| w.latency_ns.len())
}

fn not_found(o: &RunOutcome, op: OpKind) -> u64 {
    o.totals.get(&op).map_or(0, |w| w.not_found)
}

#[test]
fn each_request_carries_its_batch_over_pb_and_http() {
    for protocol in ["pb", "http"] {
        let (addr, seen) = match protocol {
            "pb" => server(serve_pb),
            _ => server(serve_http),
        };
        let text = config(protocol, &addr, "multi_put = 1\nmulti_get = 1", "");
        let outcome = run(&text);
        assert!(outcome.summary.errors_by_kind().is_empty(), "{protocol}");
        let (puts, gets) = (
            successes(&outcome, OpKind::MultiPut),
            successes(&outcome, OpKind::MultiGet),
        );
        assert!(puts > 0 && gets > 0, "{protocol}: {puts} puts, {gets} gets");
        let seen = seen.lock().unwrap();
        // The probe ran each once more; a request cut off at the end of
        // the run reached the server but was not counted.
        assert!(seen.batches.len() as u64 >= puts + gets + 2, "{protocol}");
        assert!(
            seen.batches.iter().all(|n| *n == 5 || *n == 7),
            "{protocol}"
        );
        for key in &seen.keys {
            let n: u64 = std::str::from_utf8(key).unwrap().parse().unwrap();
            assert!(n < 40, "{protocol}: key {n}");
        }
    }
}

#[test]
fn preloaded_keys_are_found_and_a_failed_key_fails_its_request() {
    let (addr, seen) = server(serve_pb);
    let preload = "[preload]\nkeys = 40";
    let outcome = run(&config("pb", &addr, "multi_get = 1", preload));
    assert!(successes(&outcome, OpKind::MultiGet) > 0);
    assert_eq!(
        not_found(&outcome, OpKind::MultiGet),
        0,
        "every key preloaded"
    );
    assert!(outcome.summary.errors_by_kind().is_empty());

    // Every key but one is missing: a request that finds nothing counts
    // as not_found; one naming the poisoned key is a key_error.
    let (addr, seen_poisoned) = server(serve_pb);
    seen_poisoned.lock().unwrap().poisoned = Some(b"000000000003".to_vec());
    let options = RunOptions {
        out: Output::None,
        threads: Some(1),
        skip_probe: true,
        ..RunOptions::default()
    };
    let text = config("pb", &addr, "multi_get = 1", "");
    let outcome = run_config(&parse_valid(&text).unwrap(), "multi", &options).unwrap();
    let errors = outcome.summary.errors_by_kind();
    assert!(
        errors.keys().all(|k| k == "key_error: timeout"),
        "{errors:?}"
    );
    assert!(not_found(&outcome, OpKind::MultiGet) > 0);
    drop(seen);
}

#[test]
fn the_probe_names_a_server_without_multi_key_requests() {
    // A PB server that knows only Riak's requests.
    fn riak_only(mut s: TcpStream, _seen: &Mutex<Seen>) {
        loop {
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return;
            }
            let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
            s.read_exact(&mut frame).unwrap();
            let mut out = Vec::new();
            match frame[0] {
                code if codes::is_eddys(code) => {
                    let e = eddy_wire::proto::RpbErrorResp {
                        errmsg: format!("Unknown message code: {code}").into_bytes(),
                        errcode: 0,
                    };
                    encode_frame(codes::ERROR_RESP, &e, &mut out);
                }
                other => encode_empty(other + 1, &mut out),
            }
            s.write_all(&out).unwrap();
        }
    }
    let (addr, _) = server(riak_only);
    let options = RunOptions {
        out: Output::None,
        threads: Some(1),
        ..RunOptions::default()
    };
    let text = config("pb", &addr, "multi_put = 1", "");
    let e = run_config(&parse_valid(&text).unwrap(), "multi", &options).unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("multi_put") && e.contains("Unknown message code: 162"),
        "{e}"
    );
}
