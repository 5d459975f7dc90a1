//! `/stats` (`riak_kv_wm_stats`): a JSON object with Riak's stat names,
//! read from the node's figures (`eddy_metrics`, design note 025), the
//! same ones `/metrics` renders.
//!
//! Counts named without `_total` are over the last minute, as Riak's
//! spirals are: a sampler task reads the node's counters once a second and
//! keeps a minute of samples. FSM times (µs), sibling counts and object
//! sizes come from the kv coordinators' histograms, over the last minute.
//! The cluster fields (`ring_members`, `ring_ownership`,
//! `connected_nodes`) are this node's view of the membership.
//! `riak_kv_version` is the Riak compatibility version (plain `X.Y.Z`),
//! `eddy_version` Eddy's own.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use axum::response::Response;
use eddy_cluster::{MemberStatus, NodeName, Ring};
use eddy_kv::Node;
use eddy_kv::metrics::NodeMetrics;
use eddy_metrics::{Counter, Histogram};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use super::keys::json_response;
use super::server::App;
use crate::version::{EDDY_VERSION, RIAK_COMPAT_VERSION};

const MINUTE_SECS: u64 = 60;

/// The node's counters `/stats` shows, each by its name (counted over the
/// last minute) and with `_total` (since the node started): Riak's for
/// single-key operations, Eddy's for multi-key requests (design note
/// 016: requests and the keys they named, per operation, and the batched
/// vnode messages sent to other nodes; set operations' deltas sent to
/// replicas, and replicas that were behind one, design note 020 §6).
const COUNTERS: [(&str, CounterOf); 14] = [
    ("node_gets", |c| &c.gets),
    ("node_puts", |c| &c.puts),
    ("vnode_gets", |c| &c.vnode_gets),
    ("vnode_puts", |c| &c.vnode_puts),
    ("read_repairs", |c| &c.read_repairs),
    ("node_multi_gets", |c| &c.multi_gets),
    ("node_multi_get_keys", |c| &c.multi_get_keys),
    ("node_multi_puts", |c| &c.multi_puts),
    ("node_multi_put_keys", |c| &c.multi_put_keys),
    ("node_multi_deletes", |c| &c.multi_deletes),
    ("node_multi_delete_keys", |c| &c.multi_delete_keys),
    ("vnode_batches", |c| &c.vnode_batches),
    ("datatype_deltas", |c| &c.datatype_deltas),
    ("datatype_deltas_behind", |c| &c.datatype_deltas_behind),
];

/// Where one of [`COUNTERS`] is among the node's figures.
type CounterOf = fn(&NodeMetrics) -> &Counter;

/// The counters sampled each second, in [`COUNTERS`]' order.
#[derive(Clone, Copy, Debug, Default)]
struct Totals([u64; COUNTERS.len()]);

impl Totals {
    fn read(m: &NodeMetrics) -> Totals {
        Totals(COUNTERS.map(|(_, counter)| counter(m).get()))
    }

    /// What each counter counted since `base`.
    fn since(self, base: Totals) -> Totals {
        let mut out = self;
        for (n, b) in out.0.iter_mut().zip(base.0) {
            *n = n.saturating_sub(b);
        }
        out
    }
}

/// The one-minute counts of [`COUNTERS`]: samples of their totals.
pub struct HttpStats {
    started: Instant,
    samples: Mutex<VecDeque<(u64, Totals)>>,
}

impl Default for HttpStats {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpStats {
    pub fn new() -> Self {
        HttpStats {
            started: Instant::now(),
            samples: Mutex::new(VecDeque::new()),
        }
    }

    fn now_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Starts the once-a-second sampler of `node`'s counters; it ends when
    /// the stats are dropped. Does nothing outside a tokio runtime.
    pub fn start_sampler(stats: &Arc<HttpStats>, node: Arc<Node>) {
        stats.sample(&node);
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<HttpStats> = Arc::downgrade(stats);
        rt.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(stats) = weak.upgrade() else { return };
                stats.sample(&node);
            }
        });
    }

    fn sample(&self, node: &Node) {
        let now = self.now_secs();
        let mut samples = self.samples.lock();
        samples.push_back((now, Totals::read(&node.metrics)));
        while samples.len() > 2 && samples[1].0 + MINUTE_SECS <= now {
            samples.pop_front();
        }
    }

    /// Counts over the last minute: now minus the oldest kept sample.
    fn last_minute(&self, now: Totals) -> Totals {
        let base = self.samples.lock().front().map(|s| s.1).unwrap_or_default();
        now.since(base)
    }
}

