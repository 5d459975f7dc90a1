//! `eddy bench run`: load and check the config, check the servers, set
//! bucket properties, probe the operations, preload, run the workers with
//! the collector, and write the summary and charts.
//!
//! A config built in code (a preset, [`crate::preset`]) runs the same way
//! through [`run_config`], checked as a file is. The results directory is
//! made only once the checks have passed, so a run refused up front leaves
//! nothing behind; with [`Output::None`] none is made at all and the
//! [`RunOutcome`] is all there is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};

use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::baseline::{self, Baseline, EchoPlan};
use crate::collector::{self, Collected, Timing};
use crate::config::{self, BenchConfig, Overrides, Protocol};
use crate::driver::storage::StorageEngine;
use crate::error::BenchError;
use crate::ops::OpKind;
use crate::probe;
use crate::report::ResultsDir;
use crate::report::machine::MachineFacts;
use crate::report::summary::{OpSummary, Summary};
use crate::window::{OpWindow, Recorder};
use crate::workload::Plan;
use crate::{preload, timefmt, worker};

/// How `eddy bench run` was asked to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub out: Output,
    pub overrides: Overrides,
    /// The calling binary's version, recorded with the machine facts.
    pub tool_version: String,
    /// Worker threads of the run's runtime and of the loopback echo
    /// server; default one per core.
    pub threads: Option<usize>,
    /// Skip trying each weighted operation once before the load
    /// ([`probe::probe_ops`]), so that the server sees no request besides
    /// the ping, the preload and the load.
    pub skip_probe: bool,
    /// The engine a `protocol = "storage"` run calls (design note 023).
    pub storage: Option<StorageEngine>,
    /// Ends the measured phase when notified.
    pub until: Option<Arc<Notify>>,
    /// Told once the measured phase's workers are running, so that what
    /// `until` waits for can start only then.
    pub started: Option<mpsc::Sender<()>>,
}

/// Where a run's results go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// `bench-results/<UTC timestamp>`.
    #[default]
    Timestamped,
    /// This directory (made if missing).
    Dir(PathBuf),
    /// Nowhere: nothing is written.
    None,
}

/// A finished run.
#[derive(Debug)]
pub struct RunOutcome {
    /// The results directory, unless the run wrote none.
    pub dir: Option<PathBuf>,
    pub summary: Summary,
    /// Each weighted operation over the whole measured phase.
    pub totals: BTreeMap<OpKind, OpWindow>,
}

/// What a run executes: the checked config, what to call it, and the text
/// the results get as `config.toml`.
struct Source<'a> {
    config: &'a BenchConfig,
    name: &'a str,
    text: &'a str,
}

/// Runs the benchmark `config_path` describes.
pub fn run(config_path: &Path, options: &RunOptions) -> Result<RunOutcome, BenchError> {
    let (config, text) = config::load(config_path, &options.overrides)?;
    let name = config_path.display().to_string();
    let source = Source {
        config: &config,
        name: &name,
        text: &text,
    };
    execute(&source, options)
}

/// Runs `config`, built in code and called `name` in the summary: the
/// overrides apply and it is checked as a file is.
pub fn run_config(
    config: &BenchConfig,
    name: &str,
    options: &RunOptions,
) -> Result<RunOutcome, BenchError> {
    let mut config = config.clone();
    config.apply(&options.overrides);
    config::check(&config)?;
    let text = toml::to_string(&config)
        .unwrap_or_else(|e| format!("# {name}: not representable as TOML ({e})\n"));
    let source = Source {
        config: &config,
        name,
        text: &text,
    };
    execute(&source, options)
}

fn execute(source: &Source<'_>, options: &RunOptions) -> Result<RunOutcome, BenchError> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    match options.threads {
        Some(0) => return Err(setting_error("threads", "must be at least 1")),
        Some(n) => builder.worker_threads(n),
        None => &mut builder,
    };
    let runtime = builder.enable_all().build().map_err(BenchError::Runtime)?;
    runtime.block_on(run_async(source, options))
}

fn setting_error(setting: &str, problem: &str) -> BenchError {
    BenchError::Setting {
        setting: setting.to_string(),
        problem: problem.to_string(),
    }
}

