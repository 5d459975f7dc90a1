//! Where each dev node lives and listens, as Riak's devrel lays it out:
//! node `devI@127.0.0.1` has PB on port `10007 + 10·I`, HTTP on
//! `10008 + 10·I` and the cluster listener on `10009 + 10·I` (so dev1 has
//! 10017, 10018, 10019), and keeps its configuration, data, log and pid file
//! under `dev/devI/`.
//!
//! Invariants: indexes run from 1 to [`NODES_MAX`], so no two nodes share a
//! port and every port is below 10100; the configuration written for a node
//! names absolute paths, so `eddy start --config dev/devI/eddy.toml` works
//! from any directory.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};

/// The most nodes a dev cluster has (Riak's devrel has the same limit of
/// one digit: ports `10I7`–`10I9`).
pub const NODES_MAX: u8 = 9;

/// The ring size written into a new node's configuration (Riak's devrel
/// uses 64 as well).
pub const RING_SIZE_DEFAULT: u32 = 64;

/// The cookie every dev node's configuration names, so a dev cluster never
/// talks to a node started by hand with the default cookie.
pub const COOKIE: &str = "eddy-dev";

/// The file, in a node's directory, holding its configuration.
pub const CONFIG_FILE: &str = "eddy.toml";

/// One node of a dev cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevNode {
    index: u8,
}

impl DevNode {
    /// Node `index` (1 to [`NODES_MAX`]); `None` outside that range.
    pub fn new(index: u8) -> Option<DevNode> {
        (1..=NODES_MAX)
            .contains(&index)
            .then_some(DevNode { index })
    }

    /// Nodes 1 to `count` (at most [`NODES_MAX`]).
    pub fn first(count: u8) -> Vec<DevNode> {
        (1..=count.min(NODES_MAX))
            .filter_map(DevNode::new)
            .collect()
    }

    /// Its number, from 1.
    pub fn index(self) -> u8 {
        self.index
    }

    /// `devI`: its directory's name and the name part of its node name.
    pub fn name(self) -> String {
        format!("dev{}", self.index)
    }

    /// `devI@127.0.0.1`.
    pub fn nodename(self) -> String {
        format!("dev{}@127.0.0.1", self.index)
    }

    fn port(self, last_digit: u16) -> u16 {
        10_000 + 10 * u16::from(self.index) + last_digit
    }

    /// The Protocol Buffers listener.
    pub fn pb(self) -> SocketAddr {
        loopback(self.port(7))
    }

    /// The HTTP listener.
    pub fn http(self) -> SocketAddr {
        loopback(self.port(8))
    }

    /// The node-to-node listener.
    pub fn cluster(self) -> SocketAddr {
        loopback(self.port(9))
    }

    /// Its listeners with the setting that names each.
    pub fn listeners(self) -> [(&'static str, SocketAddr); 3] {
        [
            ("listener.protobuf.internal", self.pb()),
            ("listener.http.internal", self.http()),
            ("listener.cluster.internal", self.cluster()),
        ]
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
}

/// The paths of one node under a dev cluster's root directory (`./dev`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDir {
    /// `ROOT/devI`.
    pub dir: PathBuf,
}

impl NodeDir {
    /// Node `node`'s directory under `root`.
    pub fn new(root: &Path, node: DevNode) -> NodeDir {
        NodeDir {
            dir: root.join(node.name()),
        }
    }

    /// `devI/eddy.toml`.
    pub fn config(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }

    /// `devI/data`: its `platform_data_dir`, which holds the pid file.
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `devI/log`.
    pub fn log_dir(&self) -> PathBuf {
        self.dir.join("log")
    }

