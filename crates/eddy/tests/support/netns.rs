//! A private network of Linux network namespaces for end-to-end tests:
//! one namespace per host, each with two interfaces, and a hub namespace
//! holding the two bridges they plug into.
//!
//! - The client network (`10.77.S.0/24`) carries the HTTP and PB APIs; the
//!   test process reaches it from the root namespace through one veth
//!   (`10.77.S.254`) plugged into the hub's client bridge.
//! - The cluster network (`10.78.S.0/24`) carries only node-to-node
//!   traffic (gossip, vnode requests, handoff); the root namespace has no
//!   interface on it.
//!
//! Cutting a host off the cluster ([`Net::isolate`]) unplugs its cluster
//! port from the bridge: frames are dropped silently, as in a real
//! partition (open connections stall, new ones time out), while clients
//! still reach it on the client network. [`Net::heal`] plugs it back.
//!
//! Names carry the test process's pid (`edPID-hub`, `edPID-h1`, …, the root
//! veth `edPID`), and `S` is derived from it, so concurrent runs do not
//! collide. Invariants: only addresses of these namespaces (and the root
//! end of the veth) are configured; dropping the [`Net`] deletes every
//! namespace and link it made, and creating one first deletes those a
//! killed run left behind (its pid no longer running).

use std::process::Command;

const HUB: &str = "hub";
const CLIENT_BRIDGE: &str = "brc";
const CLUSTER_BRIDGE: &str = "brk";

/// The namespaces, bridges and veths of one test.
pub struct Net {
    tag: String,
    subnet: u8,
    hosts: usize,
}

/// One host: its namespace and addresses.
#[derive(Clone, Debug)]
pub struct Host {
    /// The namespace to run its processes in (`ip netns exec`).
    pub netns: String,
    /// Its address on the client network.
    pub client_ip: String,
    /// Its address on the cluster network.
    pub cluster_ip: String,
}

impl Net {
    /// Creates `hosts` hosts, or says why it cannot (not root, no
    /// `ip`, no namespace support).
    pub fn create(hosts: usize) -> Result<Net, String> {
        remove_stale();
        let pid = std::process::id();
        let net = Net {
            tag: format!("ed{pid}"),
            subnet: (pid % 200 + 20) as u8,
            hosts,
        };
        net.build()?;
        Ok(net)
    }

    /// Host `i` (1-based).
    pub fn host(&self, i: usize) -> Host {
        assert!((1..=self.hosts).contains(&i), "no host {i}");
        Host {
            netns: self.ns(&format!("h{i}")),
            client_ip: format!("10.77.{}.{i}", self.subnet),
            cluster_ip: format!("10.78.{}.{i}", self.subnet),
        }
    }

    /// Cuts host `i` off the cluster network (clients still reach it).
    pub fn isolate(&self, i: usize) {
        ip(&[
            "-n",
            &self.ns(HUB),
            "link",
            "set",
            &format!("k{i}"),
            "nomaster",
        ])
        .expect("unplug the cluster port");
    }

    /// Plugs host `i` back into the cluster network.
    pub fn heal(&self, i: usize) {
        let hub = self.ns(HUB);
        let port = format!("k{i}");
        ip(&["-n", &hub, "link", "set", &port, "master", CLUSTER_BRIDGE])
            .expect("plug the cluster port back");
    }

    fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.tag)
    }

    fn build(&self) -> Result<(), String> {
        let hub = self.ns(HUB);
        ip(&["netns", "add", &hub])?;
        ip(&["-n", &hub, "link", "set", "lo", "up"])?;
        for bridge in [CLIENT_BRIDGE, CLUSTER_BRIDGE] {
            ip(&["-n", &hub, "link", "add", bridge, "type", "bridge"])?;
            ip(&["-n", &hub, "link", "set", bridge, "up"])?;
        }
        self.plug_root(&hub)?;
        for i in 1..=self.hosts {
            self.plug_host(&hub, i)?;
        }
        Ok(())
    }

    /// The test process's way in: a veth from the root namespace to the
    /// client bridge.
    fn plug_root(&self, hub: &str) -> Result<(), String> {
        let root = self.tag.as_str();
        ip(&[
            "link", "add", root, "type", "veth", "peer", "name", "root", "netns", hub,
        ])?;
        ip(&["-n", hub, "link", "set", "root", "master", CLIENT_BRIDGE])?;
        ip(&["-n", hub, "link", "set", "root", "up"])?;
        let addr = format!("10.77.{}.254/24", self.subnet);
        ip(&["addr", "add", &addr, "dev", root])?;
        ip(&["link", "set", root, "up"])
    }

    /// Host `i`'s namespace with a client and a cluster interface, each
    /// a veth whose other end is a port of the hub's bridge.
    fn plug_host(&self, hub: &str, i: usize) -> Result<(), String> {
        let host = self.host(i);
        let ns = host.netns.as_str();
        ip(&["netns", "add", ns])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        let legs = [
            (format!("c{i}"), "client", CLIENT_BRIDGE, &host.client_ip),
            (format!("k{i}"), "cluster", CLUSTER_BRIDGE, &host.cluster_ip),
        ];
        for (port, inside, bridge, addr) in legs {
            ip(&[
                "-n", hub, "link", "add", &port, "type", "veth", "peer", "name", inside, "netns",
                ns,
            ])?;
            ip(&["-n", hub, "link", "set", &port, "master", bridge])?;
            ip(&["-n", hub, "link", "set", &port, "up"])?;
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                inside,
            ])?;
            ip(&["-n", ns, "link", "set", inside, "up"])?;
        }
        Ok(())
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        remove(&self.tag);
    }
}

/// Runs `ip ARGS…`; its stderr on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Deletes the namespaces and the root veth named with `tag`.
fn remove(tag: &str) {
    let prefix = format!("{tag}-");
    for ns in namespaces().iter().filter(|n| n.starts_with(&prefix)) {
        let _ = ip(&["netns", "del", ns]);
    }
    // Gone with its peer in the hub; deleted here in case the hub was not made.
    let _ = ip(&["link", "del", tag]);
}

/// Removes what runs of this test that no longer run left behind: their
/// namespaces, and the nodes they started in them (a run killed with
/// SIGKILL leaves its children running).
fn remove_stale() {
    let mut tags: Vec<String> = namespaces()
        .iter()
        .filter_map(|n| n.split_once('-').map(|(tag, _)| tag.to_string()))
        .filter(|tag| {
            tag.strip_prefix("ed")
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect();
    tags.dedup();
    for tag in tags {
        let prefix = format!("{tag}-");
        for ns in namespaces().iter().filter(|n| n.starts_with(&prefix)) {
            kill_processes_in(ns);
        }
        remove(&tag);
    }
}

/// SIGKILLs the processes running in namespace `ns`.
#[allow(
    unsafe_code,
    reason = "kills what an earlier run left in its namespace"
)]
fn kill_processes_in(ns: &str) {
    let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() else {
        return;
    };
    for pid in String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
    {
        // SAFETY: kill(2) on a process a killed run of this test started in
        // its own namespace.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// The names `ip netns list` prints.
fn namespaces() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}
