//! The term index's memory bound on the write path
//! (`BitcaskConfig::index_memory_max_bytes`).
//!
//! The rule: a write whose key's terms would cost more than they cost now
//! ([`memory::key_bytes`]), and which would leave the index's estimate over
//! the bound, is refused with [`StorageError::IndexFull`] before anything
//! is appended. A write that does not grow the index (a delete, a put with
//! fewer, the same or shorter terms) always passes, so an index over its
//! bound (loaded at open, or grown by replay) can shrink back. A replayed
//! write (`WriteOptions::replay`) is never refused: it restores what was
//! acknowledged before, as open does; the first time the index goes over
//! the bound that way (or is found over it at open) a warning is logged.
//!
//! The writer lock is held from the check until the write is applied, and
//! only merges change the index meanwhile (they only remove entries), so
//! a write that passes the check cannot take the index past the bound.

use std::sync::atomic::Ordering;

use eddy_storage::memory::apply_specs;
use eddy_storage::{BatchOp, StorageError};
use hashbrown::HashMap;

use crate::engine::{Inner, live_terms};
use crate::format::TermSet;
use crate::index::memory;

impl Inner {
    /// Refuses a put that would give `(bucket, key)` the terms `terms`, if
    /// that grows the index past its bound and the put is not `replay`.
    pub fn check_index_room(
        &self,
        bucket: &[u8],
        key: &[u8],
        terms: &TermSet,
        replay: bool,
    ) -> Result<(), StorageError> {
        let Some(max) = self.config.index_memory_max_bytes else {
            return Ok(());
        };
        let (total, held) = {
            let st = self.state.read();
            (st.index.memory_bytes(), st.index.bytes_of(bucket, key))
        };
        let new = memory::key_bytes(bucket, key, terms.iter());
        self.judge(max, total, held, new, replay).map(|_| ())
    }

    /// Refuses a batch of several ops, whole and before any is applied, if
    /// one of its ops would be refused after the ones before it (a single
    /// op is checked as it is applied). The ops are simulated on a copy of
    /// the terms of the keys they touch.
    pub fn check_batch_index_room(
        &self,
        ops: &[BatchOp],
        replay: bool,
    ) -> Result<(), StorageError> {
        let Some(max) = self.config.index_memory_max_bytes else {
            return Ok(());
        };
        if replay || ops.len() < 2 {
            return Ok(());
        }
        let now = self.now();
        let st = self.state.read();
        let mut total = st.index.memory_bytes();
        let mut simulated: HashMap<(&[u8], &[u8]), TermSet> = HashMap::new();
        for op in ops {
            let (bucket, key) = op.bucket_key();
            let (held, live) = match simulated.get(&(bucket, key)) {
                Some(t) => (memory::key_bytes(bucket, key, t.iter()), t.clone()),
                None => (
                    st.index.bytes_of(bucket, key),
                    live_terms(&st, bucket, key, now),
                ),
            };
            let terms = match op {
                BatchOp::Put { indexes, .. } => {
                    let mut terms = live;
                    apply_specs(&mut terms, indexes.clone());
                    terms
                }
                BatchOp::Delete { .. } => TermSet::new(),
            };
            let new = memory::key_bytes(bucket, key, terms.iter());
            total = self.judge(max, total, held, new, false)?;
            simulated.insert((bucket, key), terms);
        }
        Ok(())
    }

    /// The index's estimate once a key's terms costing `held` become terms
    /// costing `new`, or the refusal.
    fn judge(
        &self,
        max: u64,
        total: u64,
        held: u64,
        new: u64,
        replay: bool,
    ) -> Result<u64, StorageError> {
        let after = total.saturating_sub(held) + new;
        if new <= held || after <= max {
            return Ok(after);
        }
        if replay {
            self.log_index_over(after, max, "replayed writes took");
            return Ok(after);
        }
        self.index_refusals.fetch_add(1, Ordering::Relaxed);
        Err(StorageError::IndexFull { bytes: after, max })
    }

    /// Warns, once per instance, that the index is over its bound.
    pub fn log_index_over(&self, bytes: u64, max: u64, what: &str) {
        if self.index_over_logged.swap(true, Ordering::Relaxed) {
            return;
        }
        tracing::warn!(
            dir = %self.dir.display(),
            bytes,
            max,
            "{what} the term index over its memory limit: writes adding index entries are \
             refused until entries are removed"
        );
    }
}
