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
//! request one of whose keys failed is the failure `key_error`. With
//! `keys.once`, a worker stops when its keys are used up (the last
//! multi-key request of a worker may name fewer keys than its batch size).
//! With `ops`, a worker stops after its share of the requests.
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

use rand::Rng;

use crate::config::{MultiGetVia, NotFound};
use crate::driver::{Conn, DtChange, Failure, IndexEntry, MultiObject, PutBody};
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
        Self::with_keys(plan, id, KeyGen::new(plan.keys.clone(), id))
    }

    /// The state of the probe before the run: worker 0's, except that with
    /// `keys.once` it draws from a detached copy of the key space, so the
    /// run still hands out every key (the probe's key is written twice).
    pub fn probe(plan: &Plan) -> WorkerState {
        let keys = match plan.keys.once() {
            true => Arc::new(plan.keys.detached()),
            false => plan.keys.clone(),
        };
        Self::with_keys(plan, 0, KeyGen::new(keys, 0))
    }

    fn with_keys(plan: &Plan, id: usize, keys: KeyGen) -> WorkerState {
        let seed = plan.seed ^ (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        WorkerState {
            id,
            rng: SmallRng::seed_from_u64(seed),
            keys,
            key: Vec::new(),
            value: Vec::new(),
            ints: Vec::new(),
        }
    }
}

/// Why a worker stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerEnd {
    /// The deadline passed or the run was stopped.
    Stopped,
    /// Its keys are used up (`keys.once`).
    KeysUsedUp,
    /// It issued its share of `ops`.
    OpsDone,
}

/// Runs worker `id` until `deadline` or `stop`, until its keys are used
/// up (`keys.once`), or until it issued its share of `ops`.
pub async fn run(
    id: usize,
    plan: Arc<Plan>,
    recorder: Arc<Recorder>,
    mut stop: watch::Receiver<bool>,
    deadline: Instant,
) -> WorkerEnd {
    let mut state = WorkerState::new(&plan, id);
    let mut ops_left = plan.ops_of_worker(id);
    let mut conn: Option<Conn> = None;
    let mut reconnects = 0;
    let pace = plan.pace_s.map(Duration::from_secs_f64);
    // Spread paced workers over one period so they do not fire together.
    let mut next_at = Instant::now()
        + pace.map_or(Duration::ZERO, |p| {
            p.mul_f64(id as f64 / plan.workers as f64)
        });
    // One clock read per request: its end is the next one's start and the
    // deadline check's "now" (an engine answers in well under a µs).
    let mut now = Instant::now();
    loop {
        if stopped(&stop) || now >= deadline {
            return WorkerEnd::Stopped;
        }
        if ops_left == Some(0) {
            return WorkerEnd::OpsDone;
        }
        if let Some(p) = pace {
            if !wait_until(next_at.min(deadline), &mut stop).await {
                return WorkerEnd::Stopped;
            }
            now = Instant::now();
            if now >= deadline {
                return WorkerEnd::Stopped;
            }
            next_at = (next_at + p).max(now);
        }
        let op = plan.chooser.choose(&mut state.rng);
        ops_left = ops_left.map(|n| n - 1);
        if conn.is_none() {
            match Conn::connect(&plan.driver, plan.endpoint(id, reconnects)).await {
                Ok(c) => conn = Some(c),
                Err(f) => {
                    recorder.failure(id, op, f.label());
                    reconnects += 1;
                    if !pause(deadline, &mut stop).await {
                        return WorkerEnd::Stopped;
                    }
                    now = Instant::now();
                    continue;
                }
            }
            now = Instant::now();
        }
        let c = conn.as_mut().expect("connected above");
        let started = now;
        let outcome = execute(c, &plan, &mut state, op).await;
        now = Instant::now();
        match outcome {
            Ok(Outcome::Answered { found_nothing }) => {
                let times = (started, now);
                record_answer(&recorder, &plan, id, op, times, found_nothing);
            }
            Ok(Outcome::KeysUsedUp) => return WorkerEnd::KeysUsedUp,
            Err(f) => {
                recorder.failure(id, op, f.label());
                if f.reconnect {
                    conn = None;
                    reconnects += 1;
                    if !pause(deadline, &mut stop).await {
                        return WorkerEnd::Stopped;
                    }
                    now = Instant::now();
                }
            }
        }
    }
}

