//! The `IntervalMs` sync policy: a thread that fsyncs the journal
//! periodically.
//!
//! The thread holds only a weak reference, so it never keeps an environment
//! open; it ends when told to stop or when the environment is gone.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::env::EnvShared;

/// Handle of the periodic fsync thread.
pub struct IntervalSyncer {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl IntervalSyncer {
    /// Starts fsyncing `env`'s journal every `interval_ms` (at least 1 ms).
    pub fn start(env: &Arc<EnvShared>, interval_ms: u64) -> IntervalSyncer {
        let (stop, stopped) = mpsc::channel::<()>();
        let env: Weak<EnvShared> = Arc::downgrade(env);
        let period = Duration::from_millis(interval_ms.max(1));
        let thread = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                let Some(env) = env.upgrade() else { return };
                // A failed fsync poisons the database; writers then see the
                // error, so there is nothing more to do here.
                let _ = env.durable();
            }
        });
        IntervalSyncer { stop, thread }
    }

    /// Stops the thread and waits for it, unless called from that thread.
    pub fn stop(self) {
        let _ = self.stop.send(());
        if self.thread.thread().id() != std::thread::current().id() {
            let _ = self.thread.join();
        }
    }
}
