//! Riak's spirals: counts `/stats` shows over the last minute and, where
//! Riak names one, since the node started. A sampler task reads every
//! spiral's total once a second and keeps a minute of samples; a count
//! over the last minute is the total now minus the oldest sample kept.
//!
//! The totals are read from the node's figures (counters registered in
//! its registry, and the PB listener's connection table): the same ones
//! `/metrics` renders.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use eddy_dt::DataType;
use eddy_kv::Node;
use eddy_kv::metrics::NodeMetrics;
use eddy_metrics::Counter;
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::net::ConnectionTable;

const MINUTE_SECS: u64 = 60;

/// The data types Riak's `/stats` names (`node_gets_set`, …).
pub(super) const RIAK_DATATYPES: [DataType; 3] = [DataType::Counter, DataType::Set, DataType::Map];

/// One count: its name over the last minute, its name since the node
/// started (if Riak names one), and how to read its total.
pub(super) struct Spiral {
    minute: String,
    total: Option<String>,
    read: Box<dyn Fn() -> u64 + Send + Sync>,
}

impl Spiral {
    /// The counter shown as `name` and `name_total`.
    fn counted(name: &str, counter: &Counter) -> Spiral {
        Spiral::named(name, Some(&format!("{name}_total")), counter)
    }

    /// The counter shown as `minute` and, if given, `total`.
    fn named(minute: &str, total: Option<&str>, counter: &Counter) -> Spiral {
        let counter = counter.clone();
        Spiral {
            minute: minute.to_string(),
            total: total.map(str::to_string),
            read: Box::new(move || counter.get()),
        }
    }
}

/// The spirals of `node` and of its PB listener's `pb` table: Riak's for
/// single-key operations, 2i queries, key listings, MapReduce jobs (Riak's
/// pipelines), data types, the vnodes' merges and data type updates, and
/// PB connections; Eddy's for multi-key
/// requests (design note 016: requests and the keys they named, per
/// operation, and the batched vnode messages sent to other nodes) and set
/// operations' deltas (design note 020 §6: sent to replicas, and replicas
/// that were behind one), and objects the expiry sweep deleted.
pub(super) fn spirals(node: &Node, pb: Option<&Arc<ConnectionTable>>) -> Vec<Spiral> {
    let m: &NodeMetrics = &node.metrics;
    let counted = [
        ("node_gets", &m.gets),
        ("node_puts", &m.puts),
        ("vnode_gets", &m.vnode_gets),
        ("vnode_puts", &m.vnode_puts),
        ("read_repairs", &m.read_repairs),
        ("node_multi_gets", &m.multi_gets),
        ("node_multi_get_keys", &m.multi_get_keys),
        ("node_multi_puts", &m.multi_puts),
        ("node_multi_put_keys", &m.multi_put_keys),
        ("node_multi_deletes", &m.multi_deletes),
        ("node_multi_delete_keys", &m.multi_delete_keys),
        ("vnode_batches", &m.vnode_batches),
        ("datatype_deltas", &m.datatype_deltas),
        ("datatype_deltas_behind", &m.datatype_deltas_behind),
        ("expired", &m.expired),
        ("vnode_index_reads", &m.queries.vnode_index_reads),
        ("list_fsm_create", &m.queries.list_keys),
        ("object_merge", &m.vnodes.object_merges),
    ];
    let mut out: Vec<Spiral> = counted
        .into_iter()
        .map(|(name, c)| Spiral::counted(name, c))
        .collect();
    out.push(Spiral::named(
        "index_fsm_create",
        None,
        &m.queries.index_queries,
    ));
    let jobs = m.queries.mapred_jobs.clone();
    out.push(Spiral {
        minute: "pipeline_create_one".into(),
        total: Some("pipeline_create_count".into()),
        read: Box::new(move || jobs.iter().map(Counter::get).sum()),
    });
    for t in RIAK_DATATYPES {
        let figures = m.datatypes.of(t);
        out.push(Spiral::counted(
            &format!("node_gets_{}", t.name()),
            &figures.gets,
        ));
        out.push(Spiral::counted(
            &format!("node_puts_{}", t.name()),
            &figures.puts,
        ));
        let at_vnodes = m.vnodes.of(t);
        out.push(Spiral::counted(
            &format!("object_{}_merge", t.name()),
            &at_vnodes.merges,
        ));
        out.push(Spiral::counted(
            &format!("vnode_{}_update", t.name()),
            &at_vnodes.updates,
        ));
    }
    if let Some(pb) = pb {
        let pb = pb.clone();
        out.push(Spiral {
            minute: "pbc_connects".into(),
            total: Some("pbc_connects_total".into()),
            read: Box::new(move || pb.admitted()),
        });
    }
    out
}

/// The one-minute counts of a node's spirals: samples of their totals.
pub struct HttpStats {
    started: Instant,
    spirals: Vec<Spiral>,
    samples: Mutex<VecDeque<(u64, Vec<u64>)>>,
}

impl HttpStats {
    /// The spirals of `node` (and of its PB listener's `pb` table).
    pub fn new(node: &Node, pb: Option<&Arc<ConnectionTable>>) -> Self {
        HttpStats {
            started: Instant::now(),
            spirals: spirals(node, pb),
            samples: Mutex::new(VecDeque::new()),
        }
    }

    fn now_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Starts the once-a-second sampler; it ends when the stats are
    /// dropped. Does nothing outside a tokio runtime.
    pub fn start_sampler(stats: &Arc<HttpStats>) {
        stats.sample();
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<HttpStats> = Arc::downgrade(stats);
        rt.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(stats) = weak.upgrade() else { return };
                stats.sample();
            }
        });
    }

    /// Every spiral's total now.
    fn totals(&self) -> Vec<u64> {
        self.spirals.iter().map(|s| (s.read)()).collect()
    }

    fn sample(&self) {
        let now = self.now_secs();
        let totals = self.totals();
        let mut samples = self.samples.lock();
        samples.push_back((now, totals));
        while samples.len() > 2 && samples[1].0 + MINUTE_SECS <= now {
            samples.pop_front();
        }
    }

    /// Every spiral by its names: over the last minute (now minus the
    /// oldest kept sample) and, where named, since the node started.
    pub(super) fn entries(&self) -> Vec<(String, Value)> {
        let now = self.totals();
        let base = self.samples.lock().front().map(|s| s.1.clone());
        let mut out = Vec::with_capacity(2 * now.len());
        for (i, (spiral, total)) in self.spirals.iter().zip(&now).enumerate() {
            let before = base.as_ref().and_then(|b| b.get(i)).copied().unwrap_or(0);
            out.push((spiral.minute.clone(), json!(total.saturating_sub(before))));
            if let Some(name) = &spiral.total {
                out.push((name.clone(), json!(total)));
            }
        }
        out
    }
}