/// Whether the run was stopped. The only value ever sent is `true`, so a
/// change (or the sender gone) means stop; an atomic load, no lock, as
/// workers check it before every request. ([`wait_until`] marks the
/// change seen: its callers stop when it says so.)
fn stopped(stop: &watch::Receiver<bool>) -> bool {
    !matches!(stop.has_changed(), Ok(false))
}

/// The pause after a failure that lost the connection; false if the run
/// was stopped meanwhile.
async fn pause(deadline: Instant, stop: &mut watch::Receiver<bool>) -> bool {
    wait_until((Instant::now() + RECONNECT_PAUSE).min(deadline), stop).await
}

/// Label under which `request.not_found = "error"` counts a get that
/// found nothing.
pub const NOT_FOUND: &str = "not_found";

/// Records worker `worker`'s answered request, sent and answered at
/// `times`: a success, unless it is a get (or a multi-get missing a key)
/// that found nothing and the run counts those as errors.
pub fn record_answer(
    recorder: &Recorder,
    plan: &Plan,
    worker: usize,
    op: OpKind,
    times: (Instant, Instant),
    found_nothing: bool,
) {
    let policy = plan.driver.request.not_found;
    let read = matches!(op, OpKind::Get | OpKind::MultiGet);
    if found_nothing && read && policy == NotFound::Error {
        recorder.failure(worker, op, NOT_FOUND.to_string());
    } else {
        recorder.success(worker, op, times, found_nothing);
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

/// What one operation came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered; `found_nothing` when a read found nothing.
    Answered { found_nothing: bool },
    /// Nothing was sent: the worker's keys are used up (`keys.once`).
    KeysUsedUp,
}

fn answered(found_nothing: bool) -> Outcome {
    Outcome::Answered { found_nothing }
}

/// Runs one `op`.
pub async fn execute(
    conn: &mut Conn,
    plan: &Plan,
    s: &mut WorkerState,
    op: OpKind,
) -> Result<Outcome, Failure> {
    let used_up = Ok(Outcome::KeysUsedUp);
    match op {
        OpKind::Get => {
            let Some(n) = s.keys.next_read(&mut s.rng) else {
                return used_up;
            };
            plan.keys.encode(n, &mut s.key);
            conn.get(&s.key).await.map(|f| answered(!f.found))
        }
        OpKind::Put => {
            let Some(n) = s.keys.next_write(&mut s.rng) else {
                return used_up;
            };
            put_number(conn, plan, s, n, None)
                .await
                .map(|()| answered(false))
        }
        OpKind::Update => {
            let Some(n) = s.keys.next_read(&mut s.rng) else {
                return used_up;
            };
            plan.keys.encode(n, &mut s.key);
            let fetched = conn.get(&s.key).await?;
            put_number(conn, plan, s, n, fetched.vclock.as_deref()).await?;
            Ok(answered(!fetched.found))
        }
        OpKind::Delete => {
            let Some(n) = s.keys.next_read(&mut s.rng) else {
                return used_up;
            };
            plan.keys.encode(n, &mut s.key);
            conn.delete(&s.key).await.map(|()| answered(false))
        }
        OpKind::IndexQuery => {
            let index = plan
                .index
                .as_ref()
                .expect("validated: index_query has [index]");
            let lookup = index.lookup(&mut s.rng);
            conn.index_query(&index.field, &lookup)
                .await
                .map(|_| answered(false))
        }
        OpKind::MultiGet => {
            let keys = multi_keys(plan, s);
            if keys.is_empty() {
                return used_up;
            }
            match plan.multi_get_via {
                MultiGetVia::Native => conn
                    .multi_get(&keys)
                    .await
                    .map(|missing| answered(missing > 0)),
                MultiGetVia::Mapreduce => conn
                    .mapreduce(&multi_get_job(&plan.driver.target, &keys))
                    .await
                    .map(|()| answered(false)),
            }
        }
        OpKind::MultiPut => {
            let objects = multi_objects(plan, s);
            if objects.is_empty() {
                return used_up;
            }
            conn.multi_put(&objects).await.map(|()| answered(false))
        }
        OpKind::Mapreduce => conn
            .mapreduce(&plan.mapreduce_job)
            .await
            .map(|()| answered(false)),
        OpKind::CounterIncr | OpKind::SetAdd => {
            let Some(n) = s.keys.next_write(&mut s.rng) else {
                return used_up;
            };
            plan.keys.encode(n, &mut s.key);
            let update = match op {
                OpKind::CounterIncr => DtChange::Increment(1),
                _ => DtChange::Add(format!("m{:016x}", s.rng.random::<u64>()).into_bytes()),
            };
            conn.dt_update(&s.key, &update)
                .await
                .map(|()| answered(false))
        }
    }
}

/// A multi-get's keys, drawn as gets draw them: the batch size, or fewer
/// when the keys run out.
fn multi_keys(plan: &Plan, s: &mut WorkerState) -> Vec<Vec<u8>> {
    (0..plan.multi_get_keys)
        .map_while(|_| s.keys.next_read(&mut s.rng))
        .map(|n| plan.keys.key(n))
        .collect()
}

/// A multi-put's objects: fresh values (with their index entries) under
/// keys drawn for writing; fewer than the batch size when the keys run
/// out.
fn multi_objects<'p>(plan: &'p Plan, s: &mut WorkerState) -> Vec<MultiObject<'p>> {
    let mut objects = Vec::with_capacity(plan.multi_put_keys);
    for _ in 0..plan.multi_put_keys {
        let Some(n) = s.keys.next_write(&mut s.rng) else {
            break;
        };
        let key = plan.keys.key(n);
        plan.values
            .generate(&mut s.rng, &key, &mut s.value, &mut s.ints);
        let index = index_entries(plan, &mut s.rng, &s.ints);
        objects.push(MultiObject {
            key,
            value: s.value.clone(),
            index,
        });
    }
    objects
}

