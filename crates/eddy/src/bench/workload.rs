//! The basic workloads — put, get, mixed and index-scan — and the phases
//! every workload is made of.
//!
//! A phase is a run of the one load generator (`eddy-bench`) with its
//! storage driver: the engine is handed to the run, which drives it with
//! its own keys, values, workers and collector (design note 023;
//! [`eddy_bench::preset::storage`] says which keys and values a phase
//! uses). All data goes to one bucket. A load phase writes every key of
//! the key space once, without waiting for the disk, and then syncs, so
//! that a read phase after it finds every key (in the page cache, for
//! disk engines).

use std::sync::{Arc, mpsc};

use eddy_bench::driver::storage::StorageEngine;
use eddy_bench::preset::storage::{
    self as preset, BUCKET, INDEX_FIELD, KeyOrder as PhaseOrder, Requests, StoragePhase, TERM_BYTES,
};
use eddy_bench::{Output, RunOptions, run_config};
use eddy_storage::{Backend, FoldControl, IndexQuery};
use tokio::sync::Notify;

use super::error::BenchError;
use super::report::{PhaseResult, Report, value_name};
use crate::cli::{KeyOrder, StorageArgs, SyncMode};

/// Bytes of a key: an 8-byte big-endian number.
const KEY_BYTES: u64 = 8;

/// What every workload gets to work with.
pub struct Ctx<'a> {
    pub args: &'a StorageArgs,
    pub backend: &'a Arc<dyn Backend>,
}

/// When a phase ends.
pub enum Until {
    /// After this many requests, split among the threads.
    Ops(u64),
    /// When `done` is notified; `started` is told once the workers run.
    Told {
        done: Arc<Notify>,
        started: mpsc::Sender<()>,
    },
}

/// Runs one phase of `requests` on the engine and returns its figures;
/// any failed request fails the phase.
pub fn run_phase(
    ctx: &Ctx<'_>,
    requests: Requests,
    until: Until,
    sync: SyncMode,
) -> Result<PhaseResult, BenchError> {
    let args = ctx.args;
    let (ops, told, started) = match until {
        Until::Ops(n) => (Some(n), None, None),
        Until::Told { done, started } => (None, Some(done), Some(started)),
    };
    let phase = StoragePhase {
        engine: ctx.backend.name().to_string(),
        requests,
        ops,
        workers: args.threads,
        keys: args.keys,
        key_order: match args.key_order {
            KeyOrder::Sequential => PhaseOrder::Sequential,
            KeyOrder::Random => PhaseOrder::Random,
        },
        value_size: args.value_size,
        compressibility: args.compressibility,
        sync: sync == SyncMode::Always,
        seed: args.seed,
    };
    let options = RunOptions {
        out: Output::None,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        threads: Some(args.threads),
        skip_probe: true,
        storage: Some(StorageEngine(ctx.backend.clone())),
        until: told,
        started,
        ..RunOptions::default()
    };
    let outcome = run_config(&preset::storage(&phase), "eddy bench storage", &options)?;
    let bytes_per_op = match requests {
        Requests::Scan => TERM_BYTES as u64 + KEY_BYTES,
        _ => args.value_size as u64,
    };
    PhaseResult::of_run(&outcome, bytes_per_op)
}

/// Times `ops` puts in the run's key order, with one index entry per key
/// when `indexed`.
pub fn write_phase(
    ctx: &Ctx<'_>,
    ops: u64,
    sync: SyncMode,
    indexed: bool,
) -> Result<PhaseResult, BenchError> {
    run_phase(ctx, Requests::Write { indexed }, Until::Ops(ops), sync)
}

/// Writes every key once (no sync per put), then syncs.
pub fn load(ctx: &Ctx<'_>, indexed: bool) -> Result<PhaseResult, BenchError> {
    let phase = write_phase(ctx, ctx.args.keys, SyncMode::None, indexed)?;
    ctx.backend.sync()?;
    Ok(phase)
}

/// Gets of loaded keys in the run's key order until `until`; a key not
/// found fails the phase.
pub fn read_phase(ctx: &Ctx<'_>, until: Until) -> Result<PhaseResult, BenchError> {
    let reads = Requests::Mixed { read_percent: 100 };
    run_phase(ctx, reads, until, SyncMode::None)
}

fn with_load(report: Report, load: &PhaseResult) -> Report {
    let secs = load.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    report.with("load_ops_per_s", load.ops as f64 / secs)
}

/// Adds what the engine says about itself: keys, files, and the memory its
/// key index takes per key where it reports that (bitcask's `keydir_bytes`).
pub fn with_status(report: Report, backend: &dyn Backend) -> Result<Report, BenchError> {
    let status = backend.status()?;
    let keys = status.keys.max(1) as f64;
    let report = report
        .with("status_keys", status.keys as f64)
        .with("status_files", status.files as f64);
    let keydir = status.extra.iter().find(|(name, _)| name == "keydir_bytes");
    Ok(match keydir.and_then(|(_, v)| v.parse::<f64>().ok()) {
        Some(bytes) => report.with("keydir_bytes_per_key", bytes / keys),
        None => report,
    })
}

/// `put`: puts into an empty store.
pub fn put(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    let phase = write_phase(ctx, ctx.args.ops, ctx.args.sync, false)?;
    Ok(Report::new(ctx.args, &phase))
}

/// `get`: load, then gets.
pub fn get(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    let load = load(ctx, false)?;
    let phase = read_phase(ctx, Until::Ops(ctx.args.ops))?;
    let report = with_load(Report::new(ctx.args, &phase), &load);
    with_status(report, ctx.backend.as_ref())
}

/// `mixed`: load, then gets and puts (`--read-percent` of them gets).
pub fn mixed(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    let load = load(ctx, false)?;
    let args = ctx.args;
    let requests = Requests::Mixed {
        read_percent: args.read_percent,
    };
    let phase = run_phase(ctx, requests, Until::Ops(args.ops), args.sync)?;
    Ok(with_load(Report::new(args, &phase), &load))
}

/// Scans the whole index once, checking it holds one entry per key.
fn check_index(ctx: &Ctx<'_>) -> Result<(), BenchError> {
    let field = INDEX_FIELD.as_bytes();
    let query = IndexQuery::range(BUCKET.as_bytes(), field, &[], &[0xff; 16]);
    let mut entries = 0u64;
    ctx.backend.index_range(&query, &mut |_, _| {
        entries += 1;
        FoldControl::Continue
    })?;
    match entries == ctx.args.keys {
        true => Ok(()),
        false => Err(BenchError::IndexCount {
            expected: ctx.args.keys,
            seen: entries,
        }),
    }
}

/// `index-scan`: load with one entry per key, check the index, then time
/// full scans of it. The headline ops are index entries; latencies are of
/// whole scans. An engine that keeps no index entries (bitcask and lsm: a
/// node keeps them in its vnodes' side stores) has nothing to scan.
pub fn index_scan(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    if !ctx.backend.capabilities().indexes {
        return Err(BenchError::Unsupported {
            workload: value_name(ctx.args.workload),
            backend: value_name(ctx.args.backend),
            why: "the engine keeps no index entries",
        });
    }
    let load = load(ctx, true)?;
    check_index(ctx)?;
    let scans = (ctx.args.ops / ctx.args.keys).max(1);
    let mut phase = run_phase(ctx, Requests::Scan, Until::Ops(scans), SyncMode::None)?;
    phase.ops *= ctx.args.keys;
    phase.bytes *= ctx.args.keys;
    let report = Report::new(ctx.args, &phase).with("scans", scans as f64);
    Ok(with_load(report, &load))
}
