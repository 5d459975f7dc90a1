//! `eddy dev-cluster` with the real binary, in a temporary working
//! directory: three nodes joined and settled, an object written on dev1
//! and read on dev3, one node restarted by hand with `eddy start --config
//! dev/dev2/eddy.toml`, a fourth node added, everything stopped, and bad
//! counts refused.
//!
//! The dev cluster's ports (10017–10049 for four nodes) are fixed, so one
//! test uses them all, and it is skipped, saying why, when one is taken.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use eddy_client::http::{self, HttpResponse};
use serde_json::Value;

/// HTTP port of devI.
fn http_port(i: u16) -> u16 {
    10_008 + 10 * i
}

fn eddy(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(args)
        .current_dir(cwd)
        .env_remove("EDDY_LOG")
        .output()
        .expect("run eddy")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn call(i: u16, method: &str, path: &str, body: &[u8]) -> HttpResponse {
    let addr = format!("127.0.0.1:{}", http_port(i));
    http::request(&addr, method, path, &[("Content-Type", "text/plain")], body)
        .unwrap_or_else(|e| panic!("dev{i} {method} {path}: {e}"))
}

/// The (node, status) rows of devI's member-status.
fn members(i: u16) -> Vec<(String, String)> {
    let r = call(i, "GET", "/admin/member-status", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    v["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["node"].as_str().unwrap().to_string(),
                m["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn assert_valid_members(count: u16) {
    let want: Vec<(String, String)> = (1..=count)
        .map(|i| (format!("dev{i}@127.0.0.1"), "valid".to_string()))
        .collect();
    for i in 1..=count {
        assert_eq!(members(i), want, "member-status of dev{i}");
    }
}

/// A port of the dev cluster that another process holds, if any.
fn port_taken() -> Option<u16> {
    (10_017..=10_049).find(|p| TcpListener::bind(("127.0.0.1", *p)).is_err())
}

/// The pid a node's data directory names.
fn pid_of(cwd: &Path, i: u16) -> i32 {
    let file = cwd.join(format!("dev/dev{i}/data/eddy.pid"));
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .trim()
        .parse()
        .unwrap()
}

/// True while `pid` is a process that has not exited.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => false,
    }
}

/// "ready in 4.21 s" → 4.21.
fn reported_secs(stdout: &str) -> f64 {
    let after = stdout
        .split("ready in ")
        .nth(1)
        .unwrap_or_else(|| panic!("no time reported in:\n{stdout}"));
    after.split(' ').next().unwrap().parse().unwrap()
}

/// Stops whatever the test left running, even when it fails.
struct Cleanup {
    cwd: PathBuf,
    restarted: Option<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = eddy(&self.cwd, &["dev-cluster", "stop"]);
        if let Some(mut c) = self.restarted.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn wait_for_ping(i: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let addr = format!("127.0.0.1:{}", http_port(i));
    while http::request(&addr, "GET", "/ping", &[], b"").map_or(true, |r| r.status != 200) {
        assert!(Instant::now() < deadline, "dev{i} did not answer /ping");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bad_counts_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["0", "10", "-1", "many"] {
        let out = eddy(tmp.path(), &["dev-cluster", bad]);
        assert!(!out.status.success(), "dev-cluster {bad} succeeded");
        let err = text(&out.stderr);
        assert!(err.contains("1 to 9 nodes"), "dev-cluster {bad}: {err}");
    }
    let out = eddy(tmp.path(), &["dev-cluster", "add"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no dev cluster"),
        "{}",
        text(&out.stderr)
    );
    let out = eddy(tmp.path(), &["dev-cluster", "stop"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("no dev node was running"));
    assert!(!tmp.path().join("dev").exists());
}

#[test]
fn three_nodes_then_a_fourth_then_stop() {
    if let Some(port) = port_taken() {
        eprintln!("skipping: port {port} of the dev cluster (10017-10049) is in use");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().to_path_buf();
    let mut cleanup = Cleanup {
        cwd: cwd.clone(),
        restarted: None,
    };

    let out = eddy(&cwd, &["dev-cluster", "3"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(reported_secs(&stdout) > 0.0);
    for i in 2..=3 {
        assert!(stdout.contains(&format!(
            "Success: staged join request for 'dev{i}@127.0.0.1' to 'dev1@127.0.0.1'"
        )));
    }
    assert_valid_members(3);

    let put = call(1, "PUT", "/buckets/dev/keys/k1", b"written on dev1");
    assert!(put.status == 204 || put.status == 200, "{}", put.text());
    let got = call(3, "GET", "/buckets/dev/keys/k1", b"");
    assert_eq!((got.status, got.text().as_str()), (200, "written on dev1"));

    // Again while they run: nothing is started, nothing is joined.
    let out = eddy(&cwd, &["dev-cluster", "3"]);
    let again = text(&out.stdout);
    assert!(out.status.success(), "{again}\n{}", text(&out.stderr));
    assert!(
        again.contains("dev2@127.0.0.1 is already running"),
        "{again}"
    );
    assert!(!again.contains("staged join"), "{again}");

    // One node by hand, with its own configuration file.
    let config = "dev/dev2/eddy.toml";
    let out = eddy(&cwd, &["stop", "--config", config]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let child = Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["start", "--config", config])
        .current_dir(&cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    cleanup.restarted = Some(child);
    wait_for_ping(2);
    let out = eddy(&cwd, &["ping", "--config", config]);
    assert_eq!(text(&out.stdout).trim(), "pong");
    let out = eddy(&cwd, &["admin", "status", "--config", config]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("dev2@127.0.0.1"));
    let out = eddy(&cwd, &["admin", "member-status", "--config", config]);
    let status = text(&out.stdout);
    assert!(out.status.success(), "{status}\n{}", text(&out.stderr));
    assert!(status.contains("Valid:3 / Leaving:0"), "{status}");
    assert_eq!(members(2).len(), 3);

    let out = eddy(&cwd, &["dev-cluster", "add"]);
    let added = text(&out.stdout);
    assert!(out.status.success(), "{added}\n{}", text(&out.stderr));
    assert!(added.contains("staged join request for 'dev4@127.0.0.1'"));
    assert!(reported_secs(&added) > 0.0);
    assert_valid_members(4);
    let got = call(4, "GET", "/buckets/dev/keys/k1", b"");
    assert_eq!((got.status, got.text().as_str()), (200, "written on dev1"));

    let out = eddy(&cwd, &["dev-cluster", "2"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("holds 4 nodes"),
        "{}",
        text(&out.stderr)
    );

    let pids: Vec<i32> = (1..=4).map(|i| pid_of(&cwd, i)).collect();
    let out = eddy(&cwd, &["dev-cluster", "stop"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("stopped 4 dev nodes"));
    if let Some(mut c) = cleanup.restarted.take() {
        assert!(c.wait().unwrap().success());
    }
    for pid in pids {
        assert!(!alive(pid), "pid {pid} still runs after dev-cluster stop");
    }
    assert_eq!(port_taken(), None);
}
