//! The `Interval` sync policy: a thread that fsyncs the journal
//! periodically.
//!
//! The thread holds a handle of the fjall database; the environment stops
//! and joins it before its own fields drop, so the database (and its
//! directory lock) is released on the thread that drops the environment.
//! It fsyncs directly, outside group commit: that only costs sharing.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use fjall::{Database, PersistMode};

/// Handle of the periodic fsync thread.
pub struct IntervalSyncer {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl IntervalSyncer {
    /// Starts fsyncing `env`'s journal every `interval` (at least 1 ms).
    pub fn start(db: Database, interval: Duration) -> IntervalSyncer {
        let (stop, stopped) = mpsc::channel::<()>();
        let period = interval.max(Duration::from_millis(1));
        let thread = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                // A failed fsync poisons the database; writers then see the
                // error, so there is nothing more to do here.
                let _ = db.persist(PersistMode::SyncData);
            }
        });
        IntervalSyncer { stop, thread }
    }

    /// Stops the thread and waits for it.
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