/// The index entries of the value just generated, whose JSON integer
/// fields are `ints` (none without `[index]`).
fn index_entries<'p>(plan: &'p Plan, rng: &mut SmallRng, ints: &[u64]) -> Vec<IndexEntry<'p>> {
    match &plan.index {
        Some(i) => i.entries(rng, ints),
        None => Vec::new(),
    }
}

/// Puts a fresh value (with its index entries) under key number `n`.
pub async fn put_number(
    conn: &mut Conn,
    plan: &Plan,
    s: &mut WorkerState,
    n: u64,
    vclock: Option<&[u8]>,
) -> Result<(), Failure> {
    plan.keys.encode(n, &mut s.key);
    // Borrowed from the value pool: a binary value is not copied.
    let value = plan
        .values
        .value(&mut s.rng, &s.key, &mut s.value, &mut s.ints);
    let index = index_entries(plan, &mut s.rng, &s.ints);
    let body = PutBody {
        value,
        index: &index,
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
        let recorder = Recorder::new(1);
        let t0 = Instant::now();
        let us = |n| (t0, t0 + Duration::from_micros(n));
        record_answer(&recorder, plan, 0, OpKind::Get, us(10), false);
        record_answer(&recorder, plan, 0, OpKind::Get, us(20), true);
        record_answer(&recorder, plan, 0, OpKind::Update, us(30), true);
        recorder.take()
    }

    #[test]
    fn a_missed_get_is_a_success_by_default() {
        let w = answer_three(&plan("success"));
        let get = &w.ops[&OpKind::Get];
        assert_eq!((get.latency_ns.len(), get.not_found), (2, 1));
        assert_eq!(get.error_count(), 0);
    }

    #[test]
    fn not_found_error_counts_a_missed_get_as_a_failure() {
        let w = answer_three(&plan("error"));
        let get = &w.ops[&OpKind::Get];
        assert_eq!((get.latency_ns.len(), get.not_found), (1, 0));
        assert_eq!(get.errors.get(NOT_FOUND), Some(&1));
        // An update whose read missed still wrote: it stays a success.
        let update = &w.ops[&OpKind::Update];
        assert_eq!((update.latency_ns.len(), update.not_found), (1, 1));
        assert_eq!(update.error_count(), 0);
    }
}
