//! Client load on threads for the cluster tests: each worker writes new
//! keys with w = 2 and reads back one it wrote before with r = 2, against
//! the nodes currently named as targets, round robin. A target that
//! refuses a connection is dropped while others are left.
//!
//! Every operation is counted under the phase the test named last
//! ([`Load::phase`]), and every failure under (phase, operation, error
//! text), so a test can report the errors a membership change caused and
//! assert that none remain once the cluster has settled. A write is
//! recorded as acknowledged only when the node answered 204; a read fails
//! when it errs, finds nothing, or finds another value.
//!
//! Invariant: keys are unique per worker and step (`w{worker}-{step}`),
//! and each is written once, so the acknowledged value of a key is the
//! only value it may ever hold.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use super::kv::{REFUSED, get_r2, put_w2};

/// The bucket the load writes to.
pub const BUCKET: &str = "load";

/// What the workers did, merged.
#[derive(Default, Debug)]
pub struct Report {
    /// Every acknowledged write: key → value.
    pub acked: BTreeMap<String, String>,
    /// Every key a write was attempted on.
    pub attempted: Vec<String>,
    /// Operations per phase.
    pub ops: BTreeMap<String, usize>,
    /// Failures per (phase, operation, error text).
    pub errors: BTreeMap<(String, &'static str, String), usize>,
}

impl Report {
    /// Failures in `phase`.
    pub fn errors_in(&self, phase: &str) -> usize {
        self.errors
            .iter()
            .filter(|((p, _, _), _)| p == phase)
            .map(|(_, n)| n)
            .sum()
    }

    /// Operations in `phase`.
    pub fn ops_in(&self, phase: &str) -> usize {
        self.ops.get(phase).copied().unwrap_or(0)
    }

    /// Prints the operations per phase and every kind of failure with
    /// its count, so the test output reports them.
    pub fn print(&self) {
        eprintln!("load: {} writes acknowledged", self.acked.len());
        for (phase, ops) in &self.ops {
            let errors = self.errors_in(phase);
            eprintln!("load: phase {phase}: {ops} operations, {errors} failed");
        }
        for ((phase, op, text), n) in &self.errors {
            eprintln!("load: phase {phase}: {op} failed {n}x: {text}");
        }
    }

    fn absorb(&mut self, other: Report) {
        self.acked.extend(other.acked);
        self.attempted.extend(other.attempted);
        for (phase, n) in other.ops {
            *self.ops.entry(phase).or_default() += n;
        }
        for (k, n) in other.errors {
            *self.errors.entry(k).or_default() += n;
        }
    }
}

struct Shared {
    stop: AtomicBool,
    phase: Mutex<String>,
    /// HTTP ports of the nodes clients talk to.
    targets: RwLock<Vec<u16>>,
}

/// Workers running until [`Load::finish`].
pub struct Load {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<Report>>,
}

impl Load {
    /// Starts `workers` threads against the nodes on `targets` (HTTP
    /// ports), each pausing `pace` between operations, in phase `phase`.
    pub fn start(workers: usize, targets: &[u16], pace: Duration, phase: &str) -> Load {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            phase: Mutex::new(phase.to_string()),
            targets: RwLock::new(targets.to_vec()),
        });
        let workers = (0..workers)
            .map(|w| {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || work(w, &shared, pace))
            })
            .collect();
        Load { shared, workers }
    }

    /// Counts what follows under `phase`.
    pub fn phase(&self, phase: &str) {
        *self.shared.phase.lock().unwrap() = phase.to_string();
    }

    /// Has clients talk to the nodes on `targets` from now on.
    pub fn retarget(&self, targets: &[u16]) {
        *self.shared.targets.write().unwrap() = targets.to_vec();
    }

    /// Stops the workers and merges what they did.
    pub fn finish(self) -> Report {
        self.shared.stop.store(true, Ordering::SeqCst);
        let mut report = Report::default();
        for w in self.workers {
            report.absorb(w.join().expect("load worker"));
        }
        report
    }
}

/// One worker: write a new key, read back an older one, until stopped.
fn work(worker: usize, shared: &Shared, pace: Duration) -> Report {
    let mut report = Report::default();
    let mut mine: Vec<String> = Vec::new();
    let mut step = 0usize;
    while !shared.stop.load(Ordering::SeqCst) {
        let (key, value) = (format!("w{worker}-{step}"), format!("v{worker}-{step}"));
        let port = target(shared, worker + step);
        let phase = shared.phase.lock().unwrap().clone();
        report.attempted.push(key.clone());
        match put_w2(port, BUCKET, &key, &value) {
            Ok(()) => {
                report.acked.insert(key.clone(), value);
                mine.push(key);
            }
            Err(e) => {
                forget_if_refused(shared, port, &e);
                report.failed(&phase, "put", e);
            }
        }
        let read = !mine.is_empty();
        if read {
            let old = &mine[(step * 7919) % mine.len()];
            let port = target(shared, worker + step + 1);
            if let Err(e) = read_back(port, old, &report.acked[old]) {
                forget_if_refused(shared, port, &e);
                report.failed(&phase, "get", e);
            }
        }
        *report.ops.entry(phase).or_default() += 1 + usize::from(read);
        step += 1;
        std::thread::sleep(pace);
    }
    report
}

/// Reads `key` with r = 2 and checks it holds `value`.
fn read_back(port: u16, key: &str, value: &str) -> Result<(), String> {
    match get_r2(port, BUCKET, key)? {
        Some(v) if v == value => Ok(()),
        Some(v) => Err(format!("another value: {v}")),
        None => Err("not found".into()),
    }
}

impl Report {
    fn failed(&mut self, phase: &str, op: &'static str, text: String) {
        *self
            .errors
            .entry((phase.to_string(), op, text))
            .or_default() += 1;
    }
}

/// A node that refuses connections has stopped: clients stop using it, as
/// Riak's clients drop a node from their pool, while another is left.
fn forget_if_refused(shared: &Shared, port: u16, error: &str) {
    let mut targets = shared.targets.write().unwrap();
    if error == REFUSED && targets.len() > 1 {
        targets.retain(|&p| p != port);
    }
}

/// The `i`th target, round robin.
fn target(shared: &Shared, i: usize) -> u16 {
    let targets = shared.targets.read().unwrap();
    targets[i % targets.len()]
}
