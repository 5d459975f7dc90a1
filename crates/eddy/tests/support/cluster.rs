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

/// The names of the nodes numbered `ids`.
pub fn dev_names(ids: impl IntoIterator<Item = usize>) -> Vec<String> {
    ids.into_iter().map(dev_name).collect()
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

/// The `member-status` rows: (status, ring %, pending % or None, node).
pub fn member_rows(out: &str) -> Vec<(String, f64, Option<f64>, String)> {
    let pct = |s: &str| s.strip_suffix('%')?.parse::<f64>().ok();
    out.lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [status, ring, pending, node] if node.starts_with('\'') => Some((
                status.to_string(),
                pct(ring)?,
                pct(pending),
                node.trim_matches('\'').to_string(),
            )),
            _ => None,
        })
        .collect()
}

/// True when `member-status` lists exactly `names`, each valid, owning a
/// share of the ring with nothing pending, the shares adding up to it.
pub fn settled_members(out: &str, names: &[String]) -> bool {
    let rows = member_rows(out);
    let ring: f64 = rows.iter().map(|r| r.1).sum();
    rows.len() == names.len()
        && names.iter().all(|n| rows.iter().any(|r| &r.3 == n))
        && rows
            .iter()
            .all(|r| r.0 == "valid" && r.1 > 0.0 && r.2.is_none())
        && (ring - 100.0).abs() < 0.5
}

/// Waits until every one of `nodes` reports no transfer active (a node
/// shows only the transfers it runs itself, so a retiring vnode's last
/// round on another node is seen only there), the members `names` settled
/// ([`settled_members`]) and every member on the same ring (`ringready`).
pub fn settle<'a>(
    nodes: impl IntoIterator<Item = &'a TestNode>,
    names: &[String],
    deadline: Duration,
) {
    let nodes: Vec<&TestNode> = nodes.into_iter().collect();
    for n in &nodes {
        n.admin_until(&["transfers"], deadline, |r| {
            r.ok && r.stdout.contains("No transfers active")
        });
    }
    let node = nodes[0];
    node.admin_until(&["member-status"], deadline, |r| {
        r.ok && settled_members(&r.stdout, names)
    });
    node.admin_until(&["ringready"], deadline, |r| r.ok);
}

/// Starts dev1…devN, stages the join of each to dev1, commits on dev1 and
/// waits until the ring has settled.
pub fn form(count: usize, deadline: Duration) -> Vec<TestNode> {
    form_with(count, &[], deadline)
}

/// [`form`] with `extra` settings on every node; a count of 1 is dev1
/// alone, a one-member ring.
pub fn form_with(count: usize, extra: &[(&str, &str)], deadline: Duration) -> Vec<TestNode> {
    let nodes: Vec<TestNode> = (1..=count).map(|i| TestNode::start_dev(i, extra)).collect();
    if count == 1 {
        return nodes;
    }
    for n in &nodes[1..] {
        n.join(&nodes[0]);
    }
    nodes[0].commit(deadline);
    settle(&nodes, &dev_names(1..=count), deadline);
    nodes
}

impl TestNode {
    /// Stages this node's join to the cluster of dev1 (`target`).
    pub fn join(&self, target: &TestNode) {
        let address = target.cluster_address();
        let r = self.admin(&["cluster", "join", &dev_name(1), "--address", &address]);
        assert!(r.ok, "{r:#?}");
    }

    /// `cluster plan` then `cluster commit`, the commit asked again while
    /// the claimant answers that the ring is not ready.
    pub fn commit(&self, deadline: Duration) {
        let plan = self.admin(&["cluster", "plan"]);
        assert!(
            plan.ok && plan.stdout.contains("Staged Changes"),
            "{plan:#?}"
        );
        let r = self.admin_until(&["cluster", "commit"], deadline, |r| {
            r.ok || !r.stderr.contains("not ready")
        });
        assert!(r.ok, "{r:#?}");
    }
}
