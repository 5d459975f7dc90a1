//! The node's figures `/stats` shows as they are now (Riak's gauges and
//! plain counters) and as percentiles of the last minute (Riak's
//! histograms), under Riak's names: read from the handles the node, its
//! handoff manager and its PB listener registered (design note 025).

use eddy_kv::Node;
use eddy_metrics::Histogram;
use eddy_remote::handoff::{Handoffs, Kind};
use serde_json::{Value, json};

use super::spiral::RIAK_DATATYPES;
use crate::net::ConnectionTable;

/// The histograms `/stats` shows, by the prefix of their names: the FSM
/// times (µs), sibling counts and object sizes, of every get and put and
/// of the data types Riak names, and the times of the vnodes' merges and
/// data type updates.
pub(super) fn histograms(node: &Node) -> Vec<(String, &Histogram)> {
    let m = &node.metrics;
    let mut out = vec![
        ("node_get_fsm_time".to_string(), &m.get_fsm_time),
        ("node_put_fsm_time".to_string(), &m.put_fsm_time),
        ("node_get_fsm_siblings".to_string(), &m.get_fsm_siblings),
        ("node_get_fsm_objsize".to_string(), &m.get_fsm_objsize),
        ("object_merge_time".to_string(), &m.vnodes.object_merge_time),
    ];
    for t in RIAK_DATATYPES {
        let (f, name) = (m.datatypes.of(t), t.name());
        out.push((format!("node_get_fsm_{name}_time"), &f.get_fsm_time));
        out.push((format!("node_get_fsm_{name}_siblings"), &f.get_fsm_siblings));
        out.push((format!("node_get_fsm_{name}_objsize"), &f.get_fsm_objsize));
        out.push((format!("node_put_fsm_{name}_time"), &f.put_fsm_time));
        let v = m.vnodes.of(t);
        out.push((format!("object_{name}_merge_time"), &v.merge_time));
        out.push((format!("vnode_{name}_update_time"), &v.update_time));
    }
    out
}

/// Riak's gauges of the queries running now, and `pbc_active` (the PB
/// connections open now).
pub(super) fn running(node: &Node, pb: Option<&ConnectionTable>) -> Vec<(String, Value)> {
    let q = &node.metrics.queries;
    let pairs = [
        ("index_fsm_active", q.index_queries_running.get()),
        ("list_fsm_active", q.list_keys_running.get()),
        ("pipeline_active", q.mapred_jobs_running.get()),
        ("pbc_active", pb.map_or(0, |t| t.open() as u64)),
    ];
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect()
}

/// Riak's handoff figures (`riak_core_stat`): inbound transfers refused
/// at the limit, and per kind the objects and bytes sent since the node
/// started and the transfers running each way now; zeros without a
/// handoff manager (a node built without the cluster layer).
pub(super) fn handoffs(handoffs: Option<&Handoffs>) -> Vec<(String, Value)> {
    let figures = handoffs.map(Handoffs::figures);
    let rejected = figures.map_or(0, |f| f.rejected.get());
    let mut out = vec![("rejected_handoffs".to_string(), json!(rejected))];
    for kind in [Kind::Ownership, Kind::Hinted] {
        let f = figures.map(|f| f.of(kind));
        let name = kind.name();
        let pairs = [
            (
                "handoff_objects_sent",
                f.map_or(0, |f| f.objects_sent.get()),
            ),
            ("handoff_bytes_sent", f.map_or(0, |f| f.bytes_sent.get())),
            (
                "handoff_inbound_active_transfers",
                f.map_or(0, |f| f.inbound_running.get()),
            ),
            (
                "handoff_outbound_active_transfers",
                f.map_or(0, |f| f.outbound_running.get()),
            ),
        ];
        out.extend(pairs.map(|(k, v)| (format!("{name}_{k}"), json!(v))));
    }
    out
}
