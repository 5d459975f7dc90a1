//! The node's figures of the work its coordinators and vnodes do,
//! registered once in the node's [`Registry`] (design note 025) and
//! counted where the work is done, so that PB, HTTP and the node's own
//! requests (MapReduce's gets, a delete's read) are counted alike.
//!
//! `/stats` shows each counter under Riak's name (over the last minute)
//! and with `_total`; `/metrics` under its `eddy_` name.
//!
//! Files: this one (gets, puts, deletes, vnodes, multi-key requests),
//! [`datatype`] (data type fetches and updates, per type), [`query`] (2i
//! queries, listings, MapReduce jobs). The vnodes' own figures (object
//! merges, data type merges and updates) are eddy-vnode's
//! [`VnodeFigures`], registered here and handed to every vnode the node
//! builds.

pub mod datatype;
pub mod query;

use std::sync::Arc;
use std::time::Instant;

use eddy_metrics::{Counter, Histogram, Registry, TIME_US_BOUNDS, Unit, micros_between};
use eddy_model::request::GetResponse;
use eddy_vnode::figures::VnodeFigures;

pub use datatype::DatatypeMetrics;
pub use query::{JobInputs, QueryMetrics};

/// Buckets of sibling counts.
const SIBLINGS_BOUNDS: &[u64] = &[1, 2, 3, 5, 10, 25, 50, 100];
/// Buckets of object sizes: 1 KiB to 64 MiB.
const OBJSIZE_BOUNDS: &[u64] = &[
    1 << 10,
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    64 << 20,
];

/// The kv layer's handles into the node's registry.
#[derive(Debug)]
pub struct NodeMetrics {
    /// Gets this node coordinated (each key of a multi-get too).
    pub gets: Counter,
    /// Puts this node coordinated (data type updates, each object of a
    /// multi-put too).
    pub puts: Counter,
    /// Deletes this node coordinated.
    pub deletes: Counter,
    pub read_repairs: Counter,
    /// Writes of an object over the siblings warning threshold.
    pub siblings_warnings: Counter,
    /// Requests sent to vnodes: gets (including a delete's read).
    pub vnode_gets: Counter,
    /// Requests sent to vnodes: puts (coordinated, replicated, repairs).
    pub vnode_puts: Counter,
    /// Multi-key requests taken, by operation (design note 016).
    pub multi_gets: Counter,
    pub multi_puts: Counter,
    pub multi_deletes: Counter,
    /// Keys (or objects) named by the multi-key requests taken.
    pub multi_get_keys: Counter,
    pub multi_put_keys: Counter,
    pub multi_delete_keys: Counter,
    /// Batched vnode messages sent to other nodes (each carrying the
    /// gets or replicated puts of many keys for vnodes of one node).
    pub vnode_batches: Counter,
    /// Set and map operations' deltas sent to replicas instead of whole
    /// objects (design note 020 §6), and replicas that answered them
    /// `Behind` and were sent the whole object.
    pub datatype_deltas: Counter,
    pub datatype_deltas_behind: Counter,
    /// Objects the expiry sweep deleted (buckets with a `ttl`).
    pub expired: Counter,
    /// Time of each single-key get and put this node coordinated, µs.
    pub get_fsm_time: Histogram,
    pub put_fsm_time: Histogram,
    /// Siblings and bytes of the objects gets found.
    pub get_fsm_siblings: Histogram,
    pub get_fsm_objsize: Histogram,
    /// Data type fetches and updates, by type.
    pub datatypes: DatatypeMetrics,
    /// 2i queries, listings and MapReduce jobs.
    pub queries: QueryMetrics,
    /// What the node's vnodes count: object merges, data type merges and
    /// updates (Riak's `object_merge`, `vnode_counter_update`, …).
    pub vnodes: Arc<VnodeFigures>,
}

