//! Cluster helpers for end-to-end tests: nodes with distinct node names
//! (`devN@127.0.0.1`, as Riak's devrel names them), `eddy admin …` runs
//! with a node's settings, and polling a command until its output holds.

use std::time::{Duration, Instant};

use super::TestNode;

/// What one `eddy` command did.
#[derive(Debug)]
pub struct Run {
    /// Whether it exited with status 0.
    pub ok: bool,
    /// Its exit code.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl TestNode {
    /// Starts a node named `devI@127.0.0.1` with any extra `EDDY_*`
    /// settings.
    pub fn start_dev(i: usize, extra: &[(&str, &str)]) -> TestNode {
        let name = dev_name(i);
        let mut env = vec![("EDDY_NODENAME", name.as_str())];
        env.extend_from_slice(extra);
        TestNode::start(&env)
    }

    /// Starts a node named `devI@ADDRESS` in `host`'s network namespace.
    pub fn start_dev_on(i: usize, host: &super::netns::Host, extra: &[(&str, &str)]) -> TestNode {
        let name = format!("dev{i}@{}", host.cluster_ip);
        let mut env = vec![("EDDY_NODENAME", name.as_str())];
        env.extend_from_slice(extra);
        TestNode::start_on(host, &env)
    }

    /// This node's name.
    pub fn name(&self) -> String {
        let name = self.env().into_iter().find(|(k, _)| k == "EDDY_NODENAME");
        name.map(|(_, v)| v).expect("a node started with a name")
    }

    /// Where this node's cluster listener is, for `cluster join --address`.
    pub fn cluster_address(&self) -> String {
        format!("{}:{}", self.cluster_ip, self.cluster_port)
    }

    /// Runs `eddy admin ARGS…` with this node's settings.
    pub fn admin(&self, args: &[&str]) -> Run {
        let mut argv = vec!["admin"];
        argv.extend_from_slice(args);
        run(self.command(&argv))
    }

    /// Runs `eddy admin ARGS…` until `done` holds for what it did, or
    /// panics after `deadline` with the last run.
    pub fn admin_until(
        &self,
        args: &[&str],
        deadline: Duration,
        done: impl Fn(&Run) -> bool,
    ) -> Run {
        let end = Instant::now() + deadline;
        loop {
            let r = self.admin(args);
            if done(&r) {
                return r;
            }
            assert!(
                Instant::now() < end,
                "`eddy admin {}` did not get there within {deadline:?}; last run: {r:#?}",
                args.join(" ")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `devI@127.0.0.1`
pub fn dev_name(i: usize) -> String {
    format!("dev{i}@127.0.0.1")
}

/// Runs `cmd` to completion.
pub fn run(mut cmd: std::process::Command) -> Run {
    let out = cmd.output().expect("run eddy");
    Run {
        ok: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
