//! Index entries and `keys.once`, run by the runner against small servers
//! in this process (PB and HTTP) that store each put with its index
//! entries and answer exact 2i queries from them: a `once` load writes
//! every key exactly once and ends by itself, each object carries every
//! entry of `[[index.entries]]` with the term its JSON document holds, and
//! `index_query` asks the entry `index.field` names.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use eddy_bench::config::parse_valid;
use eddy_bench::ops::OpKind;
use eddy_bench::report::summary::Ending;
use eddy_bench::{Output, RunOptions, RunOutcome, run_config};
use eddy_wire::codes;
use eddy_wire::frame::{encode_empty, encode_frame};
use eddy_wire::proto::eddy::{EddyKeyResult, EddyMultiPutReq, EddyMultiPutResp};
use eddy_wire::proto::{RpbIndexReq, RpbIndexResp, RpbPutReq};
use prost::Message;
use serde_json::Value;

/// One stored key: how often it was written, its last value and entries.
#[derive(Default)]
struct Stored {
    writes: usize,
    value: Vec<u8>,
    indexes: Vec<(String, String)>,
}

/// What a server has seen.
#[derive(Default)]
struct Seen {
    keys: BTreeMap<String, Stored>,
    /// Keys per multi-put request.
    batches: Vec<usize>,
    /// `(field, term)` of each exact 2i query.
    queries: Vec<(String, String)>,
}

impl Seen {
    fn store(&mut self, key: &[u8], value: Vec<u8>, indexes: Vec<(String, String)>) {
        let stored = self.keys.entry(text(key)).or_default();
        stored.writes += 1;
        stored.value = value;
        stored.indexes = indexes;
    }

    /// The keys whose entry `field` is `term`.
    fn query(&mut self, field: String, term: String) -> Vec<String> {
        let found = self
            .keys
            .iter()
            .filter(|(_, s)| s.indexes.iter().any(|(f, t)| *f == field && *t == term))
            .map(|(k, _)| k.clone())
            .collect();
        self.queries.push((field, term));
        found
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
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

fn pairs(indexes: Vec<eddy_wire::proto::RpbPair>) -> Vec<(String, String)> {
    indexes
        .into_iter()
        .map(|p| (text(&p.key), text(&p.value.unwrap_or_default())))
        .collect()
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
                let c = req.content;
                seen.store(&req.key.unwrap(), c.value, pairs(c.indexes));
                encode_empty(codes::PUT_RESP, &mut out);
            }
            codes::MULTI_PUT_REQ => {
                let req = EddyMultiPutReq::decode(body).unwrap();
                seen.batches.push(req.objects.len());
                let mut results = Vec::new();
                for o in req.objects {
                    seen.store(&o.key, o.content.value, pairs(o.content.indexes));
                    results.push(EddyKeyResult {
                        key: o.key,
                        ..Default::default()
                    });
                }
                encode_frame(
                    codes::MULTI_PUT_RESP,
                    &EddyMultiPutResp { results },
                    &mut out,
                );
            }
            codes::INDEX_REQ => {
                let req = RpbIndexReq::decode(body).unwrap();
                let keys = seen.query(text(&req.index), text(&req.key.unwrap()));
                let resp = RpbIndexResp {
                    keys: keys.into_iter().map(String::into_bytes).collect(),
                    ..Default::default()
                };
                encode_frame(codes::INDEX_RESP, &resp, &mut out);
            }
            other => encode_empty(other + 1, &mut out),
        }
        drop(seen);
        s.write_all(&out).unwrap();
    }
}

/// Riak's HTTP API as far as the runner uses it here: `/ping`, puts with
/// `x-riak-index-*` headers, and exact 2i queries.
fn serve_http(s: TcpStream, seen: &Mutex<Seen>) {
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut writer = s;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut words = line.split(' ');
        let (method, path) = (words.next().unwrap(), words.next().unwrap_or(""));
        let path = path.split('?').next().unwrap().to_string();
        let (mut length, mut indexes) = (0, Vec::new());
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            if header.trim().is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            let (name, value) = (name.to_ascii_lowercase(), value.trim().to_string());
            if name == "content-length" {
                length = value.parse().unwrap();
            } else if let Some(field) = name.strip_prefix("x-riak-index-") {
                indexes.push((field.to_string(), value));
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).unwrap();
        let base = "/types/default/buckets/coupons/";
        let rest = path.strip_prefix(base).unwrap_or("");
        let mut seen = seen.lock().unwrap();
        let parts: Vec<&str> = rest.split('/').collect();
        let (status, answer) = match (method, &parts[..]) {
            _ if path == "/ping" => ("200 OK", "OK".to_string()),
            ("PUT", ["keys", key]) => {
                seen.store(key.as_bytes(), body, indexes);
                ("204 No Content", String::new())
            }
            ("GET", ["index", field, term]) => {
                let keys = seen.query(field.to_string(), term.to_string());
                ("200 OK", serde_json::json!({ "keys": keys }).to_string())
            }
            _ => ("404 Not Found", "no such resource".to_string()),
        };
        drop(seen);
        let reply = format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        writer.write_all(reply.as_bytes()).unwrap();
    }
}

/// Coupons: json documents with an affiliate and a redeemed count, each
/// put carrying both as index entries.
fn coupons(protocol: &str, addr: &str, ops: &str, keys: &str) -> String {
    format!(
        r#"
        duration = "60s"
        concurrent = 4
        baseline = "0s"
        [driver]
        protocol = "{protocol}"
        endpoints = ["{addr}"]
        bucket = "coupons"
        [operations]
        {ops}
        [multi_put]
        keys = 7
        [keys]
        {keys}
        prefix = "coupon-"
        [values]
        generator = "json"
        size = 200
        [values.int_fields]
        affiliate_id = 50
        redeemed_count = 100
        [index]
        field = "affiliate_bin"
        [[index.entries]]
        field = "redeemed_count_int"
        from = "redeemed_count"
        [[index.entries]]
        field = "affiliate_bin"
        from = "affiliate_id"
        prefix = "affiliate-"
        "#
    )
}

