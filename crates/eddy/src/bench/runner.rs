//! Running one timed phase on several threads.
//!
//! A phase is a number of operations (or "until told to stop") split among
//! client threads. Each thread times each of its operations into its own
//! histogram; the histograms are merged when the phase ends. The phase's
//! wall clock runs from the first thread's first op to the last thread's
//! last op (threads start together at a barrier), so neither thread
//! start-up nor a late wake-up of the coordinating thread is counted. The
//! first failing operation stops every thread.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::error::BenchError;
use super::report::{PhaseResult, new_histogram};

/// How long a phase runs.
#[derive(Clone, Copy, Debug)]
pub enum Limit<'a> {
    /// Exactly this many operations, split evenly among the threads.
    Ops(u64),
    /// Until the flag is set (each thread then finishes its current op).
    Until(&'a AtomicBool),
}

/// The ops `[start, end)` thread `t` of `threads` runs out of `ops`.
pub fn share(ops: u64, threads: usize, t: usize) -> (u64, u64) {
    let (ops, n, t) = (ops as u128, threads as u128, t as u128);
    ((ops * t / n) as u64, (ops * (t + 1) / n) as u64)
}

/// Runs a phase: `make_op(t)` builds thread `t`'s operation, which is called
/// with each op index and returns the value bytes it moved.
pub fn run_phase<M, O>(
    threads: usize,
    limit: Limit<'_>,
    make_op: M,
) -> Result<PhaseResult, BenchError>
where
    M: Fn(usize) -> O + Sync,
    O: FnMut(u64) -> Result<u64, BenchError>,
{
    let ready = Barrier::new(threads + 1);
    let failed = AtomicBool::new(false);
    let bytes = AtomicU64::new(0);
    let outcomes = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (ready, failed, bytes, make_op) = (&ready, &failed, &bytes, &make_op);
                s.spawn(move || {
                    let op = make_op(t);
                    ready.wait();
                    run_thread(op, limit, share(ops_of(limit), threads, t), failed, bytes)
                })
            })
            .collect();
        ready.wait();
        handles.into_iter().map(|h| h.join()).collect()
    });
    merge_outcomes(outcomes, bytes.into_inner())
}

fn ops_of(limit: Limit<'_>) -> u64 {
    match limit {
        Limit::Ops(n) => n,
        Limit::Until(_) => u64::MAX,
    }
}

/// One thread's work: ops done, their latencies, and when it began and ended.
struct ThreadWork {
    ops: u64,
    latency_ns: Histogram<u64>,
    began: Instant,
    ended: Instant,
}

type ThreadOutcome = Result<ThreadWork, BenchError>;

fn run_thread<O>(
    mut op: O,
    limit: Limit<'_>,
    range: (u64, u64),
    failed: &AtomicBool,
    bytes: &AtomicU64,
) -> ThreadOutcome
where
    O: FnMut(u64) -> Result<u64, BenchError>,
{
    let mut hist = new_histogram();
    let mut moved = 0u64;
    let mut done = 0u64;
    let began = Instant::now();
    for i in range.0..range.1 {
        if failed.load(Ordering::Relaxed) || stop_requested(limit) {
            break;
        }
        let start = Instant::now();
        let result = op(i);
        let ns = start.elapsed().as_nanos() as u64;
        match result {
            Ok(b) => moved += b,
            Err(e) => {
                failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        hist.saturating_record(ns.max(1));
        done += 1;
    }
    bytes.fetch_add(moved, Ordering::Relaxed);
    Ok(ThreadWork {
        ops: done,
        latency_ns: hist,
        began,
        ended: Instant::now(),
    })
}

fn stop_requested(limit: Limit<'_>) -> bool {
    matches!(limit, Limit::Until(flag) if flag.load(Ordering::Relaxed))
}

fn merge_outcomes(
    outcomes: Vec<std::thread::Result<ThreadOutcome>>,
    bytes: u64,
) -> Result<PhaseResult, BenchError> {
    let mut latency_ns = new_histogram();
    let mut ops = 0;
    let mut span: Option<(Instant, Instant)> = None;
    for outcome in outcomes {
        let work = outcome.map_err(|_| BenchError::ThreadPanicked)??;
        ops += work.ops;
        latency_ns
            .add(&work.latency_ns)
            .expect("histograms share bounds");
        span = Some(match span {
            Some((b, e)) => (b.min(work.began), e.max(work.ended)),
            None => (work.began, work.ended),
        });
    }
    let elapsed = span.map_or(Duration::ZERO, |(b, e)| e - b);
    Ok(PhaseResult {
        ops,
        bytes,
        elapsed,
        latency_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_all_ops_without_overlap() {
        for (ops, threads) in [(10u64, 3usize), (1, 4), (1000, 64), (0, 2)] {
            let mut next = 0;
            for t in 0..threads {
                let (a, b) = share(ops, threads, t);
                assert_eq!(a, next);
                next = b;
            }
            assert_eq!(next, ops);
        }
    }

    #[test]
    fn a_phase_runs_every_op_once() {
        let seen = AtomicU64::new(0);
        let r = run_phase(3, Limit::Ops(100), |_| {
            |i: u64| {
                seen.fetch_add(i, Ordering::Relaxed);
                Ok(2)
            }
        })
        .unwrap();
        assert_eq!(r.ops, 100);
        assert_eq!(r.bytes, 200);
        assert_eq!(r.latency_ns.len(), 100);
        assert_eq!(seen.into_inner(), (0..100).sum::<u64>());
    }

    #[test]
    fn a_failing_op_fails_the_phase() {
        let r = run_phase(2, Limit::Ops(10), |_| {
            |i: u64| match i {
                7 => Err(BenchError::WrongRead {
                    key: i,
                    why: "test",
                }),
                _ => Ok(0),
            }
        });
        assert!(matches!(r, Err(BenchError::WrongRead { key: 7, .. })));
    }

    #[test]
    fn an_until_phase_stops_when_told() {
        let stop = AtomicBool::new(false);
        let r = run_phase(2, Limit::Until(&stop), |_| {
            |i: u64| {
                if i == 50 {
                    stop.store(true, Ordering::Relaxed);
                }
                Ok(1)
            }
        })
        .unwrap();
        assert!(r.ops >= 51);
    }
}
