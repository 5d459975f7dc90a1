//! `eddy bench pb`'s preset run by the runner against a small PB server in
//! this process that stores what it is given: plain keys on the wire, no
//! probe, nothing written, and a missed get counted as an error.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eddy_bench::config::Span;
use eddy_bench::ops::OpKind;
use eddy_bench::preset::{self, PbPreset, PbWorkload};
use eddy_bench::{Output, RunOptions, RunOutcome, run_config};
use eddy_wire::codes;
use eddy_wire::frame::{encode_empty, encode_frame};
use eddy_wire::proto::{RpbContent, RpbGetReq, RpbGetResp, RpbPutReq};
use prost::Message;

/// What the server has seen.
#[derive(Default)]
struct Seen {
    keys: HashSet<Vec<u8>>,
    puts: u64,
    gets: u64,
}

/// A PB server on a free port: puts store their key, gets find the keys
/// stored, server info answers; one thread per connection.
fn store_server() -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let shared = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let seen = shared.clone();
            std::thread::spawn(move || serve(stream.unwrap(), &seen));
        }
    });
    (addr, seen)
}

fn serve(mut s: TcpStream, seen: &Mutex<Seen>) {
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
                seen.puts += 1;
                encode_empty(codes::PUT_RESP, &mut out);
            }
            codes::GET_REQ => {
                let req = RpbGetReq::decode(body).unwrap();
                seen.gets += 1;
                let content = seen.keys.contains(&req.key).then(|| RpbContent {
                    value: b"v".to_vec(),
                    ..Default::default()
                });
                let resp = RpbGetResp {
                    content: content.into_iter().collect(),
                    ..Default::default()
                };
                encode_frame(codes::GET_RESP, &resp, &mut out);
            }
            other => encode_empty(other + 1, &mut out),
        }
        drop(seen);
        s.write_all(&out).unwrap();
    }
}

fn preset_for(addr: &str, workload: PbWorkload) -> PbPreset {
    PbPreset {
        addr: addr.to_string(),
        connections: 2,
        duration: Span(Duration::from_millis(300)),
        value_size: 100,
        keys: 50,
        workload,
        read_percent: 50,
        skip_preload: false,
        bucket: "b".into(),
        bucket_type: None,
        w: None,
        dw: None,
        r: None,
        request_timeout: Span(Duration::from_secs(5)),
        baseline: Span(Duration::ZERO),
        seed: 1,
    }
}

fn run(p: &PbPreset) -> RunOutcome {
    let options = RunOptions {
        out: Output::None,
        threads: Some(1),
        skip_probe: true,
        ..RunOptions::default()
    };
    run_config(&preset::pb_checked(p).unwrap(), "preset pb", &options).unwrap()
}

fn successes(o: &RunOutcome, op: OpKind) -> u64 {
    o.totals.get(&op).map_or(0, |w| w.latency_ns.len())
}

#[test]
fn puts_write_plain_keys_and_nothing_else() {
    let (addr, seen) = store_server();
    let outcome = run(&preset_for(&addr, PbWorkload::Put));
    assert_eq!(outcome.dir, None, "no results directory");
    assert!(outcome.summary.preload_s.is_none());
    let seen = seen.lock().unwrap();
    // No probe: every put the server answered is one of the load's.
    assert_eq!(seen.puts, successes(&outcome, OpKind::Put));
    assert!(seen.puts > 0);
    assert_eq!(seen.gets, 0);
    for key in &seen.keys {
        let text = std::str::from_utf8(key).unwrap();
        let n: u64 = text.parse().unwrap();
        assert!(n < 50 && text == n.to_string(), "key {text:?}");
    }
}

#[test]
fn gets_of_preloaded_keys_all_succeed() {
    let (addr, seen) = store_server();
    let outcome = run(&preset_for(&addr, PbWorkload::Mixed));
    assert!(outcome.summary.preload_s.is_some());
    let expected: HashSet<Vec<u8>> = (0..50u64).map(|n| n.to_string().into_bytes()).collect();
    assert_eq!(seen.lock().unwrap().keys, expected);
    assert!(successes(&outcome, OpKind::Get) > 0);
    assert!(successes(&outcome, OpKind::Put) > 0);
    assert!(outcome.summary.errors_by_kind().is_empty());
}

#[test]
fn a_missed_get_is_the_error_not_found() {
    let (addr, seen) = store_server();
    let p = PbPreset {
        skip_preload: true,
        ..preset_for(&addr, PbWorkload::Get)
    };
    let outcome = run(&p);
    let errors = outcome.summary.errors_by_kind();
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["not_found"]);
    assert_eq!(errors["not_found"], seen.lock().unwrap().gets);
    assert_eq!(successes(&outcome, OpKind::Get), 0);
}