/// Answers `/stats`.
pub fn get(app: &App) -> Response {
    let body = Value::Object(stats_json(app));
    json_response(body.to_string().into())
}

/// Every stat, by Riak's names.
pub fn stats_json(app: &App) -> Map<String, Value> {
    let stats = &app.stats;
    let node = &app.node;
    let totals = Totals::read(&node.metrics);
    let minute = stats.last_minute(totals);
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    for (i, (name, _)) in COUNTERS.iter().enumerate() {
        put(name, json!(minute.0[i]));
        put(&format!("{name}_total"), json!(totals.0[i]));
    }
    let figures = &node.metrics;
    for (prefix, h) in [
        ("node_get_fsm_time", &figures.get_fsm_time),
        ("node_put_fsm_time", &figures.put_fsm_time),
        ("node_get_fsm_siblings", &figures.get_fsm_siblings),
        ("node_get_fsm_objsize", &figures.get_fsm_objsize),
    ] {
        for (k, v) in percentiles(prefix, h) {
            m.insert(k, v);
        }
    }
    for (k, v) in node_info(app) {
        m.insert(k, v);
    }
    for (k, v) in super::repair::stats(node) {
        m.insert(k.to_string(), v);
    }
    for (k, v) in index_memory(node) {
        m.insert(k.to_string(), v);
    }
    for (k, v) in datatype_states(node) {
        m.insert(k.to_string(), v);
    }
    for (k, v) in super::health::stats(app) {
        m.insert(k.to_string(), v);
    }
    let (http, pb) = (app.config.table.as_deref(), app.config.pb_table.as_deref());
    for (k, v) in crate::net::connection_stats(http, pb) {
        m.insert(k, v);
    }
    for (k, v) in crate::net::budget_stats(app.config.budget.as_deref()) {
        m.insert(k, v);
    }
    m
}

/// The in-memory term indexes (bitcask's) of this node's vnodes, summed:
/// entries, estimated bytes, the sum of their bounds, writes refused at a
/// bound, and how many are over their bound now (docs/design/002-bitcask.md).
fn index_memory(node: &Node) -> Vec<(&'static str, Value)> {
    let t = node.index_memory();
    vec![
        ("bitcask_index_entries", json!(t.entries)),
        ("bitcask_index_memory_bytes", json!(t.bytes)),
        ("bitcask_index_memory_max", json!(t.max_bytes)),
        (
            "bitcask_index_writes_refused_total",
            json!(t.writes_refused),
        ),
        ("bitcask_index_partitions_over_limit", json!(t.over_limit)),
    ]
}

/// The vnodes' decoded big data type values (design note 020 §6): how many,
/// their estimated memory, and how many updates of a big value found its
/// state kept or decoded it.
fn datatype_states(node: &Node) -> Vec<(&'static str, Value)> {
    let s = node.datatype_states();
    vec![
        ("datatype_cache_entries", json!(s.entries)),
        ("datatype_cache_memory_bytes", json!(s.bytes)),
        ("datatype_cache_hits_total", json!(s.hits)),
        ("datatype_cache_misses_total", json!(s.misses)),
    ]
}

/// Riak's one-minute figures of `h`, named `{prefix}_mean`, `_median`,
/// `_95`, `_99` and `_100`.
fn percentiles(prefix: &str, h: &Histogram) -> Vec<(String, Value)> {
    let p = h.last_minute();
    vec![
        (format!("{prefix}_mean"), json!(p.mean)),
        (format!("{prefix}_median"), json!(p.median)),
        (format!("{prefix}_95"), json!(p.p95)),
        (format!("{prefix}_99"), json!(p.p99)),
        (format!("{prefix}_100"), json!(p.max)),
    ]
}

fn node_info(app: &App) -> Vec<(String, Value)> {
    let config = app.node.config();
    let name = config.node_name.0.clone();
    let ring_size = app.node.ring().size();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mem_total, mem_allocated) = memory_bytes();
    let load = load_averages();
    let pairs = [
        ("nodename", json!(name)),
        ("ring_num_partitions", json!(ring_size)),
        ("ring_creation_size", json!(ring_size)),
        ("storage_backend", json!(app.config.storage_backend)),
        ("riak_kv_version", json!(RIAK_COMPAT_VERSION)),
        ("eddy_version", json!(EDDY_VERSION)),
        ("sys_logical_processors", json!(cpus)),
        ("sys_system_architecture", json!(std::env::consts::ARCH)),
        ("sys_wordsize", json!(std::mem::size_of::<usize>())),
        ("cpu_nprocs", json!(cpus)),
        ("cpu_avg1", json!(load[0])),
        ("cpu_avg5", json!(load[1])),
        ("cpu_avg15", json!(load[2])),
        ("mem_total", json!(mem_total)),
        ("mem_allocated", json!(mem_allocated)),
    ];
    let cluster = cluster_view(app);
    let fields = cluster_fields(&cluster.members, &cluster.ring, &cluster.connected);
    (pairs.into_iter().chain(fields))
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// What this node knows of its cluster: the members, the ring, and the
/// other members it is connected to (those its failure detector has up).
struct ClusterView {
    members: Vec<NodeName>,
    ring: Arc<Ring>,
    connected: Vec<NodeName>,
}

