//! The merge workload: how long a forced compaction of half-dead data takes,
//! and what it does to read latency meanwhile.
//!
//! Steps: load every key, overwrite every key once (so half of all bytes on
//! disk are dead), time `--ops` reads as the baseline, then start the merge on
//! its own thread once `--threads` readers run, and let them issue gets until
//! it ends.
//! The headline figures are those of the reads during the merge; the merge's
//! own figures and the baseline's are under `extra`.

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::backends::{MergeOutcome, Merger};
use super::error::BenchError;
use super::report::{Latency, PhaseResult, Report};
use super::workload::{Ctx, Until, load, read_phase, write_phase};
use crate::cli::SyncMode;

/// Runs the merge workload on an engine that has a merger.
pub fn run(ctx: &Ctx<'_>, merger: &dyn Merger) -> Result<Report, BenchError> {
    load(ctx, false)?;
    write_phase(ctx, ctx.args.keys, SyncMode::None, false)?;
    ctx.backend.sync()?;
    let status = ctx.backend.status()?;
    let before = read_phase(ctx, Until::Ops(ctx.args.ops))?;
    let (outcome, merge_time, during) = merge_while_reading(ctx, merger)?;
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let secs = merge_time.as_secs_f64().max(f64::MIN_POSITIVE);
    let base = Latency::of(&before.latency_ns);
    // Engines that do not count what they read are charged everything stored.
    let input = outcome
        .input_bytes
        .unwrap_or(status.live_bytes + status.dead_bytes);
    let after = ctx.backend.status()?;
    Ok(Report::new(ctx.args, &during)
        .with("merge_s", merge_time.as_secs_f64())
        .with("merge_input_mb", mb(input))
        .with(
            "merge_output_mb",
            mb(outcome.output_bytes.unwrap_or(after.live_bytes)),
        )
        .with("merge_mb_per_s", mb(input) / secs)
        .with("dead_mb_after", mb(after.dead_bytes))
        .with("live_mb_before", mb(status.live_bytes))
        .with("dead_mb_before", mb(status.dead_bytes))
        .with("p50_us_before_merge", base.p50_us)
        .with("p99_us_before_merge", base.p99_us)
        .with("ops_per_s_before_merge", ops_per_s(&before)))
}

fn ops_per_s(phase: &PhaseResult) -> f64 {
    phase.ops as f64 / phase.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
}

/// Runs the merge on a thread and reads until it ends.
fn merge_while_reading(
    ctx: &Ctx<'_>,
    merger: &dyn Merger,
) -> Result<(MergeOutcome, Duration, PhaseResult), BenchError> {
    let done = Arc::new(Notify::new());
    let (started, reading) = mpsc::channel();
    let merged_done = done.clone();
    let (merged, during) = std::thread::scope(|s| {
        let merging = s.spawn(move || {
            // Merge once the readers run (or once their phase has ended,
            // failed, before they did).
            let _ = reading.recv();
            let start = Instant::now();
            let outcome = merger.merge_now();
            // Kept as a permit if the collector is not waiting yet.
            merged_done.notify_one();
            outcome.map(|o| (o, start.elapsed()))
        });
        let until = Until::Told { done, started };
        let during = read_phase(ctx, until);
        // Even when the readers fail, the merge is waited for: it holds the engine.
        (merging.join(), during)
    });
    let (outcome, elapsed) = merged.map_err(|_| BenchError::ThreadPanicked)??;
    Ok((outcome, elapsed, during?))
}
