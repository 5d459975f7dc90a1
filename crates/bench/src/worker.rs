//! One worker: a connection issuing requests until the deadline or a stop,
//! back to back (`max`) or paced (`rate`), recording each outcome.
//!
//! A failure that needs a new connection (timeout, refused, closed) makes
//! the worker pause [`RECONNECT_PAUSE`] and connect again, to the next
//! endpoint. Connect failures are counted against the operation that was
//! about to run. Latency is measured from after the connection is ready to
//! the answer. A get that finds nothing, or a multi-get missing one of its
//! keys, is a success (counted as `not_found`), or with
//! `request.not_found = "error"` the failure `not_found`. A multi-key
//! request one of whose keys failed is the failure `key_error`.
//!
//! Bound: a worker checks the deadline and the stop signal between
//! requests, and each request is bounded by the request timeout (an update
//! is two), so it ends at most two timeouts after either.

use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::{MultiGetVia, NotFound};
use crate::driver::{Conn, Failure, MultiObject, PutBody};
use crate::keygen::KeyGen;
use crate::ops::OpKind;
use crate::window::Recorder;
use crate::workload::{Plan, multi_get_job};

/// Pause after a failure that drops the connection, so a server that is
/// down is not hammered in a tight loop.
pub const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// A worker's own generators and buffers.
pub struct WorkerState {
    pub id: usize,
    pub rng: SmallRng,
    pub keys: KeyGen,
    key: Vec<u8>,
    value: Vec<u8>,
    ints: Vec<u64>,
}

