//! Background work, shared by every bitcask instance of the process: one
//! thread syncs the files closed by rollover and writes their hints, one
//! runs the `interval` syncs, one the merge checks (so merges run one at a
//! time, as Riak's `bitcask_merge_worker` runs them). A node opens one
//! instance per partition; with threads of their own, a ring of 1024
//! partitions would have started over 2000 idle threads.
//!
//! An instance joins at open ([`join`]) and leaves at close
//! ([`Membership::leave`]). The service holds instances weakly, so one
//! dropped without a close is forgotten at its next turn.
//!
//! Invariants: a job never starts on an instance whose stop was requested
//! (checked under its [`Activity`] lock), and `leave` returns only once no
//! job of the instance is running, so that close then has the files to
//! itself; the hints still queued for an instance at its close are written
//! by the closing thread, as they were queued. None of the threads holds a
//! lock while it waits.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use eddy_storage::{StorageError, SyncPolicy};
use parking_lot::{Condvar, Mutex};

use crate::engine::Inner;
use crate::hint::HintWriter;
use crate::scan::{ScanEvent, scan};

/// The jobs of one instance that are running now; close waits for none.
#[derive(Default)]
pub struct Activity {
    running: Mutex<usize>,
    idle: Condvar,
}

impl Activity {
    /// Runs `job` on `inner` unless its stop was requested. A job that
    /// panics (a bug; the hook prints it) is counted as ended, and the
    /// service thread goes on serving the other instances.
    fn run(inner: &Inner, job: impl FnOnce(&Inner)) {
        {
            let mut running = inner.activity.running.lock();
            if inner.stop.requested() {
                return;
            }
            *running += 1;
        }
        let _ended = Ended(&inner.activity);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(inner)));
    }

    /// Returns once no job runs (call after requesting stop).
    fn wait_idle(&self) {
        let mut running = self.running.lock();
        while *running > 0 {
            self.idle.wait(&mut running);
        }
    }
}

/// Counts a job as ended when dropped.
struct Ended<'a>(&'a Activity);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        let mut running = self.0.running.lock();
        *running -= 1;
        if *running == 0 {
            self.0.idle.notify_all();
        }
    }
}

/// An instance's place in the service.
pub struct Membership {
    me: Weak<Inner>,
}

impl Membership {
    /// Queues the sync of closed files and the hint of closed file `id`.
    pub fn queue_hint(&self, id: u32) {
        service().hints.push((self.me.clone(), id));
    }

    /// Leaves the service: the instance gets no new job, the running ones
    /// are waited for, and the hints still queued for it are written here.
    /// Its stop must have been requested.
    pub fn leave(&self, inner: &Inner) {
        let s = service();
        s.sync.forget(&self.me);
        s.merge.forget(&self.me);
        let pending = s.hints.take_of(&self.me);
        inner.activity.wait_idle();
        for id in pending {
            hint_job(inner, id);
        }
    }
}

/// Joins `inner` to the service, with the timers its config asks for.
pub fn join(inner: &Arc<Inner>) -> std::io::Result<Membership> {
    let s = service_started()?;
    let me = Arc::downgrade(inner);
    if inner.config.sync == SyncPolicy::Interval {
        s.sync.add(me.clone(), inner.config.sync_interval);
    }
    if inner.config.merge_check_interval_ms > 0 {
        let every = Duration::from_millis(inner.config.merge_check_interval_ms);
        s.merge.add(me.clone(), every);
    }
    Ok(Membership { me })
}

struct Service {
    hints: HintQueue,
    sync: Ticker,
    merge: Ticker,
}

static SERVICE: OnceLock<Service> = OnceLock::new();
static STARTED: OnceLock<Result<(), String>> = OnceLock::new();

fn service() -> &'static Service {
    SERVICE.get_or_init(|| Service {
        hints: HintQueue::default(),
        sync: Ticker::default(),
        merge: Ticker::default(),
    })
}

/// The service, its threads started on first use.
fn service_started() -> std::io::Result<&'static Service> {
    let started = STARTED.get_or_init(|| {
        let spawn = |name: &str, f: fn(&'static Service)| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || f(service()))
                .map(drop)
        };
        spawn("bitcask-hint", |s| s.hints.serve())
            .and_then(|()| spawn("bitcask-sync", |s| s.sync.serve(sync_job)))
            .and_then(|()| spawn("bitcask-merge", |s| s.merge.serve(merge_job)))
            .map_err(|e| e.to_string())
    });
    match started {
        Ok(()) => Ok(service()),
        Err(e) => Err(std::io::Error::other(format!(
            "cannot start bitcask's background threads: {e}"
        ))),
    }
}

