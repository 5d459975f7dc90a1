//! `eddy dev-cluster`: N local nodes as separate processes, the way Riak's
//! devrel runs them (layout and ports in [`layout`]).
//!
//! - `eddy dev-cluster N` (1 ≤ N ≤ 9) makes sure dev1..devN run and form
//!   one settled cluster: it writes each node's `dev/devI/eddy.toml` unless
//!   it exists, starts the nodes that do not run (detached, see
//!   [`process`]), waits until each answers `/ping`, has every node that is
//!   not yet a member of dev1's cluster join it (staged), shows the plan,
//!   commits it on dev1, and waits until every node reports the ring ready,
//!   no transfer pending and exactly dev1..devN as valid members. It prints
//!   its progress and the time it took. Run again while nodes run, it
//!   leaves the running ones alone and starts the missing ones (after
//!   `dev-cluster stop` it restarts the cluster as it was, already joined);
//!   it refuses when `dev/` holds more nodes than asked for.
//! - `eddy dev-cluster add` does the same for one node more than `dev/`
//!   holds: it starts the next devI and joins it.
//! - `eddy dev-cluster stop` sends SIGTERM to every dev node that runs and
//!   waits until each has exited.
//!
//! Each phase (answering `/ping`, committing, settling) has its own
//! deadline (`--wait-secs`, 60 s by default), past which the command fails
//! with what it was still waiting for. Nodes it started keep running after
//! a failure; `eddy dev-cluster stop` stops them.

mod admin_api;
mod error;
pub mod layout;
mod process;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use clap::Args;

pub use error::DevError;
use layout::{DevNode, NODES_MAX, NodeDir, RING_SIZE_DEFAULT};

/// The dev cluster's directory, relative to the working directory.
pub const ROOT: &str = "dev";

/// How often the waits poll the nodes.
const POLL: Duration = Duration::from_millis(100);

/// How often a wait reports what it still waits for.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// `eddy dev-cluster …`
#[derive(Clone, Debug, Args)]
pub struct DevClusterArgs {
    /// How many nodes to run (1 to 9); `add` for one more, joined; `stop`
    /// to stop them all.
    #[arg(value_name = "N|add|stop", value_parser = parse_action, allow_negative_numbers = true)]
    pub action: DevAction,
    /// Ring size written into the configuration of nodes that have none
    /// yet (a power of two, 8 to 1024).
    #[arg(long, default_value_t = RING_SIZE_DEFAULT, value_parser = parse_ring_size)]
    pub ring_size: u32,
    /// Seconds each phase (nodes answering, commit, settling) may take.
    #[arg(long, default_value_t = 60)]
    pub wait_secs: u64,
}

/// What `eddy dev-cluster` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevAction {
    /// Run dev1..devN as one settled cluster.
    Start(u8),
    /// Start and join the next node.
    Add,
    /// Stop every dev node.
    Stop,
}

fn parse_action(text: &str) -> Result<DevAction, String> {
    match text {
        "add" => return Ok(DevAction::Add),
        "stop" => return Ok(DevAction::Stop),
        _ => {}
    }
    let refused = || {
        format!("a dev cluster has 1 to {NODES_MAX} nodes (or say `add` or `stop`), not {text:?}")
    };
    let n: u8 = text.parse().map_err(|_| refused())?;
    DevNode::new(n)
        .map(|_| DevAction::Start(n))
        .ok_or_else(refused)
}

fn parse_ring_size(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n.is_power_of_two() && (8..=1024).contains(&n) => Ok(n),
        _ => Err(format!("{text:?} is not a power of two from 8 to 1024")),
    }
}

/// Runs `eddy dev-cluster` in `./dev`; returns the last line to print.
pub fn run(args: &DevClusterArgs) -> Result<String, DevError> {
    let root = std::path::absolute(ROOT).map_err(DevError::io(ROOT))?;
    let wait = Duration::from_secs(args.wait_secs);
    match args.action {
        DevAction::Start(n) => ensure(&root, n, args.ring_size, wait),
        DevAction::Add => add(&root, args.ring_size, wait),
        DevAction::Stop => stop(&root, wait),
    }
}

/// Prints a progress line (a closed stdout is no reason to stop).
fn say(line: impl std::fmt::Display) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// Makes dev1..devN run as one settled cluster.
fn ensure(root: &Path, n: u8, ring_size: u32, wait: Duration) -> Result<String, DevError> {
    let started = Instant::now();
    if let Some(last) = layout::existing(root).last()
        && last.index() > n
    {
        return Err(DevError::Surplus {
            root: root.to_path_buf(),
            existing: usize::from(last.index()),
        });
    }
    let nodes = DevNode::first(n);
    let eddy = std::env::current_exe().map_err(|source| DevError::Spawn {
        node: "the dev cluster".into(),
        source,
    })?;
    let mut children = Vec::new();
    for &node in &nodes {
        if let Some(child) = start(&eddy, root, node, ring_size)? {
            children.push(child);
        }
    }
    wait_answering(root, &nodes, &mut children, wait)?;
    say(format!(
        "{n} node{} /ping ({:.1} s)",
        if n == 1 { " answers" } else { "s answer" },
        started.elapsed().as_secs_f64()
    ));
    join_all(&nodes, wait)?;
    wait_settled(&nodes, wait)?;
    Ok(format!(
        "dev cluster of {n} node{} ready in {:.2} s (ring settled, no transfers pending)",
        if n == 1 { "" } else { "s" },
        started.elapsed().as_secs_f64()
    ))
}

/// A node this command started and still waits on.
struct Started {
    node: DevNode,
    dir: NodeDir,
    child: Child,
}

