//! `eddy bench run` and `eddy bench compare` against a real node started
//! from the built binary: results files, a node killed mid-run, operations
//! the node does not serve, and a comparison of two runs.
#![cfg(feature = "bench")]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use eddy_bench::report::csv::parse_file;
use eddy_bench::report::summary::{Ending, Summary};
use support::TestNode;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// A small workload against `endpoint` over `protocol`, with `extra` TOML
/// lines at the top level and `ops` as the operations table.
fn workload(protocol: &str, endpoint: &str, ops: &str, extra: &str) -> String {
    format!(
        r#"
duration = "3s"
concurrent = 4
report_interval = "500ms"
request_timeout = "2s"
{extra}
[driver]
protocol = "{protocol}"
endpoints = ["{endpoint}"]
bucket = "bench-e2e"

[operations]
{ops}

[keys]
generator = "uniform_int"
max = 200

[values]
generator = "semi_compressible"
size_min = 100
size_max = 2000
compression_ratio = 2.0

[preload]
keys = 50
"#
    )
}

fn write_config(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn eddy(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.args(args);
    cmd
}

/// Runs `config` without the loopback baseline (the tests' runs are too
/// short to read against it).
fn run_bench(config: &Path, out: &Path) -> Output {
    run_bench_with_baseline(config, out, "0s")
}

fn run_bench_with_baseline(config: &Path, out: &Path, baseline: &str) -> Output {
    eddy(&["bench", "run", "--baseline", baseline])
        .arg(config)
        .arg("--out")
        .arg(out)
        .output()
        .expect("eddy bench run starts")
}

fn summary(dir: &Path) -> Summary {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json parses")
}

fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.starts_with(PNG_SIGNATURE),
        "{} is not a PNG",
        path.display()
    );
}

fn assert_ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "eddy failed: {stderr}");
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn run_writes_csv_summary_and_charts_over_pb_and_http() {
    let node = TestNode::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let ops = "get = 4\nput = 2\nupdate = 2\ndelete = 1";
    let runs = [
        ("pb", node.pb_port, "300ms"),
        ("http", node.http_port, "0s"),
    ];
    for (protocol, port, baseline) in runs {
        let endpoint = format!("127.0.0.1:{port}");
        let text = workload(protocol, &endpoint, ops, "");
        let config = write_config(tmp.path(), &format!("{protocol}.toml"), &text);
        let out_dir = tmp.path().join(format!("results-{protocol}"));
        let stdout = assert_ok(&run_bench_with_baseline(&config, &out_dir, baseline));
        assert!(stdout.contains("results:"), "{stdout}");
        // The pb run read itself against a loopback echo; the http run
        // skipped it.
        let s = summary(&out_dir);
        assert_eq!(s.baseline.is_some(), baseline != "0s", "{protocol}");
        if let Some(b) = &s.baseline {
            assert!(b.ops > 0 && b.latency.p99_us >= b.latency.p50_us, "{b:?}");
            assert!(stdout.contains("loopback echo:"), "{stdout}");
        }
        for op in ["get", "put", "update", "delete"] {
            let csv = std::fs::read_to_string(out_dir.join(format!("{op}.csv"))).unwrap();
            let rows = parse_file(&csv).unwrap_or_else(|e| panic!("{protocol} {op}.csv: {e}"));
            assert!(rows.len() >= 4, "{protocol} {op}: {} rows", rows.len());
            assert!(
                rows.iter().map(|r| r.n).sum::<u64>() > 0,
                "{protocol} {op}: no successes"
            );
            assert!(rows.windows(2).all(|w| w[0].elapsed < w[1].elapsed));
            assert_png(&out_dir.join(format!("latency_{op}.png")));
        }
        assert_png(&out_dir.join("throughput.png"));
        let s = summary(&out_dir);
        assert_eq!(s.ending, Ending::Completed);
        assert_eq!(s.protocol, protocol);
        assert_eq!(s.preload_keys, Some(50));
        assert_eq!(s.ops.len(), 4);
        let errors: u64 = s.ops.iter().map(|o| o.errors).sum();
        assert_eq!(errors, 0, "{protocol}: {:?}", s.errors_by_kind());
        assert!(
            std::fs::read_to_string(out_dir.join("summary.txt"))
                .unwrap()
                .contains("ops/s")
        );
        assert_eq!(
            std::fs::read_to_string(out_dir.join("config.toml")).unwrap(),
            text
        );
        assert!(
            std::fs::read_to_string(out_dir.join("machine.txt"))
                .unwrap()
                .contains("nproc:")
        );
    }
}

