//! Runs `eddy bench pb` against a real node started from the built binary.
#![cfg(feature = "bench")]

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use support::TestNode;

fn bench(node: &TestNode, args: &[&str]) -> std::process::Output {
    let addr = format!("127.0.0.1:{}", node.pb_port);
    let mut all = vec!["bench", "pb", "--addr", &addr];
    if !args.contains(&"--baseline") {
        all.extend(["--baseline", "0"]);
    }
    all.extend(args);
    node.command(&all).output().expect("eddy bench pb runs")
}

#[test]
fn get_put_and_mixed_report_json_without_errors() {
    let node = TestNode::start(&[]);
    for workload in ["get", "put", "mixed"] {
        let out = bench(
            &node,
            &[
                "--workload",
                workload,
                "--duration",
                "1",
                "--connections",
                "4",
                "--keys",
                "100",
                "--baseline",
                "0.3",
                "--json",
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{workload}: {err}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.trim().lines().count(), 1, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        for field in [
            "ops_per_s",
            "p50_us",
            "p95_us",
            "p99_us",
            "p999_us",
            "max_us",
        ] {
            let x = v[field]
                .as_f64()
                .unwrap_or_else(|| panic!("{field} in {v}"));
            assert!(x > 0.0, "{workload}: {field} = {x} in {v}");
        }
        assert!(v["ops"].as_u64().unwrap() > 0, "{v}");
        assert_eq!(v["errors"], 0, "{v}");
        assert_eq!(v["workload"], workload);
        let echo = &v["baseline"];
        assert!(echo["ops"].as_u64().unwrap() > 0, "{v}");
        assert!(echo["p99_us"].as_f64().unwrap() > 0.0, "{v}");
        let parts: &[&str] = match workload {
            "get" => &["get"],
            "put" => &["put"],
            _ => &["get", "put"],
        };
        for part in parts {
            assert!(v[part]["ops"].as_u64().unwrap() > 0, "{part} in {v}");
        }
    }
}

#[test]
fn skip_preload_reads_what_an_earlier_run_loaded() {
    let node = TestNode::start(&[]);
    let common = [
        "--duration",
        "1",
        "--connections",
        "2",
        "--keys",
        "20",
        "--json",
    ];
    for skip in [&[][..], &["--skip-preload"]] {
        let out = bench(&node, &[&["--workload", "get"][..], skip, &common].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["errors"], 0, "{v}");
        assert_eq!(v["preload_s"].is_null(), !skip.is_empty(), "{v}");
    }
    // Without a preload, keys nobody wrote are counted as not found.
    let out = bench(
        &node,
        &[
            &["--workload", "get", "--skip-preload", "--bucket", "empty"][..],
            &common,
        ]
        .concat(),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["errors_by_kind"]["not_found"].as_u64().unwrap() > 0,
        "{v}"
    );
}

#[test]
fn quorum_options_reach_the_node() {
    let node = TestNode::start(&[]);
    let common = [
        "--duration",
        "1",
        "--connections",
        "2",
        "--keys",
        "10",
        "--json",
    ];
    let ok = bench(
        &node,
        &[&["--workload", "put", "--dw", "all"][..], &common].concat(),
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // w above n_val is refused by the node: the preload fails with its text.
    let bad = bench(
        &node,
        &[&["--workload", "get", "--w", "4"][..], &common].concat(),
    );
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("preload failed") && err.contains("server error"),
        "{err}"
    );
}

/// A listener on a free port that answers its first `answered` frames
/// (over all connections, served one after another) with a bare answer of
/// the request's code + 1, then accepts connections and never answers.
fn stalling_server(answered: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut budget = answered;
        let mut kept = Vec::new();
        for stream in listener.incoming() {
            let mut s = stream.unwrap();
            while budget > 0 {
                let mut len = [0u8; 4];
                if s.read_exact(&mut len).is_err() {
                    break;
                }
                let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
                s.read_exact(&mut body).unwrap();
                s.write_all(&[0, 0, 0, 1, body[0] + 1]).unwrap();
                budget -= 1;
            }
            // Hold the socket open, unread, until the process ends.
            kept.push(s);
        }
    });
    addr
}

#[test]
fn a_node_that_stops_answering_ends_the_run_with_a_report() {
    let addr = stalling_server(50);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["bench", "pb", "--addr", &addr, "--workload", "put"])
        .args([
            "--connections",
            "1",
            "--duration",
            "1",
            "--timeout-ms",
            "200",
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "the run hung");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The ping before the run takes the first answer.
    assert_eq!(v["ops"], 49, "{v}");
    assert!(v["errors_by_kind"]["timeout"].as_u64().unwrap() >= 1, "{v}");
}

#[test]
fn a_silent_or_absent_node_is_a_clear_error() {
    let silent = stalling_server(0);
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let absent = free.local_addr().unwrap().to_string();
    drop(free);
    for (addr, why) in [(silent, "no answer within"), (absent, "cannot connect")] {
        let out = Command::new(env!("CARGO_BIN_EXE_eddy"))
            .args(["bench", "pb", "--addr", &addr])
            .args(["--duration", "1", "--timeout-ms", "300"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not answering") && err.contains(why), "{err}");
    }
}
