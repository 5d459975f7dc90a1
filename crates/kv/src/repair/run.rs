//! Partition repair: rebuild marked partitions from the other replicas.
//!
//! One pass folds the keys of every partition (on one node the replicas of
//! a marked partition's keys are the partitions beside it; which ones
//! depends on each bucket's n_val). For each key whose preflist includes a
//! partition being repaired, the key is handled once, at the first
//! partition of its preflist that holds it: each marked replica in the
//! preflist is set, under its key lock, to the merge of the healthy
//! replicas' copies, or loses the key if no healthy replica holds it
//! (it may be a delete the damage undid). A key all of whose replicas are
//! marked is merged from the copies another replica corroborates (see
//! [`corroborated`]). Then each repaired backend is synced and its mark
//! cleared.

use std::sync::atomic::Ordering;

use eddy_object::{RiakObject, merge};
use eddy_ring::Partition;
use eddy_storage::{FoldControl, FoldOptions};

use super::RepairError;
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::error::Signal;
use eddy_model::request::BucketRef;
use eddy_vnode::damage::KeyRepair;
use eddy_vnode::msg::StorageKey;

/// What one repair did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairSummary {
    /// The partitions repaired (their marks are cleared).
    pub partitions: Vec<u32>,
    /// Keys whose preflist includes a repaired partition.
    pub keys: u64,
    /// Copies replaced by the healthy replicas' value.
    pub copied: u64,
    /// Copies removed because no healthy replica held the key.
    pub removed: u64,
    /// Keys left unrepaired because a replica could not be read or
    /// written (their partitions stay marked).
    pub failed: u64,
}

/// Removes the claimed partitions from the running set when dropped.
struct Claim<'a> {
    node: &'a Node,
    partitions: Vec<u32>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut running = self.node.repair.running.lock();
        for p in &self.partitions {
            running.remove(p);
        }
        let n = self.partitions.len() as u64;
        self.node
            .repair
            .counters
            .running
            .fetch_sub(n, Ordering::Relaxed);
    }
}

impl Node {
    /// Repairs the marked partitions among `targets` (all marked ones when
    /// empty) and clears their marks. Blocking: run it on its own thread.
    pub fn repair_partitions(&self, targets: &[Partition]) -> Result<RepairSummary, RepairError> {
        let claim = self.claim(targets)?;
        let targets: Vec<Partition> = claim.partitions.iter().map(|p| Partition(*p)).collect();
        let mut summary = RepairSummary::default();
        if targets.is_empty() {
            return Ok(summary);
        }
        tracing::info!(partitions = ?claim.partitions, "partition repair started");
        match self.repair_pass(&targets, &mut summary) {
            Ok(()) => {
                summary.partitions = claim.partitions.clone();
                tracing::info!(
                    partitions = ?summary.partitions,
                    keys = summary.keys,
                    copied = summary.copied,
                    removed = summary.removed,
                    "partition repair finished"
                );
                Ok(summary)
            }
            Err(e) => {
                self.repair
                    .counters
                    .failed_total
                    .fetch_add(1, Ordering::Relaxed);
                tracing::error!(partitions = ?claim.partitions, "partition repair failed: {e}");
                Err(e)
            }
        }
    }

