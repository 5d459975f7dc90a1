//! Running MapReduce jobs for both front ends: the process's executor
//! and its JavaScript pool (one per process, started on first use with
//! the limits [`configure`] set), [`run`], which reads a job's JSON and
//! runs it on a blocking thread against the node, and [`vnode_runner`],
//! which the node's vnodes run map phases with (design note 017).

use std::sync::{Arc, OnceLock};

use eddy_kv::Node;
use eddy_kv::mapphase::{MapInput, MapRunner};
use eddy_query::MapRedError;
use eddy_query::exec::{Executor, MapRedOutput};
use eddy_query::job::parse_job;
use eddy_query::js::{JsLimits, JsPool};
use eddy_query::kv_source::KvSource;

static LIMITS: OnceLock<Option<JsLimits>> = OnceLock::new();
static EXECUTOR: OnceLock<Executor> = OnceLock::new();

/// Sets the JavaScript pool's limits (`None` disables JavaScript). Takes
/// effect only before the first job; returns false after it.
pub fn configure(limits: Option<JsLimits>) -> bool {
    LIMITS.set(limits).is_ok()
}

fn executor() -> &'static Executor {
    EXECUTOR.get_or_init(|| {
        let limits = *LIMITS.get_or_init(|| Some(JsLimits::default()));
        let pool = limits.and_then(|l| match JsPool::start(l) {
            Ok(pool) => Some(pool),
            Err(e) => {
                tracing::error!("JavaScript pool failed to start: {e}");
                None
            }
        });
        Executor::new(pool)
    })
}

/// The map runner for this process's node: map phases at its vnodes run
/// with the process's executor (its pool still started on first use).
pub fn vnode_runner() -> Arc<dyn MapRunner> {
    Arc::new(VnodeRunner)
}

struct VnodeRunner;

impl MapRunner for VnodeRunner {
    fn run(&self, phase: &[u8], inputs: Vec<MapInput>) -> Result<Vec<u8>, String> {
        eddy_query::vnode_map::Runner::new(executor().clone()).run(phase, inputs)
    }
}

/// Reads and runs the job in `body` (JSON).
pub async fn run(node: Arc<Node>, body: Vec<u8>) -> Result<MapRedOutput, MapRedError> {
    let job = parse_job(&body)?;
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let source = KvSource { node, runtime };
        executor().run(&job, &source)
    })
    .await
    .map_err(|e| MapRedError::Worker(e.to_string()))?
}
