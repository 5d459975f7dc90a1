//! A vnode's damage mark and the writes partition repair makes.
//!
//! A vnode is marked when its backend's recovery lost records (or a marker
//! file from an earlier start says so). While marked, coordinators read
//! around it and do not let it coordinate puts (design note 009). Repair
//! replaces each of its keys with what the healthy replicas hold, under
//! the key's lock, and then clears the mark.
//!
//! Invariant: repair syncs the backend before the marker file is removed,
//! and the removal is made durable before the in-memory mark is cleared:
//! once a vnode serves as healthy, its repaired data and the marker's
//! absence both survive a crash.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use eddy_object::{RiakObject, codec};

use super::Vnode;
use super::msg::StorageKey;
use eddy_model::error::KvError;

/// A vnode's mark: set while its partition needs repair.
#[derive(Debug, Default)]
pub struct Damage {
    marked: std::sync::atomic::AtomicBool,
    /// The durable marker, if the node keeps one on disk.
    marker: parking_lot::Mutex<Option<PathBuf>>,
}

/// What repairing one key did at one vnode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRepair {
    /// The vnode already held the healthy replicas' value.
    Unchanged,
    /// The healthy replicas' value replaced the vnode's copy.
    Copied,
    /// No healthy replica holds the key: the vnode's copy was removed.
    Removed,
}

impl Vnode {
    /// Marks this vnode damaged; `marker` is its durable marker file.
    pub fn mark_damaged(&self, marker: Option<PathBuf>) {
        *self.damage.marker.lock() = marker;
        self.damage.marked.store(true, Ordering::Release);
    }

    /// True while this vnode's partition needs repair.
    pub fn is_marked(&self) -> bool {
        self.damage.marked.load(Ordering::Acquire)
    }

    /// Removes the marker file (durably, noting the damage repaired),
    /// then clears the mark.
    pub fn clear_damage(&self) -> std::io::Result<()> {
        let mut marker = self.damage.marker.lock();
        if let Some(path) = marker.as_ref() {
            crate::marker::clear(path, &self.stores.backend.recovery_report())?;
        }
        *marker = None;
        self.damage.marked.store(false, Ordering::Release);
        Ok(())
    }

    /// Sets `key` to what `healthy()` says the healthy replicas hold
    /// (`None`: none holds it), under the key's lock, so that a put racing
    /// with the repair is either seen by `healthy()` or merged in after.
    /// A copy written gets the expiry its bucket's ttl (`ttl_secs`) gives.
    pub fn repair_key(
        &self,
        key: &StorageKey,
        ttl_secs: u64,
        healthy: impl FnOnce() -> Result<Option<RiakObject>, KvError>,
    ) -> Result<KeyRepair, KvError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(KvError::ShuttingDown);
        }
        let _locked = self.lock(key);
        let wanted = healthy()?;
        let current = match self.read(key) {
            Ok(current) => current,
            // The damaged copy itself cannot be read: it goes, with its
            // index entries, and the healthy value (if any) is written anew.
            Err(e) => {
                tracing::debug!(
                    partition = self.partition.0,
                    "unreadable copy replaced: {e}"
                );
                self.remove_copy(key)?;
                return match wanted {
                    Some(object) => self.copy(key, None, (&object, ttl_secs)),
                    None => Ok(KeyRepair::Removed),
                };
            }
        };
        match wanted {
            _ if current == wanted => Ok(KeyRepair::Unchanged),
            Some(object) => self.copy(key, current.as_ref(), (&object, ttl_secs)),
            None => {
                self.remove_copy(key)?;
                Ok(KeyRepair::Removed)
            }
        }
    }

    /// Writes the healthy replicas' `object` over `current`. Caller holds
    /// the key's lock.
    fn copy(
        &self,
        key: &StorageKey,
        current: Option<&RiakObject>,
        (object, ttl_secs): (&RiakObject, u64),
    ) -> Result<KeyRepair, KvError> {
        let bytes = codec::encode(object);
        let entries = super::entries::Entries::between(current, object, ttl_secs);
        let put = super::Put::object(key, &bytes, entries).tombstone_if(object.is_deleted());
        let first = (put, None);
        let old_root = self.stored_root(key);
        self.write(key, first, old_root.as_ref(), super::Records::Log)?;
        Ok(KeyRepair::Copied)
    }

    /// Deletes this vnode's copy of `key` (with its segments, if it has
    /// any). Caller holds the key's lock.
    fn remove_copy(&self, key: &StorageKey) -> Result<(), KvError> {
        let mut puts = vec![super::Put::removed(&key.bucket, &key.key)];
        if let Some(root) = self.stored_root(key) {
            let ids = root.ids();
            puts.extend(super::segmented_put::dead_segments(key, ids));
        }
        self.write_all(key, &puts, None, super::Records::Log)?;
        Ok(())
    }
}
