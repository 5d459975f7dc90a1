//! Runs the real `eddy` binary as a child process for end-to-end tests: a
//! fresh data directory, free loopback ports (or a host of a [`netns::Net`],
//! with Riak's default ports on its own addresses), readiness by polling
//! `/ping`, and SIGTERM / SIGKILL / restart.

#![allow(dead_code)]

pub mod cluster;
pub mod kv;
pub mod load;
pub mod netns;
pub mod queries;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A node running as a child process.
pub struct TestNode {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub http_port: u16,
    pub pb_port: u16,
    pub cluster_port: u16,
    /// Where the HTTP and PB listeners are.
    pub client_ip: String,
    /// Where the cluster listener is.
    pub cluster_ip: String,
    /// The network namespace the node runs in, if not the test's own.
    netns: Option<String>,
    env: Vec<(String, String)>,
}

/// A port for a node to listen on, free when asked: below Linux's
/// ephemeral range (32768–60999), so no outgoing connection of this or
/// another test takes it before the node binds it (a port the kernel hands
/// out for `:0` can be), and spread by pid and a counter over the test
/// processes running at once.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = std::process::id().wrapping_mul(97) % SPAN;
    loop {
        // 7 and SPAN are coprime: the steps visit every port of the span.
        let step = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(7);
        let port = u16::try_from(LOW + base.wrapping_add(step) % SPAN).expect("below 32000");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

impl TestNode {
    /// Starts a node with a small ring and any extra `EDDY_*` settings.
    pub fn start(extra: &[(&str, &str)]) -> TestNode {
        let mut node = TestNode::new(extra);
        (node.http_port, node.pb_port, node.cluster_port) = (free_port(), free_port(), free_port());
        node.spawn();
        node
    }

    /// Starts a node on a data directory `fill` writes first (a fixture
    /// written by an earlier build), with loopback ports.
    pub fn start_on_data(fill: impl FnOnce(&Path), extra: &[(&str, &str)]) -> TestNode {
        let mut node = TestNode::new(extra);
        (node.http_port, node.pb_port, node.cluster_port) = (free_port(), free_port(), free_port());
        fill(&node.data_dir());
        node.spawn();
        node
    }

    /// Starts a node in `host`'s network namespace, listening on its
    /// addresses with Riak's default ports.
    pub fn start_on(host: &netns::Host, extra: &[(&str, &str)]) -> TestNode {
        let mut node = TestNode::new(extra);
        (node.http_port, node.pb_port, node.cluster_port) = (8098, 8087, 8099);
        node.client_ip = host.client_ip.clone();
        node.cluster_ip = host.cluster_ip.clone();
        node.netns = Some(host.netns.clone());
        node.spawn();
        node
    }

    fn new(extra: &[(&str, &str)]) -> TestNode {
        TestNode {
            child: None,
            dir: tempfile::tempdir().unwrap(),
            http_port: 0,
            pb_port: 0,
            cluster_port: 0,
            client_ip: "127.0.0.1".into(),
            cluster_ip: "127.0.0.1".into(),
            netns: None,
            env: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The `EDDY_*` settings this node runs with.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "EDDY_LISTENER_HTTP_INTERNAL".into(),
                format!("{}:{}", self.client_ip, self.http_port),
            ),
            (
                "EDDY_LISTENER_PROTOBUF_INTERNAL".into(),
                format!("{}:{}", self.client_ip, self.pb_port),
            ),
            (
                "EDDY_LISTENER_CLUSTER_INTERNAL".into(),
                format!("{}:{}", self.cluster_ip, self.cluster_port),
            ),
            (
                "EDDY_PLATFORM_DATA_DIR".into(),
                self.data_dir().display().to_string(),
            ),
            ("EDDY_RING_SIZE".into(), "16".into()),
            ("EDDY_LOG_LEVEL".into(), "warn".into()),
        ];
        env.extend(self.env.iter().cloned());
        env
    }

    /// An `eddy` command with this node's settings, run from its directory
    /// (and in its network namespace).
    pub fn command(&self, args: &[&str]) -> Command {
        let eddy = env!("CARGO_BIN_EXE_eddy");
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut ip = Command::new("ip");
                ip.args(["netns", "exec", ns, eddy]);
                ip
            }
            None => Command::new(eddy),
        };
        cmd.args(args).current_dir(self.dir.path()).envs(self.env());
        cmd
    }

    /// Where the HTTP listener is.
    pub fn http_address(&self) -> String {
        format!("{}:{}", self.client_ip, self.http_port)
    }

    /// Where the PB listener is.
    pub fn pb_address(&self) -> String {
        format!("{}:{}", self.client_ip, self.pb_port)
    }

    fn spawn(&mut self) {
        let child = self
            .command(&["start"])
            .stdout(Stdio::null())
            .stderr(self.log_sink())
            .spawn()
            .expect("spawn eddy start");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Where the node's log goes: the test's stderr, or with
    /// `EDDY_TEST_LOGDIR` set, `DIR/HTTPPORT.log` (one file a node, which
    /// tells interleaved cluster logs apart).
    fn log_sink(&self) -> Stdio {
        let Ok(dir) = std::env::var("EDDY_TEST_LOGDIR") else {
            return Stdio::inherit();
        };
        let path = format!("{dir}/{}.log", self.http_port);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        Stdio::from(file)
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("eddy exited before it was ready: {status}");
            }
            let ping = eddy_client::http::request(&self.http_address(), "GET", "/ping", &[], b"");
            if ping.is_ok_and(|r| r.status == 200) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("eddy did not answer /ping within 60 s");
    }

    /// Sends SIGTERM and waits for a clean exit.
    #[allow(unsafe_code, reason = "signals the test's own child")]
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().expect("wait for eddy")
    }

    /// SIGKILLs the node: no shutdown code runs.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
    }

    /// Starts the node again on the same data directory and ports.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "stop or kill the node first");
        self.spawn();
    }

    /// Waits until the node exits by itself, or panics after `deadline`.
    pub fn wait_exit(&mut self, deadline: Duration) -> std::process::ExitStatus {
        let end = Instant::now() + deadline;
        let child = self.child.as_mut().expect("running");
        loop {
            if let Some(status) = child.try_wait().expect("wait for eddy") {
                self.child = None;
                return status;
            }
            assert!(Instant::now() < end, "eddy still runs after {deadline:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The running child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// True while the child runs.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// An HTTP request to this node.
    pub fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> HttpResponse {
        eddy_client::http::request(&self.http_address(), method, path, headers, body)
            .expect("HTTP request")
    }
}

impl Drop for TestNode {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub use eddy_client::http::HttpResponse;

/// An HTTP request to a node on `port`.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpResponse> {
    eddy_client::http::request(&format!("127.0.0.1:{port}"), method, path, headers, body)
}

/// Runs `python3 script args…` with the Riak client installed, returning
/// whether it succeeded (skips with a message when the client is missing
/// and `EDDY_REQUIRE_PYTHON_CLIENT` is unset).
pub fn python(script: &Path, args: &[String]) -> Option<std::process::Output> {
    let python = std::env::var("EDDY_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args([
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import riakcompat, riak",
        ])
        .arg(script.parent().unwrap())
        .output();
    let available = probe.as_ref().is_ok_and(|o| o.status.success());
    if !available {
        assert!(
            std::env::var_os("EDDY_REQUIRE_PYTHON_CLIENT").is_none(),
            "the riak Python client is required (EDDY_REQUIRE_PYTHON_CLIENT) but cannot be imported with {python}"
        );
        eprintln!("skipping: riak Python client not installed for {python} (.ci/run installs it)");
        return None;
    }
    Some(
        Command::new(python)
            .arg(script)
            .args(args)
            .output()
            .expect("run python"),
    )
}