impl WorkerState {
    /// Worker `id`'s state, seeded from the run's seed.
    pub fn new(plan: &Plan, id: usize) -> WorkerState {
        let seed = plan.seed ^ (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        WorkerState {
            id,
            rng: SmallRng::seed_from_u64(seed),
            keys: KeyGen::new(plan.keys.clone(), id),
            key: Vec::new(),
            value: Vec::new(),
            ints: Vec::new(),
        }
    }
}

/// Runs worker `id` until `deadline` or `stop`.
pub async fn run(
    id: usize,
    plan: Arc<Plan>,
    recorder: Arc<Recorder>,
    mut stop: watch::Receiver<bool>,
    deadline: Instant,
) {
    let mut state = WorkerState::new(&plan, id);
    let mut conn: Option<Conn> = None;
    let mut reconnects = 0;
    let pace = plan.pace_s.map(Duration::from_secs_f64);
    // Spread paced workers over one period so they do not fire together.
    let mut next_at = Instant::now()
        + pace.map_or(Duration::ZERO, |p| {
            p.mul_f64(id as f64 / plan.workers as f64)
        });
    loop {
        if *stop.borrow() || Instant::now() >= deadline {
            break;
        }
        if let Some(p) = pace {
            if !wait_until(next_at.min(deadline), &mut stop).await || Instant::now() >= deadline {
                break;
            }
            next_at = (next_at + p).max(Instant::now());
        }
        let op = plan.chooser.choose(&mut state.rng);
        if conn.is_none() {
            match Conn::connect(&plan.driver, plan.endpoint(id, reconnects)).await {
                Ok(c) => conn = Some(c),
                Err(f) => {
                    recorder.failure(op, f.label());
                    reconnects += 1;
                    wait_until((Instant::now() + RECONNECT_PAUSE).min(deadline), &mut stop).await;
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("connected above");
        let started = Instant::now();
        let outcome = execute(c, &plan, &mut state, op).await;
        let latency_us = started.elapsed().as_micros() as u64;
        match outcome {
            Ok(found_nothing) => record_answer(&recorder, &plan, op, latency_us, found_nothing),
            Err(f) => {
                recorder.failure(op, f.label());
                if f.reconnect {
                    conn = None;
                    reconnects += 1;
                    wait_until((Instant::now() + RECONNECT_PAUSE).min(deadline), &mut stop).await;
                }
            }
        }
    }
}

/// Label under which `request.not_found = "error"` counts a get that
/// found nothing.
pub const NOT_FOUND: &str = "not_found";

/// Records an answered request of `latency_us`: a success, unless it is a
/// get (or a multi-get missing a key) that found nothing and the run
/// counts those as errors.
pub fn record_answer(
    recorder: &Recorder,
    plan: &Plan,
    op: OpKind,
    latency_us: u64,
    found_nothing: bool,
) {
    let policy = plan.driver.request.not_found;
    let read = matches!(op, OpKind::Get | OpKind::MultiGet);
    if found_nothing && read && policy == NotFound::Error {
        recorder.failure(op, NOT_FOUND.to_string());
    } else {
        recorder.success(op, latency_us, found_nothing);
    }
}

/// Sleeps until `at`; false if the run was stopped first.
async fn wait_until(at: Instant, stop: &mut watch::Receiver<bool>) -> bool {
    let slept = tokio::select! {
        () = tokio::time::sleep_until(at) => true,
        _ = stop.wait_for(|s| *s) => false,
    };
    slept && !*stop.borrow()
}

/// Runs one `op`; `Ok(true)` when a read found nothing.
pub async fn execute(
    conn: &mut Conn,
    plan: &Plan,
    s: &mut WorkerState,
    op: OpKind,
) -> Result<bool, Failure> {
    match op {
        OpKind::Get => {
            let n = s.keys.next_read(&mut s.rng);
            plan.keys.encode(n, &mut s.key);
            conn.get(&s.key).await.map(|f| !f.found)
        }
        OpKind::Put => {
            let n = s.keys.next_write(&mut s.rng);
            put_number(conn, plan, s, n, None).await.map(|()| false)
        }
        OpKind::Update => {
            let n = s.keys.next_read(&mut s.rng);
            plan.keys.encode(n, &mut s.key);
            let fetched = conn.get(&s.key).await?;
            put_number(conn, plan, s, n, fetched.vclock.as_deref()).await?;
            Ok(!fetched.found)
        }
        OpKind::Delete => {
            let n = s.keys.next_read(&mut s.rng);
            plan.keys.encode(n, &mut s.key);
            conn.delete(&s.key).await.map(|()| false)
        }
        OpKind::IndexQuery => {
            let index = plan
                .index
                .as_ref()
                .expect("validated: index_query has [index]");
            let lookup = index.lookup(&mut s.rng);
            conn.index_query(&index.field, &lookup).await.map(|_| false)
        }
        OpKind::MultiGet => {
            let keys: Vec<_> = (0..plan.multi_get_keys)
                .map(|_| plan.keys.key(s.keys.next_read(&mut s.rng)))
                .collect();
            match plan.multi_get_via {
                MultiGetVia::Native => conn.multi_get(&keys).await.map(|missing| missing > 0),
                MultiGetVia::Mapreduce => conn
                    .mapreduce(&multi_get_job(&plan.driver.target, &keys))
                    .await
                    .map(|()| false),
            }
        }
        OpKind::MultiPut => {
            let objects = multi_objects(plan, s);
            conn.multi_put(&objects).await.map(|()| false)
        }
        OpKind::Mapreduce => conn.mapreduce(&plan.mapreduce_job).await.map(|()| false),
    }
}

/// A multi-put's objects: fresh values (with their index entries) under
/// keys drawn for writing.
fn multi_objects<'p>(plan: &'p Plan, s: &mut WorkerState) -> Vec<MultiObject<'p>> {
    (0..plan.multi_put_keys)
        .map(|_| {
            let key = plan.keys.key(s.keys.next_write(&mut s.rng));
            plan.values
                .generate(&mut s.rng, &key, &mut s.value, &mut s.ints);
            let index = plan.index.as_ref().map(|i| i.entry(&mut s.rng, &s.ints));
            MultiObject {
                key,
                value: s.value.clone(),
                index,
            }
        })
        .collect()
}

/// Puts a fresh value (with its index entry) under key number `n`.
pub async fn put_number(
    conn: &mut Conn,
    plan: &Plan,
    s: &mut WorkerState,
    n: u64,
    vclock: Option<&[u8]>,
) -> Result<(), Failure> {
    plan.keys.encode(n, &mut s.key);
    plan.values
        .generate(&mut s.rng, &s.key, &mut s.value, &mut s.ints);
    let entry = plan.index.as_ref().map(|i| i.entry(&mut s.rng, &s.ints));
    let body = PutBody {
        value: &s.value,
        index: entry.as_ref(),
        vclock,
    };
    conn.put(&s.key, body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(not_found: &str) -> Plan {
        let text = format!(
            r#"
            duration = "1s"
            [driver]
            protocol = "pb"
            endpoints = ["127.0.0.1:8087"]
            bucket = "b"
            [request]
            not_found = "{not_found}"
            [operations]
            get = 1
            update = 1
            [keys]
            generator = "uniform_int"
            max = 10
            [values]
            generator = "fixed_bin"
            size = 10
            "#
        );
        Plan::new(&crate::config::parse_valid(&text).unwrap())
    }

    /// Answers a found get, a missed get and a missed update's read.
    fn answer_three(plan: &Plan) -> crate::window::Window {
        let recorder = Recorder::new();
        record_answer(&recorder, plan, OpKind::Get, 10, false);
        record_answer(&recorder, plan, OpKind::Get, 20, true);
        record_answer(&recorder, plan, OpKind::Update, 30, true);
        recorder.take()
    }

    #[test]
    fn a_missed_get_is_a_success_by_default() {
        let w = answer_three(&plan("success"));
        let get = &w.ops[&OpKind::Get];
        assert_eq!((get.latency_us.len(), get.not_found), (2, 1));
        assert_eq!(get.error_count(), 0);
    }

    #[test]
    fn not_found_error_counts_a_missed_get_as_a_failure() {
        let w = answer_three(&plan("error"));
        let get = &w.ops[&OpKind::Get];
        assert_eq!((get.latency_us.len(), get.not_found), (1, 0));
        assert_eq!(get.errors.get(NOT_FOUND), Some(&1));
        // An update whose read missed still wrote: it stays a success.
        let update = &w.ops[&OpKind::Update];
        assert_eq!((update.latency_us.len(), update.not_found), (1, 1));
        assert_eq!(update.error_count(), 0);
    }
}