    /// Claims the marked partitions among `targets` (or all marked ones).
    fn claim(&self, targets: &[Partition]) -> Result<Claim<'_>, RepairError> {
        for p in targets {
            self.handle_of(*p)?;
        }
        let wanted: Vec<u32> = match targets.is_empty() {
            true => self.damaged_partitions().iter().map(|p| p.0).collect(),
            false => targets
                .iter()
                .filter(|p| self.is_marked(**p))
                .map(|p| p.0)
                .collect(),
        };
        let mut running = self.repair.running.lock();
        if let Some(busy) = wanted.iter().find(|p| running.contains(p)) {
            return Err(RepairError::AlreadyRunning(*busy));
        }
        running.extend(wanted.iter().copied());
        let c = &self.repair.counters;
        c.running.fetch_add(wanted.len() as u64, Ordering::Relaxed);
        Ok(Claim {
            node: self,
            partitions: wanted,
        })
    }

    fn repair_pass(
        &self,
        targets: &[Partition],
        summary: &mut RepairSummary,
    ) -> Result<(), RepairError> {
        for v in self.local_vnodes() {
            let q = v.partition;
            let mut keys = Vec::new();
            v.backend()
                .fold_keys(&FoldOptions::all(), &mut |bucket, key| {
                    // A segmented value is repaired whole, through its root.
                    if eddy_model::request::segments_owner(bucket).is_some() {
                        return FoldControl::Continue;
                    }
                    keys.push(StorageKey {
                        bucket: bucket.to_vec(),
                        key: key.to_vec(),
                    });
                    FoldControl::Continue
                })
                .map_err(KvError::from)?;
            for key in keys {
                self.repair_key(q, &key, targets, summary)?;
            }
        }
        if summary.failed > 0 {
            return Err(RepairError::KeysFailed(summary.failed));
        }
        for p in targets {
            let v = self.handle_of(*p)?;
            v.stores().sync().map_err(KvError::from)?;
            v.clear_damage().map_err(|source| RepairError::Marker {
                partition: p.0,
                source,
            })?;
            let c = &self.repair.counters;
            c.completed_total.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Repairs `key` (found at partition `q`) on the targets in its
    /// preflist, if `q` is the first replica holding it. A replica that
    /// cannot be read or written leaves the key unrepaired (counted in
    /// `summary.failed`) and the pass goes on with the next key; only a
    /// node shutting down stops it.
    fn repair_key(
        &self,
        q: Partition,
        key: &StorageKey,
        targets: &[Partition],
        summary: &mut RepairSummary,
    ) -> Result<(), RepairError> {
        let Some(preflist) = self.preflist_of(key) else {
            return Ok(());
        };
        let here: Vec<Partition> = preflist
            .iter()
            .copied()
            .filter(|p| targets.contains(p))
            .collect();
        if here.is_empty() || self.first_holder(&preflist, key) != Some(q) {
            return Ok(());
        }
        summary.keys += 1;
        let c = &self.repair.counters;
        c.keys_total.fetch_add(1, Ordering::Relaxed);
        let ttl_secs = self.write_policy_of(&key.bucket).map_or(0, |p| p.ttl_secs);
        for t in here {
            let outcome = self
                .replica(t)
                .and_then(|v| v.repair_key(key, ttl_secs, || self.healthy_value(&preflist, key)));
            match outcome {
                Ok(KeyRepair::Unchanged) => {}
                Ok(KeyRepair::Copied) => {
                    summary.copied += 1;
                    c.keys_copied_total.fetch_add(1, Ordering::Relaxed);
                }
                Ok(KeyRepair::Removed) => {
                    summary.removed += 1;
                    c.keys_removed_total.fetch_add(1, Ordering::Relaxed);
                }
                Err(KvError::ShuttingDown) => return Err(KvError::ShuttingDown.into()),
                Err(e) => {
                    tracing::warn!(partition = t.0, "repairing a key failed: {e}");
                    summary.failed += 1;
                    c.keys_failed_total.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }

    /// The partitions a stored key belongs on, by its bucket's n_val;
    /// `None` for a bucket that is no longer valid.
    fn preflist_of(&self, key: &StorageKey) -> Option<Vec<Partition>> {
        let bucket = BucketRef::from_storage_bucket(&key.bucket)?;
        let props = self
            .registry
            .bucket_props_shared(&bucket.bucket_type, &bucket.bucket)
            .ok()?;
        let hash = Node::key_hash(&bucket, &key.key);
        let ring = self.ring_now();
        let list = ring.preflist(hash, props.n_val);
        Some(list.into_iter().map(|(p, _)| p).collect())
    }

    /// The first replica holding `key`; one whose copy cannot be read
    /// holds something (it was folded), so it counts.
    fn first_holder(&self, preflist: &[Partition], key: &StorageKey) -> Option<Partition> {
        preflist.iter().copied().find(|p| {
            let got = self
                .replica(*p)
                .and_then(|v| Ok(v.backend().get(&key.bucket, &key.key)?));
            !matches!(got, Ok(None))
        })
    }

    /// The merge of the unmarked replicas' copies of `key`. When every
    /// replica is marked, of the copies another replica corroborates.
    fn healthy_value(
        &self,
        preflist: &[Partition],
        key: &StorageKey,
    ) -> Result<Option<RiakObject>, KvError> {
        let healthy: Vec<Partition> = preflist
            .iter()
            .copied()
            .filter(|p| !self.is_marked(*p))
            .collect();
        if healthy.is_empty() {
            let copies = self.copies(preflist, key)?;
            return Ok(merge_all(corroborated(&copies, preflist.len())));
        }
        let copies = self.copies(&healthy, key)?;
        Ok(merge_all(copies.iter().flatten()))
    }

    /// Each replica's copy of `key`, in preflist order.
    fn copies(
        &self,
        replicas: &[Partition],
        key: &StorageKey,
    ) -> Result<Vec<Option<RiakObject>>, KvError> {
        replicas
            .iter()
            .map(|p| self.replica(*p)?.read(key))
            .collect()
    }

    /// Partition `p`'s vnode on this node: repair reads and writes local
    /// replicas only.
    fn replica(&self, p: Partition) -> Result<eddy_vnode::VnodeHandle, KvError> {
        self.vnode(p).ok_or(KvError::Signal(Signal::NotHosted(p.0)))
    }
}

/// With every replica damaged, a copy is trusted only if another replica's
/// copy has seen everything it holds: damage rarely hits one key in two
/// partitions, so a value (or undone delete) that only one damaged replica
/// shows is the damage's work. With a single replica there is no second
/// opinion and its copy stands.
fn corroborated(
    copies: &[Option<RiakObject>],
    replicas: usize,
) -> impl Iterator<Item = &RiakObject> {
    copies.iter().enumerate().filter_map(move |(i, c)| {
        let c = c.as_ref()?;
        let seen = copies
            .iter()
            .enumerate()
            .any(|(j, o)| j != i && o.as_ref().is_some_and(|o| merge::descends(o, c)));
        (seen || replicas == 1).then_some(c)
    })
}

fn merge_all<'a>(copies: impl Iterator<Item = &'a RiakObject>) -> Option<RiakObject> {
    copies.fold(None, |merged, o| {
        Some(match merged {
            Some(m) if m == *o => m,
            Some(m) => merge::merge(&m, o),
            None => o.clone(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::{Actor, Content};

    fn written(values: &[&str]) -> RiakObject {
        let mut o = RiakObject::default();
        for v in values {
            let ctx = o.vv.clone();
            merge::update(&mut o, &ctx, Actor(1), Content::new(v.as_bytes().to_vec()));
        }
        o
    }

    #[test]
    fn with_every_replica_damaged_only_corroborated_copies_count() {
        let (old, new) = (written(&["a"]), written(&["a", "b"]));
        // One replica lost the latest value: the other two agree on it.
        let copies = [Some(old.clone()), Some(new.clone()), Some(new.clone())];
        assert_eq!(merge_all(corroborated(&copies, 3)), Some(new.clone()));
        // One replica lost a reaped delete: nobody backs its value.
        let copies = [Some(new.clone()), None, None];
        assert_eq!(merge_all(corroborated(&copies, 3)), None);
        // A single replica is its own witness.
        let copies = [Some(old.clone())];
        assert_eq!(merge_all(corroborated(&copies, 1)), Some(old));
    }
}
