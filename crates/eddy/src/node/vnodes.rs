//! Which vnodes the node runs and what each is made of.
//!
//! At start the node runs a vnode for every partition the ring gives it
//! and for every partition directory it holds (a fallback's or a handoff
//! receiver's data not yet handed on). While it runs, [`Factory`] opens
//! the vnodes it starts (a fallback taking a down primary's writes, a
//! handoff receiver): a fresh directory, a fresh actor and a fresh
//! incarnation.
//!
//! Invariants: a vnode's incarnation is stored beside its data
//! (`partitions/P/incarnation`; a directory without one is the partition's
//! first incarnation) and a new one is random, so an incarnation the
//! commit log says was dropped is never reused; a vnode the log says was
//! dropped has its directory destroyed (crash-atomically) before the node
//! serves.

use std::collections::BTreeSet;
use std::sync::Arc;

use eddy_kv::{Node, VnodeFactory, VnodeParts};
use eddy_ring::{NodeName, Partition, Ring};
use eddy_vnode::commitlog::FIRST_INCARNATION;

use super::datadir::{self, DataDirError};
use super::storage::Storage;

const INCARNATION: &str = "incarnation";

/// The partitions to run vnodes for at start: those `me` owns in `ring`,
/// and those whose directory exists.
pub fn hosted(ring: &Ring, me: &NodeName, storage: &Storage) -> Vec<Partition> {
    let mut hosted: BTreeSet<Partition> = ring.owned_by(me).into_iter().collect();
    for p in ring.partitions() {
        if storage.partition_dir(p).exists() {
            hosted.insert(p);
        }
    }
    hosted.into_iter().collect()
}

/// Partition `p`'s incarnation as stored beside its data.
pub fn incarnation(storage: &Storage, p: Partition) -> u64 {
    datadir::read_id(&storage.partition_dir(p), INCARNATION).unwrap_or(FIRST_INCARNATION)
}

/// Destroys the data of the vnodes the node left out because the commit
/// log says they were dropped (a crash between the drop and the destroy).
pub fn destroy_dropped(node: &Node, storage: &Storage) -> Result<(), eddy_storage::StorageError> {
    for (p, incarnation) in node.dropped_at_start() {
        tracing::info!(
            partition = p.0,
            incarnation,
            "destroying a dropped vnode's data"
        );
        eddy_storage::destroy::destroy_dir(&storage.partition_dir(*p))?;
        storage.destroy_side(*p)?;
    }
    Ok(())
}

/// Opens vnodes started while the node runs.
pub struct Factory {
    pub storage: Arc<Storage>,
}

impl VnodeFactory for Factory {
    fn open(&self, p: Partition) -> Result<VnodeParts, String> {
        let dir = self.storage.partition_dir(p);
        let incarnation = loop {
            let id = rand::random::<u64>();
            if id != FIRST_INCARNATION {
                break id;
            }
        };
        let text = |e: DataDirError| e.to_string();
        datadir::write_id(&dir, INCARNATION, incarnation).map_err(text)?;
        let actor = datadir::fresh_actor(&dir, p).map_err(text)?;
        let backend = self.storage.open(p).map_err(|e| e.to_string())?;
        let side = (self.storage)
            .open_side(p, incarnation, &backend)
            .map_err(|e| e.to_string())?;
        Ok(VnodeParts {
            backend,
            side,
            actor,
            incarnation,
        })
    }
}