/// The membership service's view; without one (a node built without the
/// cluster layer), the node's own ring, whose owners are all up.
fn cluster_view(app: &App) -> ClusterView {
    let me = &app.node.config().node_name;
    let Some(membership) = &app.config.membership else {
        let ring = Arc::new(app.node.ring().ring().clone());
        let members: Vec<NodeName> = ring.members().into_iter().cloned().collect();
        let connected = members.iter().filter(|n| *n != me).cloned().collect();
        return ClusterView {
            members,
            ring,
            connected,
        };
    };
    let state = membership.state();
    let members: Vec<NodeName> = state
        .ring_state()
        .members_with(&MemberStatus::ALL)
        .into_iter()
        .cloned()
        .collect();
    let connected = members
        .iter()
        .filter(|n| *n != me && membership.is_up(n))
        .cloned()
        .collect();
    ClusterView {
        members,
        ring: membership.ring(),
        connected,
    }
}

/// Riak's cluster fields: `ring_members` (every member, in name order),
/// `ring_ownership` (an Erlang term list of each owner and its partition
/// count, as `riak_kv_wm_stats` prints it) and `connected_nodes`.
fn cluster_fields(
    members: &[NodeName],
    ring: &Ring,
    connected: &[NodeName],
) -> [(&'static str, Value); 3] {
    let mut owned: BTreeMap<&NodeName, u32> = BTreeMap::new();
    for p in ring.partitions() {
        *owned.entry(ring.owner(p)).or_default() += 1;
    }
    let ownership: Vec<String> = owned
        .iter()
        .map(|(node, count)| format!("{{'{}',{count}}}", node.0))
        .collect();
    let names = |nodes: &[NodeName]| nodes.iter().map(|n| n.0.clone()).collect::<Vec<_>>();
    [
        ("ring_members", json!(names(members))),
        (
            "ring_ownership",
            json!(format!("[{}]", ownership.join(","))),
        ),
        ("connected_nodes", json!(names(connected))),
    ]
}

/// Total and used memory in bytes, from /proc/meminfo (0 where absent).
fn memory_bytes() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    let total = field("MemTotal:");
    (total, total.saturating_sub(field("MemAvailable:")))
}

/// Load averages ×256, as Riak's `cpu_avg*` report them (0 where absent).
fn load_averages() -> [u64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut out = [0; 3];
    for (slot, v) in out.iter_mut().zip(text.split_whitespace()) {
        *slot = v.parse::<f64>().map_or(0, |l| (l * 256.0) as u64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(n: u32) -> NodeName {
        NodeName(format!("dev{n}@127.0.0.1"))
    }

    #[test]
    fn the_cluster_fields_name_every_member_and_its_share() {
        let owners = (0..8).map(|p| node(p % 3 + 1)).collect();
        let ring = Ring::from_owners(owners).unwrap();
        let members = [node(1), node(2), node(3), node(4)];
        let fields = cluster_fields(&members, &ring, &[node(2), node(3)]);
        assert_eq!(
            fields,
            [
                (
                    "ring_members",
                    json!([
                        "dev1@127.0.0.1",
                        "dev2@127.0.0.1",
                        "dev3@127.0.0.1",
                        "dev4@127.0.0.1"
                    ])
                ),
                (
                    "ring_ownership",
                    json!("[{'dev1@127.0.0.1',3},{'dev2@127.0.0.1',3},{'dev3@127.0.0.1',2}]")
                ),
                (
                    "connected_nodes",
                    json!(["dev2@127.0.0.1", "dev3@127.0.0.1"])
                ),
            ]
        );
    }

    #[test]
    fn a_node_of_one_owns_the_ring_and_is_connected_to_none() {
        let ring = Ring::single(8, node(1)).unwrap();
        let fields = cluster_fields(&[node(1)], &ring, &[]);
        assert_eq!(fields[1].1, json!("[{'dev1@127.0.0.1',8}]"));
        assert_eq!(fields[2].1, json!([]));
    }
}
