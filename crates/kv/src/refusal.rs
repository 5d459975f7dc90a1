//! The last write refused because a resource ran out, as the put
//! coordinator saw it: a backend (bitcask out of disk space, say) or the
//! commit log answered `StorageError::Exhausted`. `/health` reports it
//! until a write is acknowledged again (design note 008), so a refusal
//! that only a backend knows about is visible too.
//!
//! Invariant: `set` is true exactly while `reason` holds a reason, so an
//! acknowledged write costs one atomic load when nothing was refused.

use std::sync::atomic::{AtomicBool, Ordering};

use eddy_storage::StorageError;
use parking_lot::Mutex;

use eddy_model::error::KvError;

/// Why the last write was refused for lack of a resource, if it was.
#[derive(Default)]
pub struct WriteRefusal {
    set: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl WriteRefusal {
    /// Remembers `e` if it is an exhausted resource.
    pub fn refused(&self, e: &KvError) {
        if let KvError::Storage(StorageError::Exhausted { .. }) = e {
            let mut reason = self.reason.lock();
            *reason = Some(e.to_string());
            self.set.store(true, Ordering::Release);
        }
    }

    /// A write was acknowledged: the resource is back.
    pub fn accepted(&self) {
        if self.set.load(Ordering::Acquire) {
            let mut reason = self.reason.lock();
            *reason = None;
            self.set.store(false, Ordering::Release);
        }
    }

    /// The reason of the last refusal, until a write is acknowledged.
    pub fn reason(&self) -> Option<String> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        self.reason.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_storage::Resource;

    #[test]
    fn an_exhausted_refusal_is_reported_until_a_write_is_acknowledged() {
        let r = WriteRefusal::default();
        r.refused(&KvError::Timeout);
        assert_eq!(r.reason(), None, "only exhausted resources count");
        r.refused(&KvError::Storage(StorageError::Exhausted {
            resource: Resource::Disk,
            detail: "data file 4096: No space left on device".into(),
        }));
        let reason = r.reason().expect("refusing");
        assert!(reason.contains("disk space"), "{reason}");
        r.accepted();
        assert_eq!(r.reason(), None);
    }
}
