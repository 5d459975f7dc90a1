//! End to end: the real `eddy` binary as a child process, driven over HTTP
//! and by its own CLI.

mod support;

use support::TestNode;

fn put(node: &TestNode, path: &str, value: &str) -> u16 {
    node.http(
        "PUT",
        path,
        &[("Content-Type", "text/plain")],
        value.as_bytes(),
    )
    .status
}

#[test]
fn restart_keeps_data_and_stop_is_clean() {
    let mut node = TestNode::start(&[]);
    for i in 0..200 {
        assert_eq!(
            put(&node, &format!("/buckets/b/keys/k{i}"), &format!("v{i}")),
            204
        );
    }
    assert_eq!(
        node.http("DELETE", "/buckets/b/keys/k7", &[], b"").status,
        204
    );
    let status = node.stop();
    assert!(status.success(), "SIGTERM exit: {status}");
    node.restart();
    for i in (0..200).step_by(13) {
        let r = node.http("GET", &format!("/buckets/b/keys/k{i}"), &[], b"");
        match i {
            7 => assert_eq!(r.status, 404),
            _ => assert_eq!((r.status, r.text()), (200, format!("v{i}"))),
        }
    }
    let out = node.command(&["stop"]).output().unwrap();
    assert!(
        out.status.success(),
        "eddy stop: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    assert!(
        !node.data_dir().join("eddy.pid").exists(),
        "pid file removed on stop"
    );
}

#[test]
fn kill9_keeps_every_dw_all_write() {
    let mut node = TestNode::start(&[]);
    let mut acked = Vec::new();
    for i in 0..300 {
        let path = format!("/types/default/buckets/durable/keys/k{i}?dw=all");
        if put(&node, &path, &format!("value-{i}")) == 204 {
            acked.push(i);
        }
    }
    assert_eq!(acked.len(), 300);
    node.kill9();
    node.restart();
    for i in acked {
        let r = node.http("GET", &format!("/buckets/durable/keys/k{i}"), &[], b"");
        assert_eq!(
            (r.status, r.text()),
            (200, format!("value-{i}")),
            "key k{i} after kill -9"
        );
    }
}

