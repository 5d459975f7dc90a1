//! `eddy bench pb`: a closed-loop load generator speaking Riak's Protocol
//! Buffers API, for Eddy or any Riak-compatible node.
//!
//! A run has three phases: open `--connections` connections (a node that
//! does not answer a ping fails the run); for `get` and `mixed`, load every
//! key of the key space once, untimed, so that every get finds its key
//! (unless `--skip-preload`: an earlier run loaded them);
//! unless `--baseline 0`, run the same closed loop against a loopback echo
//! server ([`baseline`]); then let every connection issue requests back to
//! back for `--duration` seconds ([`worker`]). Figures count successful requests; failed ones are
//! counted by kind ([`report`]). Every request waits at most
//! `--timeout-ms`, so the run ends at most one timeout after its deadline.

pub mod baseline;
pub mod error;
pub mod ops;
pub mod report;
pub mod worker;

use std::sync::Arc;
use std::time::Duration;

use eddy_client::pb::PbClient;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cli::{PbArgs, PbWorkload};
use error::PbBenchError;
use report::PbReport;
use worker::{Plan, WorkerStats};

/// Runs `eddy bench pb` and returns what to print.
pub fn run(args: &PbArgs) -> Result<String, PbBenchError> {
    check(args)?;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(PbBenchError::Runtime)?;
    let report = runtime.block_on(run_async(args, threads))?;
    Ok(match args.json {
        true => report.to_json(),
        false => report.to_table(),
    })
}

fn check(args: &PbArgs) -> Result<(), PbBenchError> {
    if args.keys == 0 {
        return Err(PbBenchError::InvalidOption("--keys must be at least 1"));
    }
    if args.connections == 0 {
        return Err(PbBenchError::InvalidOption(
            "--connections must be at least 1",
        ));
    }
    if !(args.duration.is_finite() && args.duration > 0.0) {
        return Err(PbBenchError::InvalidOption("--duration must be positive"));
    }
    if args.timeout_ms == 0 {
        return Err(PbBenchError::InvalidOption("--timeout-ms must be positive"));
    }
    if !(args.baseline.is_finite() && args.baseline >= 0.0) {
        return Err(PbBenchError::InvalidOption(
            "--baseline must be zero or positive",
        ));
    }
    if args.threads == Some(0) {
        return Err(PbBenchError::InvalidOption("--threads must be at least 1"));
    }
    Ok(())
}

async fn run_async(args: &PbArgs, threads: usize) -> Result<PbReport, PbBenchError> {
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let plan = Arc::new(Plan {
        args: args.clone(),
        value: ops::value(args.value_size, &mut rng),
        timeout: Duration::from_millis(args.timeout_ms),
    });
    let clients = connect_all(&plan).await?;
    let (clients, preload_s) = match args.workload {
        _ if args.skip_preload => (clients, None),
        PbWorkload::Put => (clients, None),
        PbWorkload::Get | PbWorkload::Mixed => {
            let began = Instant::now();
            let clients = preload(&plan, clients).await?;
            (clients, Some(began.elapsed().as_secs_f64()))
        }
    };
    let baseline = match args.baseline {
        0.0 => None,
        secs => Some(
            baseline::measure(args, threads, secs)
                .await
                .map_err(PbBenchError::Baseline)?,
        ),
    };
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(args.duration);
    let mut workers = JoinSet::new();
    for (id, client) in clients.into_iter().enumerate() {
        workers.spawn(worker::run(id, plan.clone(), Some(client), deadline));
    }
    let mut stats = WorkerStats::new();
    while let Some(done) = workers.join_next().await {
        stats.merge(&done.map_err(|e| PbBenchError::Task(e.to_string()))?);
    }
    let elapsed_s = began.elapsed().as_secs_f64();
    let mut report = PbReport::new(args, threads, &stats, elapsed_s);
    report.preload_s = preload_s;
    report.baseline = baseline;
    Ok(report)
}

/// Opens every connection and pings through the first, so that a node that
/// is down or hung fails the run before it starts.
async fn connect_all(plan: &Plan) -> Result<Vec<PbClient>, PbBenchError> {
    let addr = &plan.args.addr;
    let unreachable = |source| PbBenchError::Unreachable {
        addr: addr.clone(),
        source,
    };
    let mut clients = Vec::with_capacity(plan.args.connections);
    for _ in 0..plan.args.connections {
        clients.push(
            PbClient::connect(addr, plan.timeout)
                .await
                .map_err(unreachable)?,
        );
    }
    clients[0].ping().await.map_err(unreachable)?;
    Ok(clients)
}

/// Puts every key once, connection `i` writing the keys `≡ i` modulo the
/// number of connections; the first failure fails the run.
async fn preload(plan: &Arc<Plan>, clients: Vec<PbClient>) -> Result<Vec<PbClient>, PbBenchError> {
    let stride = clients.len() as u64;
    let mut tasks = JoinSet::new();
    for (id, mut client) in clients.into_iter().enumerate() {
        let plan = plan.clone();
        tasks.spawn(async move {
            let mut put = ops::put_template(&plan.args, plan.value.clone());
            for n in (id as u64..plan.args.keys).step_by(stride as usize) {
                ops::key(n, put.key.get_or_insert_default());
                if let Err(source) = client.put(&put).await {
                    return Err(PbBenchError::Preload { key: n, source });
                }
            }
            Ok(client)
        });
    }
    let mut loaded = Vec::with_capacity(stride as usize);
    while let Some(done) = tasks.join_next().await {
        loaded.push(done.map_err(|e| PbBenchError::Task(e.to_string()))??);
    }
    Ok(loaded)
}

/// `eddy bench pb`'s options as the command line `extra` gives them (tests).
#[cfg(test)]
pub(crate) fn test_args(extra: &[&str]) -> PbArgs {
    use clap::Parser;
    let argv = ["eddy", "bench", "pb"].iter().chain(extra);
    let cli = crate::cli::Cli::parse_from(argv);
    let crate::cli::Command::Bench(b) = cli.command else {
        panic!("not a bench command");
    };
    let crate::cli::BenchTarget::Pb(a) = b.target else {
        panic!("not a pb bench command");
    };
    a
}
