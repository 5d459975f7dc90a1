//! The kill -9 harness: a child process writes with `sync: true` and prints
//! an acknowledgement after each write returns; the parent SIGKILLs it at a
//! random moment, reopens the backend and checks that every acknowledged
//! write is there with its value and that index entries match the objects
//! (on a backend that keeps them).
//!
//! Writes are deterministic functions of `(seed, thread, n)`, so the parent
//! knows every write without being told. Each child thread owns its own keys,
//! so per-key order is that thread's order. The write a thread had in flight
//! when killed may or may not have landed; both outcomes are allowed.
//!
//! Use: a backend's test file has a test named `crash_child` that calls
//! [`child_main`], and a test that calls [`run_kill_cycles`]; the parent
//! re-executes the test binary running only `crash_child`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{BackendFactory, OpenOptions};
use crate::{Backend, FoldControl, FoldOptions, IndexQuery, IndexSpec, SystemClock, WriteOptions};

/// Set in the child: the directory to write into.
pub const DIR_ENV: &str = "EDDY_CRASH_DIR";
/// Set in the child: the seed of this run's writes.
pub const SEED_ENV: &str = "EDDY_CRASH_SEED";
/// Writer threads in the child.
pub const THREADS: u64 = 4;
/// Keys each thread cycles over.
pub const KEYS_PER_THREAD: u64 = 200;
const BUCKET: &[u8] = b"crash";
const FIELD: &[u8] = b"digest_bin";

/// One deterministic write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashWrite {
    pub key: Vec<u8>,
    /// `None` for a delete.
    pub value: Option<Vec<u8>>,
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The `n`th write of `thread` in the run with `seed`.
pub fn write_for(seed: u64, thread: u64, n: u64) -> CrashWrite {
    let h = mix(seed ^ mix(thread.wrapping_add(1) << 40 ^ n));
    let key = format!("t{thread}-k{:04}", h % KEYS_PER_THREAD).into_bytes();
    if h.is_multiple_of(10) {
        return CrashWrite { key, value: None };
    }
    let len = 16 + (mix(h) % 6_000) as usize;
    let mut value = format!("{seed}/{thread}/{n}/").into_bytes();
    value.extend((0..len).map(|i| (mix(h ^ i as u64) & 0xff) as u8));
    CrashWrite {
        key,
        value: Some(value),
    }
}

/// The index term a value is filed under.
pub fn digest(value: &[u8]) -> Vec<u8> {
    let h = value.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}").into_bytes()
}

/// Applies one write the way the child does: the index term follows the
/// value, replacing the term of whatever value is stored now (on a backend
/// that keeps index entries).
fn apply(backend: &dyn Backend, w: &CrashWrite) -> Result<(), crate::StorageError> {
    let Some(value) = &w.value else {
        return backend.delete(BUCKET, &w.key, WriteOptions::SYNC);
    };
    let mut specs = Vec::new();
    if backend.capabilities().indexes {
        if let Some(old) = backend.get(BUCKET, &w.key)? {
            specs.push(IndexSpec::remove(FIELD, &digest(&old)));
        }
        specs.push(IndexSpec::add(FIELD, &digest(value)));
    }
    backend.put(BUCKET, &w.key, value, &specs, WriteOptions::SYNC)
}

/// In the child (when [`DIR_ENV`] is set): opens the backend and writes until
/// killed. Otherwise returns at once, so the `crash_child` test passes
/// trivially in a normal test run.
pub fn child_main(factory: &dyn BackendFactory) {
    let (Ok(dir), Ok(seed)) = (std::env::var(DIR_ENV), std::env::var(SEED_ENV)) else {
        return;
    };
    let seed: u64 = seed.parse().expect("numeric seed");
    let opts = OpenOptions {
        clock: Arc::new(SystemClock),
        expiry_secs: 0,
    };
    let backend: Arc<dyn Backend> = Arc::from(factory.open(Path::new(&dir), &opts));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let backend = backend.clone();
            std::thread::spawn(move || child_thread(&*backend, seed, t))
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

fn child_thread(backend: &dyn Backend, seed: u64, thread: u64) {
    for n in 0.. {
        apply(backend, &write_for(seed, thread, n)).expect("child write");
        let mut out = std::io::stdout().lock();
        writeln!(out, "ack {thread} {n}").expect("stdout");
        out.flush().expect("stdout");
    }
}

/// What the parent learnt from one killed child: per thread, how many writes
/// were acknowledged (writes `0..acked[t]` are durable; write `acked[t]` may
/// or may not be).
#[derive(Clone, Debug)]
pub struct KilledRun {
    pub seed: u64,
    pub acked: Vec<u64>,
}

/// Runs the `crash_child` test of the current test binary as a child writing
/// into `dir`, and SIGKILLs it `kill_after` past its first acknowledgement.
pub fn run_and_kill(dir: &Path, seed: u64, kill_after: Duration) -> KilledRun {
    let exe = std::env::current_exe().expect("current_exe");
    let mut child = Command::new(exe)
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(DIR_ENV, dir)
        .env(SEED_ENV, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn crash child");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel::<(u64, u64)>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(ack) = parse_ack(&line) {
                let _ = tx.send(ack);
            }
        }
    });
    let mut acked = vec![0u64; THREADS as usize];
    let mut record = |(t, n): (u64, u64)| acked[t as usize] = acked[t as usize].max(n + 1);
    let first = rx.recv_timeout(Duration::from_secs(30));
    let first = first.unwrap_or_else(|_| {
        let _ = child.kill();
        panic!("crash child made no write within 30 s (see its stderr above)")
    });
    record(first);
    let deadline = Instant::now() + kill_after;
    while let Ok(ack) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        record(ack);
        if Instant::now() >= deadline {
            break;
        }
    }
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    reader.join().expect("reader thread");
    // Acks the child printed before it died are still in the pipe.
    rx.try_iter().for_each(&mut record);
    KilledRun { seed, acked }
}