#[test]
fn killed_node_ends_the_run_with_connection_errors() {
    let mut node = TestNode::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let endpoint = format!("127.0.0.1:{}", node.pb_port);
    let extra = "give_up_after = \"2s\"";
    let text = workload("pb", &endpoint, "get = 1\nput = 1", extra)
        .replace("duration = \"3s\"", "duration = \"60s\"");
    let config = write_config(tmp.path(), "kill.toml", &text);
    let out_dir = tmp.path().join("results");
    let child = start_run_and_wait_for_rows(&config, &out_dir);
    node.kill9();
    let stdout = stopped_early(wait_bounded(child, Duration::from_secs(30)));
    assert!(stdout.contains("connection_refused"), "{stdout}");
    let s = summary(&out_dir);
    assert!(matches!(s.ending, Ending::GaveUp(_)), "{:?}", s.ending);
    assert!(s.elapsed_s < 30.0, "ran {} s", s.elapsed_s);
    assert!(
        s.errors_by_kind()
            .get("connection_refused")
            .is_some_and(|n| *n > 0)
    );
    assert!(s.ops.iter().all(|o| o.n > 0), "successes before the kill");
    assert_png(&out_dir.join("throughput.png"));
}

/// Runs `config` in the background until `get.csv` in `out_dir` has a row
/// with successes.
fn start_run_and_wait_for_rows(config: &Path, out_dir: &Path) -> std::process::Child {
    let started = Instant::now();
    let child = eddy(&["bench", "run", "--baseline", "0s"])
        .arg(config)
        .arg("--out")
        .arg(out_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let get_csv = out_dir.join("get.csv");
    let has_rows = || {
        std::fs::read_to_string(&get_csv)
            .ok()
            .and_then(|t| parse_file(&t).ok())
            .is_some_and(|rows| rows.iter().any(|r| r.n > 0))
    };
    while !has_rows() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no row written"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Waits at most `limit` for `child` to exit; returns its output.
/// Checks that a run ended on its own with a report saying it stopped
/// early, and returns its standard output.
fn stopped_early(out: Output) -> String {
    let stdout = assert_ok(&out);
    assert!(stdout.contains("STOPPED EARLY"), "{stdout}");
    stdout
}

fn wait_bounded(mut child: std::process::Child, limit: Duration) -> Output {
    let since = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            since.elapsed() < limit,
            "bench did not end within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
#[allow(unsafe_code, reason = "stops and resumes the test's own node")]
fn a_node_that_stops_answering_ends_the_run_with_timeouts() {
    let node = TestNode::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let endpoint = format!("127.0.0.1:{}", node.pb_port);
    let extra = "give_up_after = \"2s\"\nrequest_timeout = \"500ms\"";
    let text = workload("pb", &endpoint, "get = 1\nput = 1", extra)
        .replace("request_timeout = \"2s\"\n", "")
        .replace("duration = \"3s\"", "duration = \"60s\"");
    let config = write_config(tmp.path(), "hang.toml", &text);
    let out_dir = tmp.path().join("results");
    let child = start_run_and_wait_for_rows(&config, &out_dir);
    let pid = node.pid().expect("running") as i32;
    // SAFETY: kill(2) on the test's own child. The kernel still accepts
    // connections for a stopped process; nothing answers them.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let out = wait_bounded(child, Duration::from_secs(30));
    // SAFETY: kill(2) on the test's own child, as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    stopped_early(out);
    let s = summary(&out_dir);
    assert!(
        s.errors_by_kind().get("timeout").is_some_and(|n| *n > 0),
        "{:?}",
        s.errors_by_kind()
    );
    assert_eq!(s.workers_aborted, 0);
}

#[test]
fn mapreduce_and_multi_key_operations_run_against_the_node() {
    let node = TestNode::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let pb = format!("127.0.0.1:{}", node.pb_port);
    let http = format!("127.0.0.1:{}", node.http_port);
    let multi = "[multi_get]\nkeys = 5\nvia = \"mapreduce\"";
    let native = "[multi_get]\nkeys = 5\n[multi_put]\nkeys = 5";
    for (i, (protocol, endpoint, ops, section)) in [
        ("pb", &pb, "get = 1\nmapreduce = 1", ""),
        ("pb", &pb, "get = 1\nmulti_get = 1", multi),
        ("http", &http, "get = 1\nmapreduce = 1", ""),
        ("pb", &pb, "multi_get = 1\nmulti_put = 1", native),
        ("http", &http, "multi_get = 1\nmulti_put = 1", native),
    ]
    .into_iter()
    .enumerate()
    {
        let text = format!("{}\n{section}\n", workload(protocol, endpoint, ops, ""));
        let config = write_config(tmp.path(), &format!("mr{i}.toml"), &text);
        let out_dir = tmp.path().join(format!("mr{i}"));
        assert_ok(&run_bench(&config, &out_dir));
        let s = summary(&out_dir);
        assert_eq!(s.ending, Ending::Completed, "{ops}");
        let errors: u64 = s.ops.iter().map(|o| o.errors).sum();
        assert_eq!(errors, 0, "{ops}: {:?}", s.errors_by_kind());
        assert!(s.ops.iter().all(|o| o.n > 0), "{ops}: {:?}", s.ops);
    }
}

#[test]
fn refused_operations_stop_the_run_before_it_starts() {
    let node = TestNode::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let pb = format!("127.0.0.1:{}", node.pb_port);
    let http = format!("127.0.0.1:{}", node.http_port);
    // Erlang source functions are refused, as Riak refuses them by default.
    let job = "[mapreduce]\njob = '{\"inputs\":\"{bucket}\",\"query\":[{\"map\":{\"language\":\"erlang\",\"source\":\"fun(O, _, _) -> [O] end.\"}}]}'";
    for (protocol, endpoint, expected) in [
        ("pb", &pb, "worker_startup_failed"),
        ("http", &http, "http_4"),
    ] {
        let ops = "get = 1\nmapreduce = 1";
        let text = format!("{}\n{job}\n", workload(protocol, endpoint, ops, ""));
        let config = write_config(tmp.path(), "refused.toml", &text);
        let out_dir = tmp.path().join("never");
        let out = run_bench(&config, &out_dir);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{protocol}: should fail");
        assert!(stderr.contains("is not served by"), "{protocol}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{protocol}: expected {expected:?} in {stderr}"
        );
        assert!(!out_dir.exists(), "no results for a refused run");
    }
}

#[test]
fn compare_draws_two_runs_side_by_side() {
    let node = TestNode::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let endpoint = format!("127.0.0.1:{}", node.pb_port);
    let text = workload("pb", &endpoint, "get = 1\nput = 1", "")
        .replace("duration = \"3s\"", "duration = \"2s\"");
    let config = write_config(tmp.path(), "w.toml", &text);
    let (a, b) = (tmp.path().join("run-a"), tmp.path().join("run-b"));
    assert_ok(&run_bench(&config, &a));
    assert_ok(&run_bench_with_baseline(&config, &b, "300ms"));
    let charts = tmp.path().join("cmp");
    let out = eddy(&["bench", "compare"])
        .arg(&a)
        .arg(&b)
        .arg("--out")
        .arg(&charts)
        .output()
        .unwrap();
    let stdout = assert_ok(&out);
    assert!(
        stdout.contains("run-a") && stdout.contains("run-b"),
        "{stdout}"
    );
    assert!(
        stdout.contains("vs first") && stdout.contains("+0.0%"),
        "{stdout}"
    );
    // Only run-b measured a loopback echo; both are listed against it.
    let echo = &stdout[stdout
        .find("against each run's loopback echo")
        .expect(&stdout)..];
    let line = |run: &str| {
        echo.lines()
            .find(|l| l.starts_with(run))
            .unwrap_or_default()
    };
    assert!(line("run-a").contains("no echo measured"), "{echo}");
    assert!(line("run-b").ends_with('%'), "{echo}");
    for op in ["get", "put"] {
        for metric in ["throughput", "p50", "p99", "p99_9"] {
            assert_png(&charts.join(format!("{op}_{metric}.png")));
        }
    }
    let out = eddy(&["bench", "compare"])
        .arg(&a)
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a bench result"));
}
