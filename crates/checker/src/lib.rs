//! The history checker every cluster test uses (the deterministic
//! simulation, the network-namespace partition test): clients record what
//! they attempted and what was acknowledged; after the cluster healed and
//! settled, [`History::check`] compares that with the final state of each
//! key (the merge of every copy, [`History::check`], or a client's read
//! with r = all, [`History::check_read`]).
//!
//! What it asserts, per key:
//! - no write acknowledged with w = quorum is lost: the final version
//!   descends it;
//! - no acknowledged write that no other write superseded (wrote with a
//!   context that had seen it; a write that failed may still have been
//!   applied somewhere, so every attempt counts) is missing from the final
//!   values: concurrent writes became siblings;
//! - a key whose last write was an acknowledged delete that had seen every
//!   acknowledged write, and none of whose writes failed, stays deleted.
//!
//! Invariant: the checker only reads the history; a failed check is a
//! panic naming the key and the write.

use std::collections::BTreeMap;

use eddy_object::{RiakObject, VersionVector};

/// An acknowledged put (`value`) or delete (`value: None`).
#[derive(Clone, Debug)]
pub struct Acked {
    /// The client's step (or any id unique to the attempt).
    pub step: usize,
    pub value: Option<Vec<u8>>,
    /// The object's version after the write (a delete: its context).
    pub vv: VersionVector,
    /// The context the client wrote with.
    pub context: VersionVector,
}

/// What the clients saw.
#[derive(Default, Debug)]
pub struct History {
    /// Per key: acknowledged puts and deletes, in acknowledgement order.
    pub acked: BTreeMap<String, Vec<Acked>>,
    /// Per key: the context of every write or delete attempted.
    pub attempted: BTreeMap<String, Vec<VersionVector>>,
    /// Keys a write or delete failed on (it may have been applied anyway).
    pub failed: BTreeMap<String, usize>,
    /// Per key: the latest context a client read.
    pub contexts: BTreeMap<String, VersionVector>,
}

impl History {
    /// Records one write or delete made with `context`: `acked` if it was
    /// acknowledged, `None` if it failed.
    pub fn attempt(&mut self, key: &str, context: Option<&VersionVector>, acked: Option<Acked>) {
        let context = context.cloned().unwrap_or_default();
        self.attempted.entry(key.into()).or_default().push(context);
        match acked {
            Some(a) => self.acked.entry(key.into()).or_default().push(a),
            None => *self.failed.entry(key.into()).or_default() += 1,
        }
    }

    /// The acknowledged writes of `key`.
    pub fn acked_count(&self, key: &str) -> usize {
        self.acked.get(key).map_or(0, Vec::len)
    }

    /// Checks `key` against its final state (`None`: no copy anywhere).
    /// Panics with the key and the write that broke a rule.
    pub fn check(&self, key: &str, merged: Option<&RiakObject>) {
        let merged_vv = merged.map(|o| o.vv.clone()).unwrap_or_default();
        self.check_read(key, &merged_vv, &live_values(merged));
    }

    /// Checks `key` against what a client read of its final state: the
    /// version `merged_vv` (its context) and the values of the siblings
    /// that are not tombstones (none: not found, or deleted). Panics as
    /// [`History::check`] does.
    pub fn check_read(&self, key: &str, merged_vv: &VersionVector, live: &[&[u8]]) {
        let acked = self.acked.get(key).map(Vec::as_slice).unwrap_or(&[]);
        let attempted = self.attempted.get(key).map(Vec::as_slice).unwrap_or(&[]);
        for a in acked {
            assert!(
                merged_vv.descends(&a.vv),
                "{key}: acknowledged {a:?} lost: final {merged_vv:?}"
            );
            let superseded = attempted.iter().any(|c| c.descends(&a.vv));
            if let (Some(value), false) = (&a.value, superseded) {
                assert!(
                    live.contains(&value.as_slice()),
                    "{key}: {a:?} neither superseded nor among the final siblings"
                );
            }
        }
        let never_failed = !self.failed.contains_key(key);
        if let Some(last) = acked.last()
            && last.value.is_none()
            && never_failed
            && acked
                .iter()
                .all(|a| last.context.descends(&a.vv) || a.step == last.step)
        {
            assert!(live.is_empty(), "{key}: deleted but back: {live:?}");
        }
    }
}

/// The values of the object's siblings that are not tombstones.
fn live_values(merged: Option<&RiakObject>) -> Vec<&[u8]> {
    merged
        .map(|o| {
            o.siblings
                .iter()
                .filter(|s| !s.content.meta.deleted)
                .map(|s| s.content.value.as_slice())
                .collect()
        })
        .unwrap_or_default()
}
