//! A dev node as an operating-system process: writing its configuration,
//! starting `eddy start --config dev/devI/eddy.toml` detached from this
//! command (its own process group, stdout and stderr appended to
//! `dev/devI/log/console.log`), telling whether it runs, and stopping it.
//!
//! Whether a node runs is read from its data directory's lock (held by the
//! node for as long as it lives), never from the pid file alone: a node
//! killed with SIGKILL leaves its pid file behind, and its pid may since
//! belong to another process, which must never be signalled.

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::error::DevError;
use super::layout::{DevNode, NodeDir, config_text};
use crate::node::datadir;

/// How often stop polls for the nodes' exit.
const POLL: Duration = Duration::from_millis(50);

/// Lines of a node's console log shown when it exits at start.
const LOG_TAIL_LINES: usize = 20;

/// Writes `node`'s configuration under `root` unless it exists (so edits
/// last) and creates its log directory.
pub fn prepare(root: &Path, node: DevNode, ring_size: u32) -> Result<NodeDir, DevError> {
    let dir = NodeDir::new(root, node);
    let logs = dir.log_dir();
    std::fs::create_dir_all(&logs).map_err(DevError::io(&logs))?;
    let config = dir.config();
    if !config.exists() {
        let text = config_text(node, &dir, ring_size);
        std::fs::write(&config, text).map_err(DevError::io(&config))?;
    }
    Ok(dir)
}

/// True while a node process holds `dir`'s data directory.
pub fn is_running(dir: &NodeDir) -> bool {
    datadir::is_locked(&dir.data())
}

/// Refuses to start `node` when one of its ports is taken.
pub fn check_ports(node: DevNode) -> Result<(), DevError> {
    for (setting, addr) in node.listeners() {
        if TcpListener::bind(addr).is_err() {
            return Err(DevError::PortInUse {
                node: node.nodename(),
                setting,
                addr,
            });
        }
    }
    Ok(())
}

/// Starts `eddy start --config DIR/eddy.toml` with the binary `eddy`,
/// detached: its own process group (a Ctrl-C meant for this command does
/// not reach it), no stdin, output appended to its console log. `EDDY_*`
/// settings of this environment are not passed on (they would override
/// every node's file alike, so all would bind the same ports); `EDDY_LOG`
/// is, and `EDDY_LOG_CONSOLE=console` is set (the log goes to stderr).
pub fn spawn(eddy: &Path, node: DevNode, dir: &NodeDir) -> Result<Child, DevError> {
    let log_path = dir.console_log();
    let log = File::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(DevError::io(&log_path))?;
    let err = log.try_clone().map_err(DevError::io(&log_path))?;
    let mut cmd = Command::new(eddy);
    cmd.arg("start")
        .arg("--config")
        .arg(dir.config())
        .current_dir(&dir.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("EDDY_") && name != "EDDY_LOG" {
            cmd.env_remove(name);
        }
    }
    // Its output already goes to its console log: the node writing the same
    // file itself would double every line.
    cmd.env("EDDY_LOG_CONSOLE", "console");
    cmd.spawn().map_err(|source| DevError::Spawn {
        node: node.nodename(),
        source,
    })
}

/// The error for a node that exited at start, with its log's last lines.
pub fn exited(node: DevNode, dir: &NodeDir, status: std::process::ExitStatus) -> DevError {
    let log = dir.console_log();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    DevError::Exited {
        node: node.nodename(),
        status: status.to_string(),
        log,
        tail,
    }
}

/// True once `pid` names no process, or one that has exited and waits to
/// be reaped by its parent (a zombie runs nothing).
#[allow(unsafe_code, reason = "signals the dev nodes' processes")]
fn has_exited(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks the pid.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command's name, which is in parentheses.
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with(['Z', 'X']))
    })
}

/// A node stop was asked of.
pub struct Stopping {
    pub node: DevNode,
    pub pid: i32,
    data: PathBuf,
}

/// Sends SIGTERM to `node` if it runs; `None` when it does not.
#[allow(unsafe_code, reason = "signals the dev nodes' processes")]
pub fn terminate(node: DevNode, dir: &NodeDir) -> Option<Stopping> {
    let data = dir.data();
    if !datadir::is_locked(&data) {
        return None;
    }
    let pid = datadir::running_pid(&data)?;
    // SAFETY: kill(2) on the pid the running node wrote into the data
    // directory it holds locked (checked just above).
    let sent = unsafe { libc::kill(pid, libc::SIGTERM) } == 0;
    sent.then_some(Stopping { node, pid, data })
}

/// Waits until every node in `stopping` released its data directory and
/// its process has exited (a node releases the lock a moment before it
/// exits).
pub fn wait_stopped(stopping: &[Stopping], timeout: Duration) -> Result<(), DevError> {
    let deadline = Instant::now() + timeout;
    for s in stopping {
        while datadir::is_locked(&s.data) || !has_exited(s.pid) {
            if Instant::now() > deadline {
                return Err(DevError::StopTimeout {
                    node: s.node.nodename(),
                    pid: s.pid,
                    secs: timeout.as_secs(),
                });
            }
            std::thread::sleep(POLL);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_is_named() {
        let dev9 = DevNode::new(9).unwrap();
        // Held by this test (or by someone else: refused all the same).
        let _held = TcpListener::bind(dev9.http());
        let err = check_ports(dev9).unwrap_err().to_string();
        assert!(
            err.contains("127.0.0.1:10098") && err.contains("listener.http.internal of dev9"),
            "{err}"
        );
    }

    #[test]
    fn prepare_writes_the_config_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dev2 = DevNode::new(2).unwrap();
        let dir = prepare(tmp.path(), dev2, 64).unwrap();
        assert!(dir.log_dir().is_dir());
        let written = std::fs::read_to_string(dir.config()).unwrap();
        assert!(
            written.contains("nodename = \"dev2@127.0.0.1\""),
            "{written}"
        );
        std::fs::write(dir.config(), "# edited\n").unwrap();
        prepare(tmp.path(), dev2, 128).unwrap();
        assert_eq!(std::fs::read_to_string(dir.config()).unwrap(), "# edited\n");
        assert!(!is_running(&dir));
        assert!(terminate(dev2, &dir).is_none());
    }

    #[test]
    fn a_child_that_exited_has_exited() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(30);
        // Exited but not reaped: a zombie runs nothing.
        while !has_exited(pid) {
            assert!(Instant::now() < deadline, "true did not exit");
            std::thread::sleep(POLL);
        }
        child.wait().unwrap();
        assert!(has_exited(pid));
        assert!(!has_exited(std::process::id() as i32));
    }
}
