//! The open workload: how long a persistent engine takes to reopen with
//! `--keys` keys, with its hint files and (where it has them) without.
//!
//! Steps: load every key, write any pending hint files, close, time a reopen,
//! check `--ops` reads (at most one per key) find their keys; then, for
//! engines with hint files, close again, delete the hint files and time a
//! reopen that must scan the data files. The headline phase is the first
//! reopen: one "op" per key it indexed.

use std::path::Path;
use std::time::{Duration, Instant};

use super::backends::{Engine, EngineOptions, open_backend};
use super::error::BenchError;
use super::report::{PhaseResult, Report, new_histogram};
use super::workload::{Ctx, Until, load, read_phase, with_status};
use crate::cli::StorageArgs;

/// Runs the open workload in `dir`.
pub fn run(args: &StorageArgs, dir: &Path, opts: &EngineOptions) -> Result<Report, BenchError> {
    let engine = open_backend(args.backend, dir, opts)?;
    if !engine.backend.capabilities().persistent {
        return Err(unsupported(
            args,
            "the backend keeps nothing across a reopen",
        ));
    }
    let load = load(&ctx(args, &engine), false)?;
    let hints = engine.hint_files.clone();
    if let Some(h) = &hints {
        (h.write_pending)()?;
    }
    close(engine)?;

    let (engine, with_hints) = timed_open(args, dir, opts)?;
    let reads = read_phase(&ctx(args, &engine), Until::Ops(args.ops.min(args.keys)))?;
    let opened = Report::new(args, &open_phase(args.keys, with_hints));
    let report = with_status(opened, engine.backend.as_ref())?;
    close(engine)?;
    let report = report
        .with("open_ms", ms(with_hints))
        .with("load_ops_per_s", per_s(load.ops, load.elapsed))
        .with(
            "reads_after_open_ops_per_s",
            per_s(reads.ops, reads.elapsed),
        );
    let Some(hints) = hints else {
        return Ok(report);
    };
    let removed = (hints.remove)(dir)?;
    let (engine, without_hints) = timed_open(args, dir, opts)?;
    close(engine)?;
    Ok(report
        .with("hint_files", removed as f64)
        .with("open_without_hints_ms", ms(without_hints)))
}

fn ctx<'a>(args: &'a StorageArgs, engine: &'a Engine) -> Ctx<'a> {
    Ctx {
        args,
        backend: &engine.backend,
    }
}

fn unsupported(args: &StorageArgs, why: &'static str) -> BenchError {
    BenchError::Unsupported {
        workload: "open".into(),
        backend: super::report::value_name(args.backend),
        why,
    }
}

fn close(engine: Engine) -> Result<(), BenchError> {
    engine.backend.close()?;
    Ok(())
}

fn timed_open(
    args: &StorageArgs,
    dir: &Path,
    opts: &EngineOptions,
) -> Result<(Engine, Duration), BenchError> {
    let start = Instant::now();
    let engine = open_backend(args.backend, dir, opts)?;
    Ok((engine, start.elapsed()))
}

/// The reopen as a phase: `keys` ops taking `elapsed`, one latency sample.
fn open_phase(keys: u64, elapsed: Duration) -> PhaseResult {
    let mut latency_ns = new_histogram();
    latency_ns.saturating_record((elapsed.as_nanos() as u64).max(1));
    PhaseResult {
        ops: keys,
        bytes: 0,
        elapsed,
        latency_ns,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn per_s(ops: u64, elapsed: Duration) -> f64 {
    ops as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
}
