//! Group commit and the sync policy: the one way Eddy makes writes durable
//! in groups — bitcask's data files, lsm's journal and the node's commit
//! log all use it (design note 024).
//!
//! Writers append to a log, each reaching a position (a byte offset, or a
//! count of commits: [`GroupCommit::ticket`]). A *round* syncs the log and
//! then marks every position up to its *target* durable; the target is
//! read before the sync starts, so a round covers only what was appended
//! before it began. Whoever waits for a position is woken by the first
//! round that covers it. Two ways to wait, one watermark:
//! - [`GroupCommit::wait`] blocks the calling thread, and the first caller
//!   to find no round running leads one (bitcask, lsm);
//! - [`GroupCommit::when_synced`] registers a callback, and a dedicated
//!   thread runs the rounds with [`GroupCommit::round`] (the commit log).
//!
//! Invariants: the watermark only grows, and only by a round whose sync
//! succeeded, to that round's target; one round runs at a time; a caller
//! returns `Ok` (a callback gets `Ok`) only once a sync that began after
//! its position was appended has finished; after a failed sync nothing is
//! marked, blocking waiters lead again (and meet the caller's poisoned
//! state), and [`GroupCommit::fail`] answers every callback, now and
//! later, with the error.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex, MutexGuard};

/// When writes reach stable storage beyond those that ask for it; Riak's
/// three `sync_strategy` values. The interval, where one applies, is a
/// setting beside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Only writes that ask for durability wait for a sync (Riak's `none`);
    /// the OS writes the rest back.
    #[default]
    None,
    /// A background sync every interval bounds what a machine crash can
    /// lose (Riak's `{seconds, N}`).
    Interval,
    /// Every write is durable on return (Riak's `o_sync`); concurrent
    /// writers share one sync.
    OSync,
}

/// Called once with the outcome of waiting for a position to be synced.
pub type SyncWaiter = Box<dyn FnOnce(Result<(), String>) + Send>;

/// A waiter with the answer it is due now.
pub type Answer = (SyncWaiter, Result<(), String>);

#[derive(Default)]
struct State {
    /// A round is syncing now, for every position `<= target`.
    syncing: bool,
    target: u64,
    /// Number of the round in flight (or of the last one).
    round: u64,
    /// Callbacks for positions beyond the watermark.
    waiters: Vec<(u64, SyncWaiter)>,
    /// Set by [`GroupCommit::fail`]: every callback gets it.
    failed: Option<String>,
}

/// Shares syncs among concurrent writers (see the module docs).
///
/// Blocking waiters sleep on one of two condition variables by round, so
/// the end of a round wakes only the waiters it covered (all of round `n`)
/// and one waiter of round `n + 1` to lead it, not every waiting thread:
/// with 64 writers, waking all of them per fsync cost more CPU than the
/// writes. A waiter about to lead yields the CPU once first, so writers
/// committing at that moment join its round (on 2 cores with 64 writers,
/// +20 % puts/s on lsm: fewer, fuller fsyncs).
#[derive(Default)]
pub struct GroupCommit {
    /// The highest position noted (by a ticket or a waiter).
    noted: AtomicU64,
    /// Every position `<= synced` is durable; written under `state`.
    synced: AtomicU64,
    state: Mutex<State>,
    /// Blocking waiters for round `n` sleep on `done[n % 2]`.
    done: [Condvar; 2],
}