fn hint_job(inner: &Inner, id: u32) {
    // A failed sync poisons the instance; durable writers see it.
    let _ = inner.sync_closed_in_background();
    // Hints are an optimisation: on failure open scans the data file.
    let _ = write_hint(inner, id);
}

fn sync_job(inner: &Inner) {
    // A failure poisons the instance; writers see it.
    let _ = inner.sync_all();
}

fn merge_job(inner: &Inner) {
    let now = inner.now();
    if inner.config.merge_window.admits(now) && crate::merge::wanted(inner) {
        let _ = crate::merge::merge(inner, false);
    }
}

/// Hint jobs, oldest first.
#[derive(Default)]
struct HintQueue {
    jobs: Mutex<VecDeque<(Weak<Inner>, u32)>>,
    queued: Condvar,
}

impl HintQueue {
    fn push(&self, job: (Weak<Inner>, u32)) {
        self.jobs.lock().push_back(job);
        self.queued.notify_one();
    }

    /// Removes and returns the ids queued for `me`.
    fn take_of(&self, me: &Weak<Inner>) -> Vec<u32> {
        let mut jobs = self.jobs.lock();
        let mut taken = Vec::new();
        jobs.retain(|(w, id)| {
            let mine = w.ptr_eq(me);
            if mine {
                taken.push(*id);
            }
            !mine
        });
        taken
    }

    fn serve(&self) {
        loop {
            let (me, id) = {
                let mut jobs = self.jobs.lock();
                loop {
                    match jobs.pop_front() {
                        Some(job) => break job,
                        None => self.queued.wait(&mut jobs),
                    }
                }
            };
            if let Some(inner) = me.upgrade() {
                Activity::run(&inner, |i| hint_job(i, id));
            }
        }
    }
}

/// Instances due for a periodic job, each at its own interval.
#[derive(Default)]
struct Ticker {
    entries: Mutex<Vec<Entry>>,
    changed: Condvar,
}

struct Entry {
    me: Weak<Inner>,
    every: Duration,
    due: Instant,
}

impl Ticker {
    fn add(&self, me: Weak<Inner>, every: Duration) {
        let due = Instant::now() + every;
        self.entries.lock().push(Entry { me, every, due });
        self.changed.notify_one();
    }

    fn forget(&self, me: &Weak<Inner>) {
        self.entries.lock().retain(|e| !e.me.ptr_eq(me));
    }

    /// Runs `job` on each instance when it is due, forever.
    fn serve(&self, job: fn(&Inner)) {
        loop {
            for me in self.wait_for_due() {
                if let Some(inner) = me.upgrade() {
                    Activity::run(&inner, job);
                }
            }
        }
    }

    /// Waits until an entry is due; returns the due ones (their next turn
    /// set) and drops those whose instance is gone.
    fn wait_for_due(&self) -> Vec<Weak<Inner>> {
        let mut entries = self.entries.lock();
        loop {
            entries.retain(|e| e.me.strong_count() > 0);
            let now = Instant::now();
            let due: Vec<_> = entries
                .iter_mut()
                .filter(|e| e.due <= now)
                .map(|e| {
                    e.due = now + e.every;
                    e.me.clone()
                })
                .collect();
            if !due.is_empty() {
                return due;
            }
            match entries.iter().map(|e| e.due).min() {
                Some(next) => {
                    self.changed.wait_until(&mut entries, next);
                }
                None => self.changed.wait(&mut entries),
            }
        }
    }
}

/// Writes the hint file of closed data file `id` by scanning it. The data
/// file is synced first, so a hint never describes bytes a power loss
/// could still take away.
pub fn write_hint(inner: &Inner, id: u32) -> Result<(), StorageError> {
    // Serialised with merges, which delete files.
    let _no_merge = inner.merge_lock.lock();
    let Some(file) = inner.state.read().files.get(&id).map(|f| f.file.clone()) else {
        return Ok(());
    };
    let io = |e| StorageError::io(&file.path, e);
    let len = file.file().metadata().map_err(io)?.len();
    let mut hint = HintWriter::create(&inner.dir, id)?;
    scan(file.file(), &file.path, len, |ev| match ev {
        ScanEvent::Record {
            offset,
            raw,
            record,
        } => hint.add(offset as u32, raw.len() as u32, &record),
        _ => Ok(()),
    })?;
    inner.sync_data_file(&file)?;
    hint.finish(len)
}
