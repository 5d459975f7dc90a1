//! `/stats` (`riak_kv_wm_stats`): a JSON object with Riak's stat names.
//!
//! Counts named without `_total` are over the last minute, as Riak's
//! spirals are: a sampler task reads the node's counters once a second and
//! keeps a minute of samples. FSM times (µs), sibling counts and object
//! sizes come from histograms over the last minute, kept in six
//! ten-second slots; the HTTP layer times each coordinated get and put
//! around the node call. `riak_kv_version` is the Riak compatibility
//! version (plain `X.Y.Z`), `eddy_version` Eddy's own.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use axum::response::Response;
use eddy_kv::Node;
use eddy_kv::node::NodeCounters;
use eddy_model::{GetResponse, KvError, PutResponse};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use super::keys::json_response;
use super::server::App;
use crate::version::{EDDY_VERSION, RIAK_COMPAT_VERSION};

const SLOTS: u64 = 6;
const SLOT_SECS: u64 = 10;
const MINUTE_SECS: u64 = 60;

/// A histogram over roughly the last minute.
struct Windowed {
    slots: Mutex<Vec<(u64, Histogram<u64>)>>,
}

impl Windowed {
    fn new() -> Self {
        let slots = (0..SLOTS).map(|_| (u64::MAX, new_histogram())).collect();
        Windowed {
            slots: Mutex::new(slots),
        }
    }

    fn record(&self, now_secs: u64, value: u64) {
        let epoch = now_secs / SLOT_SECS;
        let mut slots = self.slots.lock();
        let slot = &mut slots[(epoch % SLOTS) as usize];
        if slot.0 != epoch {
            slot.1.reset();
            slot.0 = epoch;
        }
        slot.1.saturating_record(value);
    }

    fn snapshot(&self, now_secs: u64) -> Histogram<u64> {
        let epoch = now_secs / SLOT_SECS;
        let mut out = new_histogram();
        for (e, h) in self.slots.lock().iter() {
            if *e != u64::MAX && *e + SLOTS > epoch {
                let _ = out.add(h);
            }
        }
        out
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant figures is valid"))
}

/// The node's counters `/stats` shows, each by its name (counted over the
/// last minute) and with `_total` (since the node started): Riak's for
/// single-key operations, Eddy's for multi-key requests (design note
/// 016: requests and the keys they named, per operation, and the batched
/// vnode messages sent to other nodes; set operations' deltas sent to
/// replicas, and replicas that were behind one, design note 020 §6).
const COUNTERS: [(&str, Counter); 14] = [
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

/// Where one of [`COUNTERS`] is among the node's counters.
type Counter = fn(&NodeCounters) -> &AtomicU64;

/// The counters sampled each second, in [`COUNTERS`]' order.
#[derive(Clone, Copy, Debug, Default)]
struct Totals([u64; COUNTERS.len()]);

impl Totals {
    fn read(c: &NodeCounters) -> Totals {
        Totals(COUNTERS.map(|(_, counter)| counter(c).load(Ordering::Relaxed)))
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

/// The HTTP layer's statistics.
pub struct HttpStats {
    started: Instant,
    get_time_us: Windowed,
    put_time_us: Windowed,
    get_siblings: Windowed,
    get_objsize: Windowed,
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
            get_time_us: Windowed::new(),
            put_time_us: Windowed::new(),
            get_siblings: Windowed::new(),
            get_objsize: Windowed::new(),
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
        samples.push_back((now, Totals::read(&node.counters)));
        while samples.len() > 2 && samples[1].0 + MINUTE_SECS <= now {
            samples.pop_front();
        }
    }

    /// Counts over the last minute: now minus the oldest kept sample.
    fn last_minute(&self, now: Totals) -> Totals {
        let base = self.samples.lock().front().map(|s| s.1).unwrap_or_default();
        now.since(base)
    }

    /// Runs a coordinated get, recording its time, siblings and size.
    pub async fn time_get(
        &self,
        op: impl Future<Output = Result<GetResponse, KvError>>,
    ) -> Result<GetResponse, KvError> {
        let start = Instant::now();
        let result = op.await;
        let now = self.now_secs();
        self.get_time_us
            .record(now, start.elapsed().as_micros() as u64);
        if let Ok(GetResponse::Found(obj)) = &result {
            self.get_siblings.record(now, obj.siblings.len() as u64);
            let size: usize = obj.contents().map(|c| c.value.len()).sum();
            self.get_objsize.record(now, size as u64);
        }
        result
    }

    /// Runs a coordinated put, recording its time.
    pub async fn time_put(
        &self,
        op: impl Future<Output = Result<PutResponse, KvError>>,
    ) -> Result<PutResponse, KvError> {
        let start = Instant::now();
        let result = op.await;
        let elapsed = start.elapsed().as_micros() as u64;
        self.put_time_us.record(self.now_secs(), elapsed);
        result
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
    let now = stats.now_secs();
    let totals = Totals::read(&node.counters);
    let minute = stats.last_minute(totals);
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    for (i, (name, _)) in COUNTERS.iter().enumerate() {
        put(name, json!(minute.0[i]));
        put(&format!("{name}_total"), json!(totals.0[i]));
    }
    for (prefix, w) in [
        ("node_get_fsm_time", &stats.get_time_us),
        ("node_put_fsm_time", &stats.put_time_us),
        ("node_get_fsm_siblings", &stats.get_siblings),
        ("node_get_fsm_objsize", &stats.get_objsize),
    ] {
        for (k, v) in percentiles(prefix, &w.snapshot(now)) {
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

fn percentiles(prefix: &str, h: &Histogram<u64>) -> Vec<(String, Value)> {
    let empty = h.is_empty();
    let q = |p: f64| if empty { 0 } else { h.value_at_quantile(p) };
    let mean = if empty { 0 } else { h.mean().round() as u64 };
    vec![
        (format!("{prefix}_mean"), json!(mean)),
        (format!("{prefix}_median"), json!(q(0.5))),
        (format!("{prefix}_95"), json!(q(0.95))),
        (format!("{prefix}_99"), json!(q(0.99))),
        (
            format!("{prefix}_100"),
            json!(if empty { 0 } else { h.max() }),
        ),
    ]
}

fn node_info(app: &App) -> Vec<(String, Value)> {
    let config = app.node.config();
    let name = config.node_name.0.clone();
    let ring = config.ring_size;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mem_total, mem_allocated) = memory_bytes();
    let load = load_averages();
    let pairs = [
        ("nodename", json!(name)),
        ("connected_nodes", json!([])),
        ("ring_members", json!([name])),
        ("ring_num_partitions", json!(ring)),
        ("ring_creation_size", json!(ring)),
        ("ring_ownership", json!(format!("[{{'{name}',{ring}}}]"))),
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
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
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