const ONCE: &str = "generator = \"partitioned_sequential_int\"\nmax = 1000\nonce = true";

fn run(text: &str, skip_probe: bool) -> RunOutcome {
    let options = RunOptions {
        out: Output::None,
        threads: Some(1),
        skip_probe,
        ..RunOptions::default()
    };
    run_config(&parse_valid(text).unwrap(), "index", &options).unwrap()
}

fn successes(o: &RunOutcome, op: OpKind) -> u64 {
    o.totals.get(&op).map_or(0, |w| w.latency_ns.len())
}

/// Every key of `0..max` written exactly once, with the entries its
/// document says.
fn assert_loaded_once(seen: &Seen, max: usize) {
    assert_eq!(seen.keys.len(), max);
    for (n, (key, stored)) in seen.keys.iter().enumerate() {
        assert_eq!(*key, format!("coupon-{n:012}"));
        assert_eq!(stored.writes, 1, "{key} written {} times", stored.writes);
        let doc: Value = serde_json::from_slice(&stored.value).unwrap();
        let want = vec![
            (
                "redeemed_count_int".to_string(),
                doc["redeemed_count"].to_string(),
            ),
            (
                "affiliate_bin".to_string(),
                format!("affiliate-{}", doc["affiliate_id"]),
            ),
        ];
        assert_eq!(stored.indexes, want, "{key}");
    }
}

#[test]
fn a_once_load_writes_every_key_once_with_its_entries_then_ends() {
    for protocol in ["pb", "http"] {
        let (addr, seen) = match protocol {
            "pb" => server(serve_pb),
            _ => server(serve_http),
        };
        let outcome = run(&coupons(protocol, &addr, "put = 1", ONCE), true);
        let s = &outcome.summary;
        assert_eq!(s.ending, Ending::KeysUsedUp, "{protocol}");
        assert!(s.elapsed_s < 30.0, "{protocol}: ended by itself");
        assert!(s.to_text().contains("every key used once"), "{protocol}");
        assert!(s.errors_by_kind().is_empty(), "{protocol}");
        assert_eq!(successes(&outcome, OpKind::Put), 1000, "{protocol}");
        assert_loaded_once(&seen.lock().unwrap(), 1000);
    }
}

#[test]
fn the_probe_before_a_once_load_leaves_every_key_to_the_run() {
    for generator in ["sequential_int", "partitioned_sequential_int"] {
        let (addr, seen) = server(serve_pb);
        let keys = format!("generator = \"{generator}\"\nmax = 100\nonce = true");
        let outcome = run(&coupons("pb", &addr, "put = 1", &keys), false);
        assert_eq!(outcome.summary.ending, Ending::KeysUsedUp, "{generator}");
        assert_eq!(successes(&outcome, OpKind::Put), 100, "{generator}");
        let seen = seen.lock().unwrap();
        let writes: Vec<_> = seen.keys.values().map(|s| s.writes).collect();
        assert_eq!(writes.len(), 100, "{generator}");
        assert_eq!(writes[0], 2, "{generator}: the probe's key, and the run's");
        assert!(writes[1..].iter().all(|w| *w == 1), "{generator}");
    }
}

#[test]
fn a_once_multi_put_load_cuts_the_last_batch_short() {
    let (addr, seen) = server(serve_pb);
    let keys = "generator = \"partitioned_sequential_int\"\nmax = 102\nonce = true";
    let outcome = run(&coupons("pb", &addr, "multi_put = 1", keys), true);
    assert_eq!(outcome.summary.ending, Ending::KeysUsedUp);
    let seen = seen.lock().unwrap();
    assert_loaded_once(&seen, 102);
    // Four workers walk slices of 25 or 26 keys in batches of 7.
    let short: Vec<_> = seen.batches.iter().filter(|n| **n != 7).collect();
    assert_eq!(short.len(), 4, "{:?}", seen.batches);
    assert!(short.iter().all(|n| **n == 4 || **n == 5), "{short:?}");
}

#[test]
fn index_query_asks_the_named_entry_and_finds_what_the_load_wrote() {
    for protocol in ["pb", "http"] {
        let (addr, seen) = match protocol {
            "pb" => server(serve_pb),
            _ => server(serve_http),
        };
        run(&coupons(protocol, &addr, "put = 1", ONCE), true);
        let uniform = "generator = \"uniform_int\"\nmax = 1000";
        let text = coupons(protocol, &addr, "index_query = 1", uniform)
            .replace("duration = \"60s\"", "duration = \"300ms\"");
        let outcome = run(&text, false);
        let queries = successes(&outcome, OpKind::IndexQuery);
        assert!(queries > 0 && outcome.summary.errors_by_kind().is_empty());
        let mut seen = seen.lock().unwrap();
        assert!(seen.queries.len() as u64 > queries, "and the probe's");
        // 1000 coupons over 50 affiliates: each has about 20.
        let found: usize = (0..50)
            .map(|a| {
                seen.query("affiliate_bin".into(), format!("affiliate-{a}"))
                    .len()
            })
            .sum();
        assert_eq!(found, 1000, "{protocol}");
        for (field, term) in &seen.queries {
            assert_eq!(field, "affiliate_bin", "{protocol}");
            let id: u64 = term.strip_prefix("affiliate-").unwrap().parse().unwrap();
            assert!(id < 50, "{protocol}: {term}");
        }
    }
}
