//! `eddy bench run`: load and check the config, check the servers, set
//! bucket properties, probe the operations, preload, run the workers with
//! the collector, and write the summary and charts.
//!
//! The results directory is made only once the checks have passed, so a
//! run refused up front leaves nothing behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::baseline::{self, Baseline, EchoPlan};
use crate::collector::{self, Collected, Timing};
use crate::config::{self, BenchConfig, Overrides};
use crate::error::BenchError;
use crate::probe;
use crate::report::ResultsDir;
use crate::report::machine::MachineFacts;
use crate::report::summary::{OpSummary, Summary};
use crate::window::Recorder;
use crate::workload::Plan;
use crate::{preload, timefmt, worker};

/// How `eddy bench run` was asked to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Results directory; default `bench-results/<UTC timestamp>`.
    pub out: Option<PathBuf>,
    pub overrides: Overrides,
    /// The calling binary's version, recorded with the machine facts.
    pub tool_version: String,
}

/// A finished run.
#[derive(Debug)]
pub struct RunOutcome {
    pub dir: PathBuf,
    pub summary: Summary,
}

/// Runs the benchmark `config_path` describes.
pub fn run(config_path: &Path, options: &RunOptions) -> Result<RunOutcome, BenchError> {
    let (config, text) = config::load(config_path, &options.overrides)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(BenchError::Runtime)?;
    runtime.block_on(run_async(config_path, &config, &text, options))
}

async fn run_async(
    config_path: &Path,
    config: &BenchConfig,
    text: &str,
    options: &RunOptions,
) -> Result<RunOutcome, BenchError> {
    let plan = Arc::new(Plan::new(config));
    let (mut conn, server) = probe::check_endpoints(&plan).await?;
    if let Some(props) = &config.bucket_props {
        probe::set_props(&mut conn, props).await?;
    }
    probe::probe_ops(&plan, &mut conn).await?;
    drop(conn);
    let preload_keys = config.preload.as_ref().map(|p| p.keys);
    let preload_s = match preload_keys {
        Some(keys) => Some(preload::preload(&plan, keys).await?),
        None => None,
    };
    let baseline = measure_baseline(&plan, config).await?;
    let (started_at, stamp) = timefmt::now();
    let dir = options
        .out
        .clone()
        .unwrap_or_else(|| Path::new("bench-results").join(stamp));
    let ops: Vec<_> = plan.chooser.ops().collect();
    let mut results = ResultsDir::create(&dir, &ops)?;
    results.write_file("config.toml", text)?;
    let machine = MachineFacts::collect(&options.tool_version);
    results.write_file("machine.txt", &machine.to_text())?;
    let collected = measure(&plan, config, &mut results).await?;
    let summary = Summary {
        config: config_path.display().to_string(),
        started_at,
        duration_s: config.duration.secs(),
        elapsed_s: collected.elapsed_s,
        ending: collected.ending.clone(),
        protocol: format!("{:?}", config.driver.protocol).to_lowercase(),
        endpoints: config.driver.endpoints.clone(),
        concurrent: config.concurrent,
        mode: format!("{:?}", config.mode).to_lowercase(),
        server: Some(server),
        preload_keys,
        preload_s,
        workers_aborted: collected.workers_aborted,
        ops: op_summaries(&collected),
        machine,
        baseline,
    };
    results.finish(&summary)?;
    Ok(RunOutcome { dir, summary })
}

/// The loopback echo with the run's workers, seed and operation mix
/// ([`crate::baseline`]), unless the config sets its length to zero. The
/// echo server gets one thread per core, as a node would.
async fn measure_baseline(
    plan: &Plan,
    config: &BenchConfig,
) -> Result<Option<Baseline>, BenchError> {
    if config.baseline.0.is_zero() {
        return Ok(None);
    }
    eprintln!("loopback baseline: {:.1} s…", config.baseline.secs());
    let echo = EchoPlan {
        connections: config.concurrent,
        server_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        secs: config.baseline.secs(),
        seed: config.seed,
        mix: plan.echo_mix(),
    };
    let measured = baseline::measure(&echo).await;
    measured.map(Some).map_err(BenchError::Baseline)
}

/// The measured phase: workers and collector.
async fn measure(
    plan: &Arc<Plan>,
    config: &BenchConfig,
    results: &mut ResultsDir,
) -> Result<Collected, BenchError> {
    let recorder = Arc::new(Recorder::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    let start = Instant::now();
    let timing = Timing {
        start,
        deadline: start + config.duration.0,
        interval: config.report_interval.0,
        give_up_after: config.give_up_after.0,
        request_timeout: config.request_timeout.0,
    };
    let mut workers = JoinSet::new();
    for id in 0..config.concurrent {
        let (plan, recorder, stop) = (plan.clone(), recorder.clone(), stop_rx.clone());
        workers.spawn(worker::run(id, plan, recorder, stop, timing.deadline));
    }
    let ops: Vec<_> = plan.chooser.ops().collect();
    collector::collect(recorder, results, &ops, &mut workers, stop_tx, &timing).await
}

fn op_summaries(c: &Collected) -> Vec<OpSummary> {
    c.totals
        .iter()
        .map(|(op, w)| OpSummary::new(op.name(), w, c.elapsed_s))
        .collect()
}
