//! The collector: while workers run, it closes a window at every report
//! interval (one CSV row per operation, when the run writes results),
//! updates the progress bar, and decides when the run stops early.
//!
//! Ending rules: workers stop by themselves at the deadline, or before it
//! when their keys are used up (`keys.once`) or their share of `ops` is
//! done (the run's ending says so when every worker did). The collector
//! sends the stop signal when no request has succeeded for
//! `give_up_after` (every worker is failing), on Ctrl-C, or when the
//! caller says so (`Timing::until`).
//! As a last bound it aborts any worker still running at the hard stop
//! (deadline, or the stop signal, plus [`DRAIN_TIMEOUTS`] request
//! timeouts), so a run never hangs.
//!
//! Rows: interval rows are written at each boundary strictly before the
//! deadline; the last row, written when the workers are done, covers the
//! rest of the measured phase and the requests that finished after it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::BenchError;
use crate::ops::OpKind;
use crate::progress::Progress;
use crate::report::ResultsDir;
use crate::report::csv::Row;
use crate::report::summary::Ending;
use crate::window::{OpWindow, Recorder};
use crate::worker::WorkerEnd;

/// Request timeouts a worker may need to finish after the stop (an update
/// is a get and a put, plus a connect).
pub const DRAIN_TIMEOUTS: u32 = 3;
/// How often progress and the give-up rule are checked.
const TICK: Duration = Duration::from_millis(200);

/// The timing of a measured phase.
pub struct Timing {
    pub start: Instant,
    pub deadline: Instant,
    pub interval: Duration,
    pub give_up_after: Duration,
    pub request_timeout: Duration,
    /// Ends the run when notified (a caller measuring while something
    /// else happens: `eddy bench storage --workload merge`).
    pub until: Option<Arc<Notify>>,
}

/// What the collector saw.
pub struct Collected {
    pub totals: BTreeMap<OpKind, OpWindow>,
    pub elapsed_s: f64,
    pub ending: Ending,
    pub workers_aborted: usize,
}

/// Runs until every worker has finished (or been aborted); rows go to
/// `results` when there is a results directory.
pub async fn collect(
    recorder: Arc<Recorder>,
    mut results: Option<&mut ResultsDir>,
    ops: &[OpKind],
    workers: &mut JoinSet<WorkerEnd>,
    stop: watch::Sender<bool>,
    timing: &Timing,
) -> Result<Collected, BenchError> {
    let mut totals: BTreeMap<OpKind, OpWindow> =
        ops.iter().map(|&op| (op, OpWindow::default())).collect();
    let mut progress = Progress::run(timing.deadline - timing.start);
    let mut boundary = timing.start;
    let mut ending = None;
    let mut hard_stop = timing.deadline + timing.request_timeout * DRAIN_TIMEOUTS;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut tick = tokio::time::interval(TICK);
    let mut aborted = 0;
    let mut used_up = 0;
    let mut ops_done = 0;
    let mut finished = 0;
    let until = timing.until.clone().unwrap_or_default();
    loop {
        let next = boundary + timing.interval;
        tokio::select! {
            joined = workers.join_next() => match joined {
                None => break,
                Some(done) => {
                    finished += 1;
                    let end = done.unwrap_or(WorkerEnd::Stopped);
                    used_up += usize::from(end == WorkerEnd::KeysUsedUp);
                    ops_done += usize::from(end == WorkerEnd::OpsDone);
                }
            },
            () = until.notified(), if ending.is_none() && timing.until.is_some() => {
                ending = Some(Ending::Told);
                let _ = stop.send(true);
                hard_stop = Instant::now() + timing.request_timeout * DRAIN_TIMEOUTS;
            }
            () = tokio::time::sleep_until(next), if next < timing.deadline => {
                let rows = results.as_deref_mut();
                flush(&recorder, rows, ops, &mut totals, next - timing.start, timing.interval)?;
                boundary = next;
            }
            _ = &mut ctrl_c, if ending.is_none() => {
                ending = Some(Ending::Interrupted);
                let _ = stop.send(true);
                hard_stop = Instant::now() + timing.request_timeout * DRAIN_TIMEOUTS;
            }
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        progress.update(now.min(timing.deadline) - timing.start, recorder.totals());
        let silent = now - recorder.last_success();
        if ending.is_none() && silent >= timing.give_up_after {
            let why = format!("no request succeeded for {:.1} s", silent.as_secs_f64());
            ending = Some(Ending::GaveUp(why));
            let _ = stop.send(true);
            hard_stop = now + timing.request_timeout * DRAIN_TIMEOUTS;
        }
        if now >= hard_stop {
            aborted = workers.len();
            workers.abort_all();
            while workers.join_next().await.is_some() {}
            break;
        }
    }
    progress.finish();
    let end = Instant::now().min(timing.deadline);
    let window = end
        .saturating_duration_since(boundary)
        .max(Duration::from_millis(1));
    flush(
        &recorder,
        results,
        ops,
        &mut totals,
        end - timing.start,
        window,
    )?;
    let all_used_up = used_up > 0 && used_up == finished && aborted == 0;
    let all_done = ops_done > 0 && ops_done + used_up == finished && aborted == 0;
    let ending = match ending {
        Some(e) => e,
        None if all_used_up => Ending::KeysUsedUp,
        None if all_done => Ending::OpsDone,
        None => Ending::Completed,
    };
    Ok(Collected {
        totals,
        elapsed_s: (end - timing.start).as_secs_f64(),
        ending,
        workers_aborted: aborted,
    })
}

/// Closes the current window: one row per operation, added to `totals`.
fn flush(
    recorder: &Recorder,
    mut results: Option<&mut ResultsDir>,
    ops: &[OpKind],
    totals: &mut BTreeMap<OpKind, OpWindow>,
    elapsed: Duration,
    window: Duration,
) -> Result<(), BenchError> {
    let taken = recorder.take();
    let empty = OpWindow::default();
    for &op in ops {
        let w = taken.ops.get(&op).unwrap_or(&empty);
        if let Some(r) = results.as_deref_mut() {
            r.append(op, Row::new(elapsed.as_secs_f64(), window.as_secs_f64(), w))?;
        }
        totals.entry(op).or_default().merge(w);
    }
    Ok(())
}