/// Starts `node` unless it runs; `None` when it was running.
fn start(
    eddy: &Path,
    root: &Path,
    node: DevNode,
    ring_size: u32,
) -> Result<Option<Started>, DevError> {
    let dir = process::prepare(root, node, ring_size)?;
    if process::is_running(&dir) {
        say(format!("{} is already running", node.nodename()));
        return Ok(None);
    }
    process::check_ports(node)?;
    let child = process::spawn(eddy, node, &dir)?;
    say(format!(
        "Starting {} (pid {}, http {}, pb {}, config {})",
        node.nodename(),
        child.id(),
        node.http(),
        node.pb(),
        relative(&dir.config()).display()
    ));
    Ok(Some(Started { node, dir, child }))
}

/// `path` relative to the working directory when it is under it.
fn relative(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
}

/// Waits until every node answers `/ping`; a node this command started
/// that exits first fails the wait with the end of its log.
fn wait_answering(
    root: &Path,
    nodes: &[DevNode],
    started: &mut [Started],
    wait: Duration,
) -> Result<(), DevError> {
    let deadline = Instant::now() + wait;
    let mut pending: Vec<DevNode> = nodes.to_vec();
    loop {
        for s in started.iter_mut() {
            if let Ok(Some(status)) = s.child.try_wait() {
                return Err(process::exited(s.node, &s.dir, status));
            }
        }
        pending.retain(|n| !admin_api::ping(*n));
        let Some(&late) = pending.first() else {
            return Ok(());
        };
        if Instant::now() > deadline {
            let dir = NodeDir::new(root, late);
            return Err(DevError::NotAnswering {
                node: late.nodename(),
                addr: late.http(),
                secs: wait.as_secs(),
                log: dir.console_log(),
            });
        }
        std::thread::sleep(POLL);
    }
}

/// Has every node but dev1 that is not a member of dev1's cluster join
/// it, then commits the plan on dev1.
fn join_all(nodes: &[DevNode], wait: Duration) -> Result<(), DevError> {
    let Some((&dev1, others)) = nodes.split_first() else {
        return Ok(());
    };
    let members = admin_api::members(dev1)?;
    let joining: Vec<DevNode> = others
        .iter()
        .copied()
        .filter(|n| !members.contains(&n.nodename()))
        .collect();
    if joining.is_empty() {
        return Ok(());
    }
    for node in joining {
        say(admin_api::join(node, dev1)?);
    }
    say(admin_api::plan(dev1)?);
    let deadline = Instant::now() + wait;
    while !admin_api::commit(dev1)? {
        if Instant::now() > deadline {
            return Err(DevError::Admin {
                node: dev1.nodename(),
                what: "cluster commit",
                message: format!("the ring was not ready within {} s", wait.as_secs()),
            });
        }
        std::thread::sleep(POLL);
    }
    say("Cluster changes committed");
    Ok(())
}

/// Waits until every node says the ring is ready, nothing is pending and
/// the members are exactly `nodes`.
fn wait_settled(nodes: &[DevNode], wait: Duration) -> Result<(), DevError> {
    let begun = Instant::now();
    let mut reported = begun;
    loop {
        let waiting: Vec<String> = nodes
            .iter()
            .filter_map(|n| {
                admin_api::settled(*n, nodes)
                    .err()
                    .map(|why| format!("{}: {why}", n.nodename()))
            })
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        if begun.elapsed() > wait {
            return Err(DevError::NotSettled {
                secs: wait.as_secs(),
                waiting: waiting.join("; "),
            });
        }
        if reported.elapsed() > REPORT_EVERY {
            reported = Instant::now();
            say(format!(
                "Waiting for the ring to settle: {}",
                waiting.join("; ")
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// Starts and joins the node after the last one `root` holds.
fn add(root: &Path, ring_size: u32, wait: Duration) -> Result<String, DevError> {
    let Some(last) = layout::existing(root).last().copied() else {
        return Err(DevError::NoCluster {
            root: root.to_path_buf(),
        });
    };
    if last.index() == NODES_MAX {
        return Err(DevError::Full {
            root: root.to_path_buf(),
            max: NODES_MAX,
        });
    }
    ensure(root, last.index() + 1, ring_size, wait)
}

/// Stops every dev node that runs.
fn stop(root: &Path, wait: Duration) -> Result<String, DevError> {
    let stopping: Vec<process::Stopping> = layout::existing(root)
        .into_iter()
        .filter_map(|n| process::terminate(n, &NodeDir::new(root, n)))
        .collect();
    for s in &stopping {
        say(format!("Stopping {} (pid {})", s.node.nodename(), s.pid));
    }
    process::wait_stopped(&stopping, wait)?;
    Ok(match stopping.len() {
        0 => "no dev node was running".to_string(),
        n => format!("stopped {n} dev node{}", if n == 1 { "" } else { "s" }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_and_bad_counts_are_refused() {
        assert_eq!(parse_action("1"), Ok(DevAction::Start(1)));
        assert_eq!(parse_action("9"), Ok(DevAction::Start(9)));
        assert_eq!(parse_action("add"), Ok(DevAction::Add));
        assert_eq!(parse_action("stop"), Ok(DevAction::Stop));
        for bad in ["0", "10", "-1", "300", "three", ""] {
            let e = parse_action(bad).unwrap_err();
            assert!(e.contains("1 to 9 nodes"), "{bad}: {e}");
        }
        assert_eq!(parse_ring_size("64"), Ok(64));
        assert!(parse_ring_size("63").is_err() && parse_ring_size("2048").is_err());
    }
}
