//! One connection of the load: a closed loop issuing requests back to back
//! until the deadline, timing each, and counting failures by kind.
//!
//! A failure that leaves the connection unusable (timeout, EOF, I/O error)
//! makes the worker connect again; a node that stops answering therefore
//! costs each worker at most one timeout per attempt, and the run ends at
//! most one timeout after its deadline instead of hanging.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use eddy_client::pb::{PbClient, PbClientError};
use hdrhistogram::Histogram;
use tokio::time::Instant;

use super::ops::{self, Op};
use crate::bench::report::new_histogram;
use crate::cli::PbArgs;

/// Pause after a failed connect, so a node that refuses connections is not
/// hammered in a tight loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// What one worker measured.
pub struct WorkerStats {
    pub get_ns: Histogram<u64>,
    pub put_ns: Histogram<u64>,
    pub errors: BTreeMap<&'static str, u64>,
}

impl WorkerStats {
    pub fn new() -> Self {
        WorkerStats {
            get_ns: new_histogram(),
            put_ns: new_histogram(),
            errors: BTreeMap::new(),
        }
    }

    /// Adds `other`'s figures to these.
    pub fn merge(&mut self, other: &WorkerStats) {
        self.get_ns.add(&other.get_ns).expect("same bounds");
        self.put_ns.add(&other.put_ns).expect("same bounds");
        for (kind, n) in &other.errors {
            *self.errors.entry(kind).or_default() += n;
        }
    }

    fn count_error(&mut self, kind: &'static str) {
        *self.errors.entry(kind).or_default() += 1;
    }
}

/// Everything a worker needs, shared by all of them.
pub struct Plan {
    pub args: PbArgs,
    pub value: Vec<u8>,
    pub timeout: Duration,
}

/// Runs worker `id` until `deadline`, reusing `client` if it is given.
pub async fn run(
    id: usize,
    plan: Arc<Plan>,
    client: Option<PbClient>,
    deadline: Instant,
) -> WorkerStats {
    let args = &plan.args;
    let mut rng = eddy_bench::baseline::rng_of(args.seed, id);
    let mut get = ops::get_template(args);
    let mut put = ops::put_template(args, plan.value.clone());
    let mut stats = WorkerStats::new();
    let mut client = client;
    while Instant::now() < deadline {
        let Some(c) = client.as_mut() else {
            client = reconnect(&plan, &mut stats, deadline).await;
            continue;
        };
        let n = rand::Rng::random_range(&mut rng, 0..args.keys);
        let op = ops::choose(args.workload, args.read_percent, &mut rng);
        let started = Instant::now();
        let outcome = match op {
            Op::Get => {
                ops::key(n, &mut get.key);
                found(c.get(&get).await)
            }
            Op::Put => {
                ops::key(n, put.key.get_or_insert_default());
                c.put(&put).await.map(drop).map_err(Failure::Client)
            }
        };
        let ns = eddy_bench::baseline::nanos_since(started);
        match outcome {
            Ok(()) if op == Op::Get => stats.get_ns.saturating_record(ns),
            Ok(()) => stats.put_ns.saturating_record(ns),
            Err(f) => {
                stats.count_error(f.kind());
                if f.needs_reconnect() {
                    client = None;
                }
            }
        }
    }
    stats
}

/// A request that did not succeed.
enum Failure {
    Client(PbClientError),
    /// A get of a preloaded key found nothing.
    NotFound,
}

impl Failure {
    fn kind(&self) -> &'static str {
        match self {
            Failure::Client(e) => e.kind(),
            Failure::NotFound => "not_found",
        }
    }

    fn needs_reconnect(&self) -> bool {
        matches!(self, Failure::Client(e) if e.needs_reconnect())
    }
}

fn found(resp: Result<eddy_wire::proto::RpbGetResp, PbClientError>) -> Result<(), Failure> {
    match resp {
        Ok(r) if r.content.is_empty() => Err(Failure::NotFound),
        Ok(_) => Ok(()),
        Err(e) => Err(Failure::Client(e)),
    }
}

async fn reconnect(plan: &Plan, stats: &mut WorkerStats, deadline: Instant) -> Option<PbClient> {
    match PbClient::connect(&plan.args.addr, plan.timeout).await {
        Ok(c) => Some(c),
        Err(e) => {
            stats.count_error(e.kind());
            tokio::time::sleep_until(deadline.min(Instant::now() + RECONNECT_PAUSE)).await;
            None
        }
    }
}
