//! `/stats` (`riak_kv_wm_stats`): a JSON object with Riak's stat names,
//! read from the node's figures (`eddy_metrics`, design note 025), the
//! same ones `/metrics` renders.
//!
//! Counts named without `_total` are over the last minute, as Riak's
//! spirals are ([`spiral`]). FSM times (µs), sibling counts and object
//! sizes come from the kv coordinators' histograms, and the times of
//! merges and data type updates from the vnodes', over the last minute;
//! gauges and Riak's plain counters (handoff's) as they are now
//! ([`figures`]). The cluster fields (`ring_members`, `ring_ownership`,
//! `connected_nodes`) are this node's view of the membership.
//! `riak_kv_version` is the Riak compatibility version (plain `X.Y.Z`),
//! `eddy_version` Eddy's own.

mod figures;
mod spiral;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::response::Response;
use eddy_cluster::{MemberStatus, NodeName, Ring};
use eddy_kv::Node;
use eddy_metrics::Histogram;
use serde_json::{Map, Value, json};

use super::keys::json_response;
use super::server::App;
use crate::version::{EDDY_VERSION, RIAK_COMPAT_VERSION};

pub use spiral::HttpStats;

/// Answers `/stats`.
pub fn get(app: &App) -> Response {
    let body = Value::Object(stats_json(app));
    json_response(body.to_string().into())
}

/// Every stat, by Riak's names.
pub fn stats_json(app: &App) -> Map<String, Value> {
    let node = &app.node;
    let mut m: Map<String, Value> = app.stats.entries().into_iter().collect();
    for (prefix, h) in figures::histograms(node) {
        m.extend(percentiles(&prefix, h));
    }
    let pb = app.config.pb_table.as_deref();
    m.extend(figures::running(node, pb));
    m.extend(figures::handoffs(app.config.handoffs.as_deref()));
    for (k, v) in node_info(app) {
        m.insert(k, v);
    }
    for (k, v) in super::repair::stats(node) {
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
