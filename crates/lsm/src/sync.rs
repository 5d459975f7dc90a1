//! Group commit: writers that need durability share one journal fsync.
//!
//! A writer takes a [`GroupSync::ticket`] *after* its batch is committed to
//! the journal, then calls [`GroupSync::wait_durable`]. One waiter at a time
//! becomes the leader: it notes the highest ticket issued so far, fsyncs, and
//! marks every ticket up to that note durable. Invariant: `synced` only ever
//! covers tickets issued before the fsync that covered them started, so a
//! writer returns only once an fsync that began after its commit has
//! finished.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};

use eddy_storage::StorageError;

#[derive(Default)]
struct State {
    /// Every ticket `<= synced` is durable.
    synced: u64,
    /// A leader is fsyncing now.
    syncing: bool,
}

/// Shares journal fsyncs among concurrent writers.
#[derive(Default)]
pub struct GroupSync {
    issued: AtomicU64,
    state: Mutex<State>,
    done: Condvar,
}

impl GroupSync {
    /// A ticket for a batch that is already committed.
    pub fn ticket(&self) -> u64 {
        self.issued.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Returns once `ticket` is durable, running `fsync` if no one else is.
    pub fn wait_durable(
        &self,
        ticket: u64,
        fsync: impl Fn() -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let mut state = self.state.lock();
        loop {
            if state.synced >= ticket {
                return Ok(());
            }
            if !state.syncing {
                break;
            }
            self.done.wait(&mut state);
        }
        state.syncing = true;
        let target = self.issued.load(Ordering::SeqCst);
        drop(state);
        let result = fsync();
        let mut state = self.state.lock();
        state.syncing = false;
        if result.is_ok() {
            state.synced = state.synced.max(target);
        }
        self.done.notify_all();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn concurrent_writers_share_fsyncs() {
        let group = Arc::new(GroupSync::default());
        let fsyncs = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (group, fsyncs) = (group.clone(), fsyncs.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let ticket = group.ticket();
                        group
                            .wait_durable(ticket, || {
                                fsyncs.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_micros(200));
                                Ok(())
                            })
                            .unwrap();
                        assert!(group.state.lock().synced >= ticket);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(fsyncs.load(Ordering::SeqCst) <= 800);
    }

    #[test]
    fn a_failed_fsync_is_reported_and_not_counted() {
        let group = GroupSync::default();
        let ticket = group.ticket();
        let failed = group.wait_durable(ticket, || Err(StorageError::Poisoned("test".into())));
        assert!(failed.is_err());
        assert_eq!(group.state.lock().synced, 0);
    }
}