async fn run_async(source: &Source<'_>, options: &RunOptions) -> Result<RunOutcome, BenchError> {
    let config = source.config;
    let mut plan = Plan::new(config);
    if config.driver.protocol == Protocol::Storage {
        let Some(engine) = options.storage.clone() else {
            return Err(setting_error(
                "driver.protocol",
                "\"storage\" is for `eddy bench storage`, which opens the engine",
            ));
        };
        Arc::make_mut(&mut plan.driver).storage = Some(engine);
    }
    let plan = Arc::new(plan);
    let server = check_servers(&plan, config, options).await?;
    let preload_keys = config.preload.as_ref().map(|p| p.keys);
    let preload_s = match preload_keys {
        Some(keys) => Some(preload::preload(&plan, keys).await?),
        None => None,
    };
    let baseline = measure_baseline(&plan, config, options.threads).await?;
    let (started_at, stamp) = timefmt::now();
    let machine = MachineFacts::collect(&options.tool_version);
    let mut results = open_results(&options.out, &stamp, &plan, source.text, &machine)?;
    let collected = measure(&plan, config, options, results.as_mut()).await?;
    let summary = Summary {
        config: source.name.to_string(),
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
    if let Some(r) = &results {
        r.finish(&summary)?;
    }
    Ok(RunOutcome {
        dir: results.map(|r| r.path().to_path_buf()),
        summary,
        totals: collected.totals,
    })
}

/// Pings every endpoint, sets the bucket's properties and (unless told
/// not to) probes the operations; returns what the first server says it
/// is.
async fn check_servers(
    plan: &Plan,
    config: &BenchConfig,
    options: &RunOptions,
) -> Result<String, BenchError> {
    let (mut conn, server) = probe::check_endpoints(plan).await?;
    if let Some(props) = &config.bucket_props {
        probe::set_props(&mut conn, props).await?;
    }
    if !options.skip_probe {
        probe::probe_ops(plan, &mut conn).await?;
    }
    Ok(server)
}

/// The results directory `out` asks for, with the config and the machine
/// facts written; `None` for [`Output::None`].
fn open_results(
    out: &Output,
    stamp: &str,
    plan: &Plan,
    text: &str,
    machine: &MachineFacts,
) -> Result<Option<ResultsDir>, BenchError> {
    let dir = match out {
        Output::None => return Ok(None),
        Output::Dir(d) => d.clone(),
        Output::Timestamped => Path::new("bench-results").join(stamp),
    };
    let ops: Vec<_> = plan.chooser.ops().collect();
    let results = ResultsDir::create(&dir, &ops)?;
    results.write_file("config.toml", text)?;
    results.write_file("machine.txt", &machine.to_text())?;
    Ok(Some(results))
}

/// The loopback echo with the run's workers, seed and operation mix
/// ([`crate::baseline`]), unless the config sets its length to zero. The
/// echo server gets the run's threads (one per core unless told), as a
/// node would.
async fn measure_baseline(
    plan: &Plan,
    config: &BenchConfig,
    threads: Option<usize>,
) -> Result<Option<Baseline>, BenchError> {
    if config.baseline.0.is_zero() {
        return Ok(None);
    }
    eprintln!("loopback baseline: {:.1} s…", config.baseline.secs());
    let cores = || std::thread::available_parallelism().map_or(1, |n| n.get());
    let echo = EchoPlan {
        connections: config.concurrent,
        server_threads: threads.unwrap_or_else(cores),
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
    options: &RunOptions,
    results: Option<&mut ResultsDir>,
) -> Result<Collected, BenchError> {
    let recorder = Arc::new(Recorder::new(config.concurrent));
    let (stop_tx, stop_rx) = watch::channel(false);
    let start = Instant::now();
    let timing = Timing {
        start,
        deadline: start + config.duration.0,
        interval: config.report_interval.0,
        give_up_after: config.give_up_after.0,
        request_timeout: config.request_timeout.0,
        until: options.until.clone(),
    };
    let mut workers = JoinSet::new();
    for id in 0..config.concurrent {
        let (plan, recorder, stop) = (plan.clone(), recorder.clone(), stop_rx.clone());
        workers.spawn(worker::run(id, plan, recorder, stop, timing.deadline));
    }
    if let Some(started) = &options.started {
        // The receiver may be gone; the run goes on either way.
        let _ = started.send(());
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