/// The `(thread, n)` of an acknowledgement line. The ack may follow other
/// text on its line: the test harness prints `test crash_child ... `
/// without a newline before the child's first output, and an ack lost
/// there would let a later write of that thread look unacknowledged and
/// its value unexplained.
fn parse_ack(line: &str) -> Option<(u64, u64)> {
    let at = line.rfind("ack ")?;
    let mut words = line.get(at + 4..)?.split(' ');
    let thread = words.next()?.parse().ok()?;
    let n = words.next()?.parse().ok()?;
    Some((thread, n))
}

/// The values each key may hold, derived from every run's writes.
#[derive(Default, Debug)]
pub struct CrashHistory {
    /// key → allowed values (`None` = absent); the first is the last
    /// acknowledged state, the rest come from in-flight writes after it.
    allowed: BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
}

impl CrashHistory {
    /// Folds one killed run into the history.
    pub fn record(&mut self, run: &KilledRun) {
        for (t, &acked) in run.acked.iter().enumerate() {
            for n in 0..=acked {
                let w = write_for(run.seed, t as u64, n);
                let states = self.allowed.entry(w.key).or_insert_with(|| vec![None]);
                if n < acked {
                    *states = vec![w.value];
                } else {
                    states.push(w.value);
                }
            }
        }
    }

    /// After an in-flight write's fate is observed, later runs start from it.
    pub fn settle(&mut self, backend: &dyn Backend) {
        for (key, states) in self.allowed.iter_mut() {
            let now = backend.get(BUCKET, key).expect("get");
            *states = vec![now];
        }
    }

    /// Checks `backend` against the history; panics with the first mismatch.
    pub fn verify(&self, backend: &dyn Backend) {
        let mut live = BTreeMap::new();
        for (key, states) in &self.allowed {
            let got = backend.get(BUCKET, key).expect("get after crash");
            assert!(
                states.contains(&got),
                "key {:?}: got {}, allowed {} (the first the last acknowledged; {:?})",
                String::from_utf8_lossy(key),
                show(got.as_ref()),
                states
                    .iter()
                    .map(|s| show(s.as_ref()))
                    .collect::<Vec<_>>()
                    .join(" or "),
                backend.recovery_report(),
            );
            if let Some(v) = got {
                live.insert(key.clone(), v);
            }
        }
        verify_folds_and_index(backend, &live);
    }
}

fn verify_folds_and_index(backend: &dyn Backend, live: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut folded = BTreeMap::new();
    backend
        .fold_objects(&FoldOptions::bucket(BUCKET), &mut |_, k, v| {
            folded.insert(k.to_vec(), v.to_vec());
            FoldControl::Continue
        })
        .expect("fold after crash");
    if &folded != live {
        panic!(
            "fold disagrees with get after crash: {}",
            differences(&folded, live)
        );
    }
    if !backend.capabilities().indexes {
        return;
    }
    let mut index = Vec::new();
    let query = IndexQuery::range(BUCKET, FIELD, b"", b"\xff");
    backend
        .index_range(&query, &mut |t, k| {
            index.push((t.to_vec(), k.to_vec()));
            FoldControl::Continue
        })
        .expect("index scan after crash");
    let mut want: Vec<_> = live.iter().map(|(k, v)| (digest(v), k.clone())).collect();
    want.sort();
    assert_eq!(
        index, want,
        "index entries disagree with objects after crash"
    );
}

/// The keys whose values `folded` and `got` disagree on, each with both
/// sides' lengths and first bytes (the values are too long to print).
fn differences(folded: &BTreeMap<Vec<u8>, Vec<u8>>, got: &BTreeMap<Vec<u8>, Vec<u8>>) -> String {
    let keys: std::collections::BTreeSet<_> = folded.keys().chain(got.keys()).collect();
    keys.into_iter()
        .filter(|k| folded.get(*k) != got.get(*k))
        .map(|k| {
            format!(
                "key {:?}: fold {}, get {}",
                String::from_utf8_lossy(k),
                show(folded.get(k)),
                show(got.get(k))
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A value as its length and first bytes (which name the write that made
/// it: `seed/thread/n/`); values are too long to print.
fn show(v: Option<&Vec<u8>>) -> String {
    match v {
        None => "absent".to_string(),
        Some(v) => format!(
            "{} bytes {:?}…",
            v.len(),
            String::from_utf8_lossy(&v[..v.len().min(24)])
        ),
    }
}

/// Kills a child writer `cycles` times at random moments, verifying after
/// each; panics on any lost acknowledged write or inconsistent index.
pub fn run_kill_cycles(factory: &dyn BackendFactory, cycles: u64, base_seed: u64) {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("partition");
    let mut history = CrashHistory::default();
    let opts = OpenOptions {
        clock: Arc::new(SystemClock),
        expiry_secs: 0,
    };
    for cycle in 0..cycles {
        let seed = base_seed.wrapping_add(cycle);
        let kill_after = Duration::from_millis(20 + mix(seed) % 300);
        let run = run_and_kill(&dir, seed, kill_after);
        history.record(&run);
        let backend = factory.open(&dir, &opts);
        history.verify(&*backend);
        history.settle(&*backend);
        backend.close().expect("close after verify");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_is_read_after_the_harness_prefix_too() {
        assert_eq!(parse_ack("ack 3 17"), Some((3, 17)));
        assert_eq!(parse_ack("test crash_child ... ack 1 0"), Some((1, 0)));
        assert_eq!(parse_ack("running 1 test"), None);
        assert_eq!(parse_ack("ack 1"), None);
    }
}