    /// `devI/log/console.log`: the node's stdout and stderr.
    pub fn console_log(&self) -> PathBuf {
        self.log_dir().join("console.log")
    }
}

/// The configuration of `node` whose directory is `dir` (an absolute
/// path): the settings that differ from one dev node to the next, plus
/// the cookie and ring size every dev node shares.
pub fn config_text(node: DevNode, dir: &NodeDir, ring_size: u32) -> String {
    let mut text = format!(
        "# Written by `eddy dev-cluster` for {name}; it is kept when it exists,\n\
         # so edits last. Restart the node with\n\
         #   eddy start --config {config}\n\
         nodename = {nodename}\n\
         platform_data_dir = {data}\n\
         ring_size = {ring_size}\n\
         distributed_cookie = {cookie}\n",
        name = node.name(),
        config = dir.config().display(),
        nodename = quote(&node.nodename()),
        data = quote(&dir.data().display().to_string()),
        cookie = quote(COOKIE),
    );
    for (setting, addr) in node.listeners() {
        text.push_str(&format!("{setting} = {}\n", quote(&addr.to_string())));
    }
    text
}

/// A TOML basic string.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The nodes that have a directory with a configuration under `root`, in
/// order.
pub fn existing(root: &Path) -> Vec<DevNode> {
    DevNode::first(NODES_MAX)
        .into_iter()
        .filter(|n| NodeDir::new(root, *n).config().is_file())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::config::Config;

    #[test]
    fn dev1_has_riak_devrel_ports() {
        let dev1 = DevNode::new(1).unwrap();
        assert_eq!(dev1.nodename(), "dev1@127.0.0.1");
        assert_eq!(dev1.pb().to_string(), "127.0.0.1:10017");
        assert_eq!(dev1.http().to_string(), "127.0.0.1:10018");
        assert_eq!(dev1.cluster().to_string(), "127.0.0.1:10019");
        let dev3 = DevNode::new(3).unwrap();
        assert_eq!(
            (dev3.pb().port(), dev3.http().port(), dev3.cluster().port()),
            (10037, 10038, 10039)
        );
        assert!(DevNode::new(0).is_none() && DevNode::new(NODES_MAX + 1).is_none());
    }

    #[test]
    fn no_two_nodes_share_a_port() {
        let ports: Vec<u16> = DevNode::first(NODES_MAX)
            .iter()
            .flat_map(|n| n.listeners().map(|(_, a)| a.port()))
            .collect();
        let distinct: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len());
        assert!(ports.iter().all(|p| (10_017..10_100).contains(p)));
    }

    proptest! {
        /// The written file loads as this node's settings, whatever the
        /// directory's name holds.
        #[test]
        fn config_loads_as_the_node(index in 1..=NODES_MAX, ring in 3u32..=10, name in "[a-z \"\\\\]{1,12}") {
            let tmp = tempfile::tempdir().unwrap();
            let node = DevNode::new(index).unwrap();
            let dir = NodeDir::new(&tmp.path().join(name), node);
            std::fs::create_dir_all(&dir.dir).unwrap();
            std::fs::write(dir.config(), config_text(node, &dir, 1 << ring)).unwrap();
            let config = Config::load(Some(&dir.config()), std::iter::empty()).unwrap();
            let s = config.settings();
            prop_assert_eq!(&s.node.nodename.0, &node.nodename());
            prop_assert_eq!(&s.node.platform_data_dir, &dir.data());
            prop_assert_eq!(s.node.ring_size, 1 << ring);
            prop_assert_eq!(s.listeners.protobuf, node.pb());
            prop_assert_eq!(s.listeners.http, node.http());
            prop_assert_eq!(s.listeners.cluster, node.cluster());
            prop_assert_eq!(s.cluster.cookie.as_str(), COOKIE);
        }
    }

    #[test]
    fn existing_lists_nodes_with_a_config() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(existing(tmp.path()).is_empty());
        for i in [1, 2, 4] {
            let dir = NodeDir::new(tmp.path(), DevNode::new(i).unwrap());
            std::fs::create_dir_all(&dir.dir).unwrap();
            std::fs::write(dir.config(), "").unwrap();
        }
        std::fs::create_dir_all(tmp.path().join("dev3")).unwrap();
        let found: Vec<u8> = existing(tmp.path()).iter().map(|n| n.index()).collect();
        assert_eq!(found, [1, 2, 4]);
    }
}
