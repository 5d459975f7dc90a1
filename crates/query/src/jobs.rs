//! What a node holds to run MapReduce (design notes 017, 021): one
//! [`Jobs`] value, built when the node is built with its JavaScript
//! limits, shared by the front ends (which run jobs with it) and the
//! node's vnodes (which run map phase 0 with it, as their
//! [`MapRunner`]). Nothing of it is process-wide: two nodes in one process
//! (tests) each have their own pool and limits.
//!
//! The JavaScript pool starts on the first job or map phase that needs an
//! executor, so a node that never runs MapReduce starts no JavaScript
//! threads. A pool that fails to start is logged once and leaves jobs
//! without JavaScript (their JavaScript phases fail, as with JavaScript
//! turned off).

use std::sync::{Arc, OnceLock};

use eddy_kv::Node;
use eddy_kv::metrics::JobInputs;
use eddy_vnode::mapphase::{MapInput, MapRunner};

use crate::error::MapRedError;
use crate::exec::{Executor, MapRedOutput};
use crate::job::{Inputs, parse_job};
use crate::js::{JsLimits, JsPool};
use crate::kv_source::KvSource;
use crate::vnode_map::Runner;

/// A node's MapReduce: its JavaScript limits and, once started, its
/// executor.
pub struct Jobs {
    /// `None`: JavaScript is turned off.
    limits: Option<JsLimits>,
    executor: OnceLock<Executor>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("limits", &self.limits)
            .field("started", &self.executor.get().is_some())
            .finish()
    }
}

impl Jobs {
    /// A node's MapReduce with these JavaScript limits (`None` turns
    /// JavaScript off).
    pub fn new(limits: Option<JsLimits>) -> Arc<Jobs> {
        Arc::new(Jobs {
            limits,
            executor: OnceLock::new(),
        })
    }

    /// The JavaScript limits this node runs with.
    pub fn limits(&self) -> Option<JsLimits> {
        self.limits
    }

    /// The executor, its pool started on first use.
    fn executor(&self) -> &Executor {
        self.executor.get_or_init(|| {
            let pool = self.limits.and_then(|l| match JsPool::start(l) {
                Ok(pool) => Some(pool),
                Err(e) => {
                    tracing::error!("JavaScript pool failed to start: {e}");
                    None
                }
            });
            Executor::new(pool)
        })
    }

    /// Reads the job in `body` (JSON) and runs it against `node` on a
    /// blocking thread. A job read is counted in `node`'s figures (by its
    /// inputs), while it runs, and if it fails; its phases are timed.
    pub async fn run(
        self: Arc<Self>,
        node: Arc<Node>,
        body: Vec<u8>,
    ) -> Result<MapRedOutput, MapRedError> {
        let job = parse_job(&body)?;
        let metrics = node.metrics.clone();
        let q = &metrics.queries;
        q.mapred_jobs(inputs_of(&job.inputs)).increment();
        let running = q.mapred_jobs_running.track();
        let runtime = tokio::runtime::Handle::current();
        let figures = metrics.clone();
        tokio::task::spawn_blocking(move || {
            let _running = running;
            let source = KvSource { node, runtime };
            let phase_time = &figures.queries.mapred_phase_time;
            self.executor().run(&job, &source, phase_time)
        })
        .await
        .map_err(|e| MapRedError::Worker(e.to_string()))
        .and_then(|ran| ran)
        .inspect_err(|e| {
            q.mapred_job_errors.increment();
            log_failure(e);
        })
    }
}

/// How a job's inputs label its figures.
fn inputs_of(inputs: &Inputs) -> JobInputs {
    match inputs {
        Inputs::Bucket(_) => JobInputs::Bucket,
        Inputs::Keys(_) => JobInputs::Keys,
        Inputs::KeyFilter { .. } => JobInputs::KeyFilter,
        Inputs::Index(_) => JobInputs::Index,
    }
}

/// Logs a job that failed on the node that ran it, once: a failed phase
/// with its index, kind and cause; a job out of time or whose worker
/// failed. A refused job (bad JSON, a bad input) is the client's and is
/// only answered.
fn log_failure(e: &MapRedError) {
    match e {
        MapRedError::Phase {
            phase,
            kind,
            message,
            ..
        } => tracing::warn!(phase, kind, cause = %message, "MapReduce phase failed"),
        MapRedError::Timeout => tracing::warn!("MapReduce job timed out"),
        MapRedError::Worker(cause) => tracing::error!(%cause, "MapReduce job's worker failed"),
        MapRedError::BadJob(_) | MapRedError::Kv(_) => {}
    }
}

impl MapRunner for Jobs {
    fn run(&self, phase: &[u8], inputs: Vec<MapInput>) -> Result<Vec<u8>, String> {
        Runner::new(self.executor().clone()).run(phase, inputs)
    }
}