impl GroupCommit {
    /// A position for a log that counts commits: the next number, noted.
    /// Take it *after* the commit is in the log.
    pub fn ticket(&self) -> u64 {
        self.noted.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Every position up to this one is durable.
    pub fn synced(&self) -> u64 {
        self.synced.load(Ordering::Acquire)
    }

    /// Returns once `lsn` (appended before the call) is durable, leading a
    /// round with `sync` if none is running. `sync` must make durable
    /// everything appended before it is called.
    pub fn wait<E>(&self, lsn: u64, sync: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        self.noted.fetch_max(lsn, Ordering::SeqCst);
        let mut state = self.state.lock();
        let mut yielded = false;
        loop {
            if self.synced() >= lsn {
                return Ok(());
            }
            if !state.syncing && yielded {
                break;
            }
            if !state.syncing {
                // Let writers that are about to commit join this round.
                yielded = true;
                MutexGuard::unlocked(&mut state, std::thread::yield_now);
                continue;
            }
            // The round in flight covers `lsn`, or else the next one will:
            // its target is read after `lsn` was noted.
            let round = state.round + u64::from(lsn > state.target);
            self.done[round_slot(round)].wait(&mut state);
        }
        let target = self.noted.load(Ordering::SeqCst);
        self.lead(state, target, sync)
    }

    /// Runs one round for a dedicated syncer: `sync` makes durable every
    /// position up to `target`, then whoever that covers is woken. Waits
    /// for a round in flight first.
    pub fn round<E>(&self, target: u64, sync: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        let mut state = self.state.lock();
        while state.syncing {
            let round = state.round;
            self.done[round_slot(round)].wait(&mut state);
        }
        self.noted.fetch_max(target, Ordering::SeqCst);
        self.lead(state, target, sync)
    }

    /// Has `waiter` called once `lsn` is durable, by the round that covers
    /// it; whoever runs the rounds learns of it from
    /// [`GroupCommit::waited`]. When there is nothing to wait for (`lsn` is
    /// durable, or the log failed) the waiter is handed back with its
    /// answer, for the caller to call outside its own locks.
    #[must_use = "a waiter handed back must be called"]
    pub fn when_synced(&self, lsn: u64, waiter: SyncWaiter) -> Option<Answer> {
        let mut state = self.state.lock();
        if let Some(e) = state.failed.clone() {
            return Some((waiter, Err(e)));
        }
        if self.synced() >= lsn {
            return Some((waiter, Ok(())));
        }
        state.waiters.push((lsn, waiter));
        None
    }

    /// Whether a callback waits for a round.
    pub fn waited(&self) -> bool {
        !self.state.lock().waiters.is_empty()
    }

    /// Answers every callback, now and later, with `e` (the first error
    /// given wins).
    pub fn fail(&self, e: String) {
        let (e, waiters) = {
            let mut state = self.state.lock();
            let e = state.failed.get_or_insert(e).clone();
            (e, std::mem::take(&mut state.waiters))
        };
        waiters.into_iter().for_each(|(_, w)| w(Err(e.clone())));
    }

    /// Runs `sync` as round leader for `target`, then marks and wakes.
    fn lead<E>(
        &self,
        mut state: MutexGuard<'_, State>,
        target: u64,
        sync: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        state.syncing = true;
        state.round += 1;
        state.target = target;
        let round = state.round;
        drop(state);
        let result = sync();
        let mut state = self.state.lock();
        state.syncing = false;
        if result.is_err() {
            // Everyone retries (and meets the caller's poisoned state).
            self.done.iter().for_each(|done| {
                done.notify_all();
            });
            return result;
        }
        self.synced.fetch_max(target, Ordering::AcqRel);
        let ready = take_ready(&mut state.waiters, self.synced());
        self.done[round_slot(round)].notify_all();
        self.done[round_slot(round + 1)].notify_one();
        drop(state);
        ready.into_iter().for_each(|(_, w)| w(Ok(())));
        result
    }
}

fn round_slot(round: u64) -> usize {
    (round % 2) as usize
}

/// Takes the waiters of `waiting` whose position is at or before `upto`.
fn take_ready(waiting: &mut Vec<(u64, SyncWaiter)>, upto: u64) -> Vec<(u64, SyncWaiter)> {
    if waiting.iter().all(|(lsn, _)| *lsn > upto) {
        return Vec::new();
    }
    let (ready, rest) = std::mem::take(waiting)
        .into_iter()
        .partition(|(lsn, _)| *lsn <= upto);
    *waiting = rest;
    ready
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::mpsc;

    #[test]
    fn concurrent_writers_share_syncs() {
        let group = Arc::new(GroupCommit::default());
        let syncs = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (group, syncs) = (group.clone(), syncs.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let ticket = group.ticket();
                        group
                            .wait(ticket, || {
                                syncs.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                Ok::<(), ()>(())
                            })
                            .unwrap();
                        assert!(group.synced() >= ticket);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(syncs.load(Ordering::SeqCst) <= 800);
        assert_eq!(group.synced(), 800);
    }

    #[test]
    fn a_failed_sync_is_reported_and_not_counted() {
        let group = GroupCommit::default();
        let ticket = group.ticket();
        assert_eq!(group.wait(ticket, || Err("disk")), Err("disk"));
        assert_eq!(group.synced(), 0);
        assert_eq!(group.wait(ticket, || Ok::<(), &str>(())), Ok(()));
        assert_eq!(group.synced(), 1);
    }

    #[test]
    fn byte_positions_are_covered_by_the_noted_maximum() {
        let group = GroupCommit::default();
        group.wait(100, || Ok::<(), ()>(())).unwrap();
        assert_eq!(group.synced(), 100);
        // Already covered: no round, the sync is not called.
        group
            .wait(40, || -> Result<(), ()> { panic!("no round") })
            .unwrap();
    }

    #[test]
    fn callbacks_are_answered_by_the_round_covering_them() {
        let group = GroupCommit::default();
        let (tx, rx) = mpsc::channel();
        for lsn in [10, 20] {
            let tx = tx.clone();
            let waiter = Box::new(move |r| tx.send((lsn, r)).unwrap());
            assert!(group.when_synced(lsn, waiter).is_none());
        }
        assert!(group.waited());
        group.round(15, || Ok::<(), ()>(())).unwrap();
        assert_eq!(rx.try_recv(), Ok((10, Ok(()))));
        assert!(rx.try_recv().is_err());
        group.round(25, || Ok::<(), ()>(())).unwrap();
        assert_eq!(rx.try_recv(), Ok((20, Ok(()))));
        assert!(!group.waited());
        // Covered already: handed back with its answer.
        let (_, answer) = group.when_synced(25, Box::new(|_| {})).unwrap();
        assert_eq!(answer, Ok(()));
    }

    #[test]
    fn a_failed_round_marks_nothing_and_fail_answers_every_callback() {
        let group = GroupCommit::default();
        let (tx, rx) = mpsc::channel();
        let waiter = Box::new(move |r| tx.send(r).unwrap());
        assert!(group.when_synced(5, waiter).is_none());
        assert_eq!(group.round(5, || Err("eio")), Err("eio"));
        assert_eq!(group.synced(), 0);
        assert!(rx.try_recv().is_err());
        group.fail("eio".into());
        assert_eq!(rx.try_recv(), Ok(Err("eio".to_string())));
        let (_, answer) = group.when_synced(1, Box::new(|_| {})).unwrap();
        assert_eq!(answer, Err("eio".to_string()));
    }
}