impl NodeMetrics {
    /// Registers the kv layer's figures in `r`.
    pub fn register(r: &Registry) -> NodeMetrics {
        let time = |name, help| r.histogram(name, help, Unit::Microseconds, TIME_US_BOUNDS);
        NodeMetrics {
            gets: r.counter("eddy_node_gets_total", "Gets this node coordinated, PB and HTTP alike (each key of a multi-get)."),
            puts: r.counter("eddy_node_puts_total", "Puts this node coordinated (data type updates and each object of a multi-put included)."),
            deletes: r.counter("eddy_node_deletes_total", "Deletes this node coordinated."),
            read_repairs: r.counter("eddy_read_repairs_total", "Replicas a get found behind and sent the merged object."),
            siblings_warnings: r.counter("eddy_siblings_warnings_total", "Writes of an object over object.siblings.warning_threshold."),
            vnode_gets: r.counter("eddy_vnode_gets_total", "Reads sent to vnodes (replicas)."),
            vnode_puts: r.counter("eddy_vnode_puts_total", "Writes sent to vnodes (replicas), read repairs included."),
            multi_gets: r.counter("eddy_node_multi_gets_total", "Multi-get requests taken."),
            multi_puts: r.counter("eddy_node_multi_puts_total", "Multi-put requests taken."),
            multi_deletes: r.counter("eddy_node_multi_deletes_total", "Multi-delete requests taken."),
            multi_get_keys: r.counter("eddy_node_multi_get_keys_total", "Keys named by multi-get requests."),
            multi_put_keys: r.counter("eddy_node_multi_put_keys_total", "Objects named by multi-put requests."),
            multi_delete_keys: r.counter("eddy_node_multi_delete_keys_total", "Keys named by multi-delete requests."),
            vnode_batches: r.counter("eddy_vnode_batches_total", "Batched vnode messages sent to other nodes."),
            datatype_deltas: r.counter("eddy_datatype_deltas_total", "Set and map operations sent to replicas as deltas."),
            datatype_deltas_behind: r.counter("eddy_datatype_deltas_behind_total", "Replicas behind a delta, sent the whole value."),
            expired: r.counter("eddy_expired_total", "Objects of buckets with a ttl the expiry sweep deleted (each replica counts its own)."),
            get_fsm_time: time("eddy_node_get_fsm_time_seconds", "Time of the gets this node coordinated."),
            put_fsm_time: time("eddy_node_put_fsm_time_seconds", "Time of the puts this node coordinated."),
            get_fsm_siblings: r.histogram("eddy_node_get_fsm_siblings", "Siblings in the objects gets found.", Unit::Count, SIBLINGS_BOUNDS),
            get_fsm_objsize: r.histogram("eddy_node_get_fsm_objsize_bytes", "Bytes of the values of the objects gets found.", Unit::Bytes, OBJSIZE_BOUNDS),
            datatypes: DatatypeMetrics::register(r),
            queries: QueryMetrics::register(r),
            vnodes: Arc::new(VnodeFigures::register(r)),
        }
    }

    /// Records a coordinated get that began at `start`: its time and,
    /// for an object found, its siblings and size.
    pub(crate) fn record_get<E>(&self, start: Instant, result: &Result<GetResponse, E>) {
        let (time, siblings, objsize) = (
            &self.get_fsm_time,
            &self.get_fsm_siblings,
            &self.get_fsm_objsize,
        );
        record_get_in([time, siblings, objsize], start, result);
    }
}

/// Records a get that began at `start` in its time, siblings and object
/// size histograms (the last two only for an object found).
fn record_get_in<E>(
    [time, siblings, objsize]: [&Histogram; 3],
    start: Instant,
    result: &Result<GetResponse, E>,
) {
    let now = Instant::now();
    time.record_at(micros_between(start, now), now);
    if let Ok(GetResponse::Found(obj)) = result {
        siblings.record_at(obj.siblings.len() as u64, now);
        objsize.record_at(value_bytes(obj), now);
    }
}

/// The bytes of the values of `obj`'s siblings, as the object size
/// histogram counts them.
pub(crate) fn value_bytes(obj: &eddy_object::RiakObject) -> u64 {
    obj.contents().map(|c| c.value.len() as u64).sum()
}
