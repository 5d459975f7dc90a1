//! Queries: 2i queries and key and bucket listings, counted by their
//! coordinators (`Node::index_query_blocking`, `Node::list_keys_blocking`,
//! `Node::list_buckets_blocking`), whoever asks (PB, HTTP, a MapReduce
//! job's inputs); and MapReduce jobs, counted by the node's `Jobs` (in
//! eddy-query) into these handles, registered with the node's.
//!
//! `/stats` shows them under Riak's names where Riak has the figure:
//! `index_fsm_create`, `index_fsm_active`, `vnode_index_reads`,
//! `list_fsm_create`, `list_fsm_active`, and (a MapReduce job is a
//! pipeline in Riak) `pipeline_create_one`, `pipeline_create_count`,
//! `pipeline_active`.

use eddy_metrics::{Counter, Gauge, Histogram, Registry, TIME_US_BOUNDS, Unit};

/// What a MapReduce job's inputs are, as its figures are labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobInputs {
    /// Every key of a bucket.
    Bucket,
    /// Keys the job names.
    Keys,
    /// The keys of a bucket a key filter passes.
    KeyFilter,
    /// The keys a 2i query names.
    Index,
}

impl JobInputs {
    pub const ALL: [JobInputs; 4] = [
        JobInputs::Bucket,
        JobInputs::Keys,
        JobInputs::KeyFilter,
        JobInputs::Index,
    ];

    /// The label's value.
    pub fn name(self) -> &'static str {
        match self {
            JobInputs::Bucket => "bucket",
            JobInputs::Keys => "keys",
            JobInputs::KeyFilter => "key_filter",
            JobInputs::Index => "index",
        }
    }
}

/// The node's figures of queries.
#[derive(Debug)]
pub struct QueryMetrics {
    /// 2i queries coordinated, failed, and running now.
    pub index_queries: Counter,
    pub index_query_errors: Counter,
    pub index_queries_running: Gauge,
    /// Vnodes asked to fold an index for a 2i query (or for a MapReduce
    /// job's index inputs mapped at the vnodes), each ask counted (a page
    /// asks a vnode again for its next chunk when it ran out): Riak's
    /// `vnode_index_reads`, counted by the coordinator.
    pub vnode_index_reads: Counter,
    /// Key listings coordinated, failed, and running now.
    pub list_keys: Counter,
    pub list_keys_errors: Counter,
    pub list_keys_running: Gauge,
    /// Bucket listings coordinated and failed.
    pub list_buckets: Counter,
    pub list_buckets_errors: Counter,
    /// MapReduce jobs started, by [`JobInputs`] (in its `ALL` order).
    pub mapred_jobs: [Counter; JobInputs::ALL.len()],
    /// MapReduce jobs started that failed, and those running now.
    pub mapred_job_errors: Counter,
    pub mapred_jobs_running: Gauge,
    /// Time of each phase of a MapReduce job, µs.
    pub mapred_phase_time: Histogram,
}

impl QueryMetrics {
    #[rustfmt::skip]
    pub fn register(r: &Registry) -> QueryMetrics {
        let jobs = |i: JobInputs| r.counter_with("eddy_mapred_jobs_total", "MapReduce jobs started, by their inputs (bucket, keys, key_filter, index).", &[("inputs", i.name())]);
        QueryMetrics {
            index_queries: r.counter("eddy_index_queries_total", "2i queries this node coordinated."),
            index_query_errors: r.counter("eddy_index_query_errors_total", "2i queries this node coordinated that failed."),
            index_queries_running: r.gauge("eddy_index_queries_running", "2i queries this node coordinates now."),
            vnode_index_reads: r.counter("eddy_vnode_index_reads_total", "Vnodes asked to fold an index for a 2i query."),
            list_keys: r.counter("eddy_list_keys_total", "Key listings this node coordinated."),
            list_keys_errors: r.counter("eddy_list_keys_errors_total", "Key listings this node coordinated that failed."),
            list_keys_running: r.gauge("eddy_list_keys_running", "Key listings this node coordinates now."),
            list_buckets: r.counter("eddy_list_buckets_total", "Bucket listings this node coordinated."),
            list_buckets_errors: r.counter("eddy_list_buckets_errors_total", "Bucket listings this node coordinated that failed."),
            mapred_jobs: JobInputs::ALL.map(jobs),
            mapred_job_errors: r.counter("eddy_mapred_job_errors_total", "MapReduce jobs started that failed."),
            mapred_jobs_running: r.gauge("eddy_mapred_jobs_running", "MapReduce jobs running now."),
            mapred_phase_time: r.histogram("eddy_mapred_phase_time_seconds", "Time of each phase of the MapReduce jobs run.", Unit::Microseconds, TIME_US_BOUNDS),
        }
    }

    /// The counter of jobs started with `inputs`.
    pub fn mapred_jobs(&self, inputs: JobInputs) -> &Counter {
        let at = JobInputs::ALL.iter().position(|i| *i == inputs);
        &self.mapred_jobs[at.unwrap_or_default()]
    }

    /// Every MapReduce job started.
    pub fn mapred_jobs_started(&self) -> u64 {
        self.mapred_jobs.iter().map(Counter::get).sum()
    }

    /// Counts a query coordinated with `count`, runs `work` while
    /// `running` (if any) counts it, and counts a failure in `errors`.
    pub(crate) fn track<T, E>(
        count: &Counter,
        running: Option<&Gauge>,
        errors: &Counter,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        count.increment();
        let _running = running.map(Gauge::track);
        work().inspect_err(|_| errors.increment())
    }
}