#[test]
fn a_second_node_on_the_same_data_dir_is_refused() {
    let node = TestNode::start(&[]);
    let out = node.command(&["start"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another eddy node"), "{err}");
    assert_eq!(
        node.http("GET", "/ping", &[], b"").status,
        200,
        "first node unharmed"
    );
}

#[test]
fn cli_ping_admin_and_config() {
    let node = TestNode::start(&[]);
    let run = |args: &[&str]| {
        let out = node.command(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        (out.status.success(), text, err)
    };
    assert_eq!(run(&["ping"]), (true, "pong".into(), String::new()));
    assert_eq!(
        run(&[
            "admin",
            "bucket-type",
            "create",
            "maps",
            r#"{"props":{"n_val":2}}"#
        ])
        .1,
        "maps created"
    );
    let (ok, _, err) = run(&["admin", "bucket-type", "create", "maps"]);
    assert!(!ok && err.contains("already exists"), "{err}");
    assert!(
        run(&["admin", "bucket-type", "status", "maps"])
            .1
            .starts_with("maps has been created and may be activated")
    );
    assert_eq!(
        run(&["admin", "bucket-type", "activate", "maps"]).1,
        "maps has been activated"
    );
    assert_eq!(
        run(&["admin", "bucket-type", "list"]).1,
        "default (active)\nmaps (active)"
    );
    let status = run(&["admin", "bucket-type", "status", "maps"]).1;
    assert!(
        status.contains("maps is active") && status.contains("n_val: 2"),
        "{status}"
    );
    assert_eq!(
        run(&[
            "admin",
            "bucket-type",
            "update",
            "maps",
            r#"{"props":{"n_val":3}}"#
        ])
        .1,
        "maps updated"
    );
    let (ok, _, err) = run(&["admin", "bucket-type", "status", "nope"]);
    assert!(
        !ok && err.contains("nope is not an existing bucket type"),
        "{err}"
    );
    let (ok, stats, _) = run(&["admin", "status"]);
    assert!(ok && stats.contains("riak_kv_version : 3.2.0"), "{stats}");
    let (_, shown, _) = run(&["config", "show"]);
    assert!(
        shown.contains("ring_size = 16  # env EDDY_RING_SIZE"),
        "{shown}"
    );
}

#[test]
fn bad_configuration_names_the_setting() {
    let node = TestNode::start(&[]);
    let mut cmd = node.command(&["config", "show"]);
    cmd.env("EDDY_RING_SIZE", "63");
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ring_size") && err.contains("EDDY_RING_SIZE"),
        "{err}"
    );
    let file = node.data_dir().with_file_name("bad.toml");
    std::fs::write(&file, "storage_backend = \"leveldb\"\n").unwrap();
    let out = node
        .command(&["start", "--config", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("storage_backend") && err.contains("bad.toml"),
        "{err}"
    );
    let mut cmd = node.command(&["ping"]);
    cmd.env("EDDY_LISTENER_HTTP_INTERNAL", "nowhere");
    let err = String::from_utf8_lossy(&cmd.output().unwrap().stderr).into_owned();
    assert!(
        err.contains("listener.http.internal") && err.contains("not an address"),
        "{err}"
    );
}

#[test]
fn an_address_in_use_is_a_clear_error() {
    let node = TestNode::start(&[]);
    let start_beside = |cluster: Option<String>| {
        let other = tempfile::tempdir().unwrap();
        let mut cmd = node.command(&["start"]);
        cmd.env("EDDY_PLATFORM_DATA_DIR", other.path());
        if let Some(addr) = cluster {
            cmd.env("EDDY_LISTENER_CLUSTER_INTERNAL", addr);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // Every port taken: the cluster's is bound first, before the
    // partitions are opened (design note 021).
    let err = start_beside(None);
    assert!(
        err.contains("cannot listen on") && err.contains("listener.cluster.internal"),
        "{err}"
    );
    // The cluster's free: the HTTP listener's is named.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    let err = start_beside(Some(free.to_string()));
    assert!(
        err.contains("cannot listen on") && err.contains("listener.http.internal"),
        "{err}"
    );
}

/// Creates and activates bucket type `name` with `props` (JSON).
fn create_active_type(node: &TestNode, name: &str, props: &str) {
    for args in [
        &["admin", "bucket-type", "create", name, props][..],
        &["admin", "bucket-type", "activate", name],
    ] {
        assert!(node.command(args).output().unwrap().status.success());
    }
}

/// Runs tests/python/`script` with `args` and asserts that it succeeded
/// and printed OK; returns false when the client is not installed (and
/// not required), so the caller can stop.
fn python_ok(script: &str, args: &[String]) -> bool {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/python")
        .join(script);
    let Some(out) = support::python(&path, args) else {
        return false;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("OK"),
        "{script} {args:?} failed:\n{stdout}\n{stderr}"
    );
    true
}

#[test]
fn the_python_riak_client_works_over_pb_and_http() {
    let node = TestNode::start(&[]);
    create_active_type(&node, "smoke", r#"{"props":{"allow_mult":true}}"#);
    let args = [
        node.pb_port.to_string(),
        node.http_port.to_string(),
        "smoke".into(),
    ];
    python_ok("smoke.py", &args);
}

/// The riak Python client's own integration tests (riak.tests, shipped
/// with the client) over PB and over HTTP, but for the features
/// tests/python/client_suite.py lists as not served yet.
#[test]
fn the_python_riak_clients_own_tests_pass_over_pb_and_http() {
    // test_preflist expects the node names of Riak's own test setups.
    let node = TestNode::start(&[("EDDY_NODENAME", "riak@127.0.0.1")]);
    // The types riak.tests names, as client_suite.py's BUCKET_TYPES has them.
    for (name, props) in [
        ("no_siblings", r#"{"props":{"allow_mult":false}}"#),
        ("write_once", r#"{"props":{"write_once":true}}"#),
        ("pytest", r#"{"props":{"allow_mult":true}}"#),
        ("maps", r#"{"props":{"datatype":"map"}}"#),
        ("counters", r#"{"props":{"datatype":"counter"}}"#),
        ("sets", r#"{"props":{"datatype":"set"}}"#),
        ("hlls", r#"{"props":{"datatype":"hll"}}"#),
    ] {
        create_active_type(&node, name, props);
    }
    for protocol in ["pbc", "http"] {
        let args = [
            protocol.to_string(),
            node.pb_port.to_string(),
            node.http_port.to_string(),
        ];
        if !python_ok("client_suite.py", &args) {
            return;
        }
    }
}

#[test]
fn multi_routes_buckets_by_their_backend_property() {
    let mut node = TestNode::start(&[("EDDY_STORAGE_BACKEND", "multi")]);
    let json = [("Content-Type", "application/json")];
    let set = |node: &TestNode, body: &str| {
        node.http("PUT", "/buckets/volatile/props", &json, body.as_bytes())
    };
    let r = set(&node, r#"{"props":{"backend":"leveldb"}}"#);
    assert_eq!(r.status, 400);
    assert!(
        r.text().contains("this node has bitcask, lsm, memory"),
        "{}",
        r.text()
    );
    assert_eq!(set(&node, r#"{"props":{"backend":"memory"}}"#).status, 204);
    assert_eq!(
        put(&node, "/buckets/volatile/keys/k", "gone after restart"),
        204
    );
    assert_eq!(put(&node, "/buckets/kept/keys/k", "on bitcask"), 204);
    assert!(node.stop().success());
    node.restart();
    let volatile = node.http("GET", "/buckets/volatile/keys/k", &[], b"");
    assert_eq!(
        volatile.status, 404,
        "the memory sub-backend does not persist"
    );
    let kept = node.http("GET", "/buckets/kept/keys/k", &[], b"");
    assert_eq!((kept.status, kept.text()), (200, "on bitcask".to_string()));
}

#[test]
fn stats_name_the_configured_storage_backend() {
    for backend in ["bitcask", "multi", "lsm", "memory"] {
        let node = TestNode::start(&[("EDDY_STORAGE_BACKEND", backend)]);
        let r = node.http("GET", "/stats", &[], b"");
        assert_eq!(r.status, 200);
        let stats: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(stats["storage_backend"], backend, "/stats on {backend}");
        let out = node.command(&["admin", "status"]).output().unwrap();
        let status = String::from_utf8_lossy(&out.stdout);
        let line = format!("storage_backend : {backend}");
        assert!(status.lines().any(|l| l == line), "{status}");
    }
}

/// `multi.*` settings reach the node: a lowered key limit refuses a
/// larger request whole, a lowered answer budget cuts a multi-get's
/// answer, and `/stats` counts the multi-key requests.
#[test]
fn multi_settings_take_effect() {
    let node = TestNode::start(&[
        ("EDDY_MULTI_KEYS_MAX", "2"),
        ("EDDY_MULTI_ANSWER_BYTES_MAX", "15"),
        ("EDDY_MULTI_CONCURRENCY", "1"),
    ]);
    let json = [("Content-Type", "application/json")];
    let multi_get = |keys: &str| {
        let body = format!(r#"{{"keys":{keys}}}"#);
        node.http("POST", "/buckets/b/multi/get", &json, body.as_bytes())
    };
    assert_eq!(put(&node, "/buckets/b/keys/a", "ten bytes!"), 204);
    assert_eq!(put(&node, "/buckets/b/keys/c", "ten bytes!"), 204);
    let refused = multi_get(r#"["a","b","c"]"#);
    assert_eq!(refused.status, 400);
    assert!(
        refused
            .text()
            .contains("too many keys: 3 exceeds the limit of 2"),
        "{}",
        refused.text()
    );
    let answer = multi_get(r#"["a","c"]"#);
    assert_eq!(answer.status, 200, "{}", answer.text());
    let results: serde_json::Value = serde_json::from_str(&answer.text()).unwrap();
    let statuses: Vec<&str> = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "error"], "{results}");
    assert_eq!(results["results"][1]["http_status"], 413);
    let stats = node.http("GET", "/stats", &[], b"");
    let stats: serde_json::Value = serde_json::from_str(&stats.text()).unwrap();
    assert_eq!(
        stats["node_multi_gets_total"], 1,
        "the refused one is not counted"
    );
    assert_eq!(stats["node_multi_get_keys_total"], 2);
}

/// `eddy` run from elsewhere with no `EDDY_*` settings, reading `config`.
fn eddy_elsewhere(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_eddy"));
    cmd.args(args)
        .arg("--config")
        .arg(config)
        .current_dir(std::env::temp_dir());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("EDDY_") {
            cmd.env_remove(name);
        }
    }
    cmd.output().unwrap()
}

#[test]
fn ping_and_stop_find_the_node_from_its_riak_conf_anywhere() {
    let node = TestNode::start(&[]);
    // riak.conf lines, unquoted, with the data directory relative to the
    // file: the commands run from another directory still find the node.
    let conf = node.data_dir().with_file_name("riak.conf");
    let text = format!(
        "## written as a Riak operator would\n\
         listener.http.internal = {}\n\
         platform_data_dir = ./data\n",
        node.http_address()
    );
    std::fs::write(&conf, text).unwrap();
    let out = eddy_elsewhere(&conf, &["ping"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "pong");
    let out = eddy_elsewhere(&conf, &["stop"]);
    assert!(
        out.status.success(),
        "eddy stop: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!node.data_dir().join("eddy.pid").exists());
    let out = eddy_elsewhere(&conf, &["ping"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not responding to pings at") && err.contains(&node.http_address()),
        "a failed ping names the address it tried: {err}"
    );
}

/// Each partition's actor id, by partition directory.
fn actors(node: &TestNode) -> Vec<(String, String)> {
    let mut ids: Vec<(String, String)> = std::fs::read_dir(node.data_dir().join("partitions"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let id = std::fs::read_to_string(e.path().join("actor")).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), id))
        })
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_start_refused_before_serving_leaves_the_clean_stop_standing() {
    let mut node = TestNode::start(&[]);
    assert_eq!(put(&node, "/buckets/b/keys/k", "v"), 204);
    assert!(node.stop().success());
    let before = actors(&node);
    assert!(!before.is_empty());
    // Another process holds the PB port: the start opens its partitions,
    // then fails to listen.
    let holder = std::net::TcpListener::bind(node.pb_address()).unwrap();
    let out = node.command(&["start"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot listen on"), "{err}");
    drop(holder);
    // The next start is as after the clean stop: no actor is renewed (an
    // unclean start would renew every one).
    node.restart();
    assert_eq!(actors(&node), before);
    let r = node.http("GET", "/buckets/b/keys/k", &[], b"");
    assert_eq!((r.status, r.text()), (200, "v".to_string()));
}

#[test]
fn the_log_goes_to_a_file_as_well_as_stderr() {
    let node = TestNode::start(&[("EDDY_LOG_LEVEL", "info")]);
    let log = node.data_dir().with_file_name("log").join("console.log");
    // "eddy started" is written just after the listeners start serving.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut text = String::new();
    while !text.contains("eddy started") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        text = std::fs::read_to_string(&log).unwrap_or_default();
    }
    for line in [
        "partitions opened",
        "commit log replayed and vnodes started",
        "eddy started",
    ] {
        assert!(text.contains(line), "{line:?} in {}: {text}", log.display());
    }
    assert!(text.contains("elapsed_ms"), "{text}");
}

#[test]
fn output_to_a_reader_that_stopped_reading_is_not_a_failure() {
    // `eddy config show | head -1`: the reader has gone before eddy writes.
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(["config", "show"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
}
