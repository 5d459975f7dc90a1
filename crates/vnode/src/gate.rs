//! The folds running over a vnode's backend, so that closing the vnode
//! for a drop lets them finish first: a fold the router admitted while
//! its node owned the partition answers from the whole partition, never
//! from a backend closed (or destroyed) under it.
//!
//! Invariant: once [`Folds::close`] began, [`Folds::enter`] admits no new
//! fold; `close` returns when every admitted fold ended, or after its
//! bound (a fold still running then fails on the closed backend, which
//! its coordinator reports).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// How long closing a vnode for a drop waits for its folds.
pub const FOLD_DRAIN_MAX: Duration = Duration::from_secs(60);

/// A vnode's running folds.
#[derive(Default)]
pub(crate) struct Folds {
    state: Mutex<State>,
    idle: Condvar,
}

#[derive(Default)]
struct State {
    running: usize,
    closing: bool,
}

/// One admitted fold; dropping it ends the fold.
pub struct FoldTicket(Arc<Folds>);

impl Folds {
    /// Admits a fold, unless the vnode is closing.
    pub(crate) fn enter(self: &Arc<Self>) -> Option<FoldTicket> {
        let mut state = self.state.lock();
        if state.closing {
            return None;
        }
        state.running += 1;
        Some(FoldTicket(self.clone()))
    }

    /// Admits no more folds and waits, at most `max`, for the running
    /// ones to end; false if some still run.
    pub(crate) fn close(&self, max: Duration) -> bool {
        let end = Instant::now() + max;
        let mut state = self.state.lock();
        state.closing = true;
        while state.running > 0 {
            if self.idle.wait_until(&mut state, end).timed_out() {
                return state.running == 0;
            }
        }
        true
    }
}

impl Drop for FoldTicket {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.running -= 1;
        if state.running == 0 {
            self.0.idle.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_waits_for_running_folds_and_admits_no_new_one() {
        let folds = Arc::new(Folds::default());
        let ticket = folds.enter().expect("open");
        let closer = {
            let folds = folds.clone();
            std::thread::spawn(move || folds.close(Duration::from_secs(30)))
        };
        while !folds.state.lock().closing {
            std::thread::yield_now();
        }
        assert!(folds.enter().is_none(), "a closing vnode admits no fold");
        assert!(!closer.is_finished(), "close returned while a fold ran");
        drop(ticket);
        assert!(closer.join().unwrap(), "close saw every fold end");
    }

    #[test]
    fn close_gives_up_after_its_bound() {
        let folds = Arc::new(Folds::default());
        let _ticket = folds.enter().expect("open");
        assert!(!folds.close(Duration::from_millis(10)));
    }
}
