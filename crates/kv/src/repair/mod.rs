//! Damaged partitions: marking them at start, and partition repair
//! (Riak's `riak_kv_vnode:repair`), design note 009.
//!
//! At start every partition whose backend's recovery lost records, or whose
//! durable marker ([`marker`]) survives from an earlier start, is marked.
//! While marked, gets read around it ([`around`]) and puts are coordinated
//! by the first unmarked replica. Repair ([`run`]) rebuilds a marked
//! partition from the other replicas of each of its keys and then clears
//! the mark.
//!
//! Invariants:
//! - a marked partition's reply never adds to a get's answer what the
//!   healthy replicas have not seen, while one healthy replica answered;
//! - a mark is cleared only after every key of the partition was repaired
//!   and the backend synced;
//! - at most one repair runs per partition at a time.

pub mod around;
mod run;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

use eddy_storage::RecoveryReport;

use crate::node::Node;
use eddy_model::error::KvError;

pub use eddy_ring::Partition;
pub use run::RepairSummary;

/// Repair counters for `/stats`.
#[derive(Debug, Default)]
pub struct RepairCounters {
    /// Partitions being repaired now.
    pub running: AtomicU64,
    /// Partitions repaired since start.
    pub completed_total: AtomicU64,
    /// Repairs that stopped on an error (their partitions stay marked).
    pub failed_total: AtomicU64,
    /// Keys examined by repairs.
    pub keys_total: AtomicU64,
    /// Keys whose copy was replaced by the healthy replicas' value.
    pub keys_copied_total: AtomicU64,
    /// Keys removed because no healthy replica held them.
    pub keys_removed_total: AtomicU64,
    /// Keys a repair could not repair (a replica unreadable or unwritable).
    pub keys_failed_total: AtomicU64,
}

/// The node's repair bookkeeping.
#[derive(Debug, Default)]
pub struct RepairState {
    pub counters: RepairCounters,
    /// Partitions a repair is working on.
    running: parking_lot::Mutex<BTreeSet<u32>>,
}

/// Why a repair could not run or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RepairError {
    /// The partition is not on this node's ring.
    #[error("partition {0} is not on this node's ring")]
    NoSuchPartition(u32),
    /// A repair of the partition is already running.
    #[error("partition {0} is already being repaired")]
    AlreadyRunning(u32),
    /// Reading or writing a replica failed.
    #[error(transparent)]
    Kv(#[from] KvError),
    /// Some keys could not be repaired; the partitions stay marked.
    #[error("{0} keys could not be repaired (see the log); the partitions stay marked")]
    KeysFailed(u64),
    /// The marker file could not be removed.
    #[error("removing the repair marker of partition {partition}: {source}")]
    Marker {
        partition: u32,
        #[source]
        source: std::io::Error,
    },
}

/// What the partitions' recoveries found, summed, for `/stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryTotals {
    /// Partitions whose recovery lost records.
    pub damaged_partitions: u64,
    /// Every partition's report, summed.
    pub report: RecoveryReport,
}

impl Node {
    /// Marks partitions whose recovery lost records, or whose marker is
    /// still on disk (under `partitions_dir`), logging one warning per
    /// newly damaged partition. Called once, at start.
    pub(crate) fn mark_damaged_at_start(&self, partitions_dir: Option<&std::path::Path>) {
        for v in self.local_vnodes() {
            let p = v.partition;
            let report = v.backend().recovery_report();
            let path = partitions_dir.map(|d| eddy_vnode::marker::path(d, p));
            if eddy_vnode::marker::newly_damaged(path.as_deref(), &report) {
                let files: Vec<String> = report
                    .files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect();
                tracing::warn!(
                    partition = p.0,
                    "recovery lost records: {}; files: {}; partition marked for repair",
                    eddy_vnode::marker::describe(&report),
                    files.join(", ")
                );
                if let Some(path) = &path
                    && let Err(e) = eddy_vnode::marker::write(path, &report)
                {
                    tracing::error!(partition = p.0, "writing {}: {e}", path.display());
                }
                v.mark_damaged(path);
            } else if let Some(path) = path.filter(|p| p.exists()) {
                tracing::warn!(
                    partition = p.0,
                    "partition still needs repair ({})",
                    path.display()
                );
                v.mark_damaged(Some(path));
            }
        }
    }

    /// Marks partition `p` damaged (tests and tools; `marker` is its file).
    pub fn mark_damaged(&self, p: Partition, marker: Option<PathBuf>) -> Result<(), RepairError> {
        self.handle_of(p)?.mark_damaged(marker);
        Ok(())
    }

    /// The partitions marked damaged now.
    pub fn damaged_partitions(&self) -> Vec<Partition> {
        self.local_vnodes()
            .iter()
            .filter(|v| v.is_marked())
            .map(|v| v.partition)
            .collect()
    }

    /// What the partitions' recoveries found when they were opened.
    pub fn recovery_totals(&self) -> RecoveryTotals {
        let mut totals = RecoveryTotals::default();
        for v in self.local_vnodes() {
            let r = v.backend().recovery_report();
            totals.damaged_partitions += u64::from(r.lost_records());
            totals.report.absorb(r);
        }
        totals
    }

    /// Repairs `targets` (every marked partition when empty) on a thread
    /// of its own; the outcome is logged and counted in `/stats`.
    pub fn spawn_repair(self: &std::sync::Arc<Self>, targets: Vec<Partition>) {
        let node = self.clone();
        let started = std::thread::Builder::new()
            .name("eddy-repair".into())
            .spawn(move || {
                // Logged and counted by the repair itself.
                let _ = node.repair_partitions(&targets);
            });
        if let Err(e) = started {
            tracing::error!("cannot start partition repair: {e}");
        }
    }

    /// The repair counters.
    pub fn repair_counters(&self) -> &RepairCounters {
        &self.repair.counters
    }

    pub(crate) fn handle_of(&self, p: Partition) -> Result<eddy_vnode::VnodeHandle, RepairError> {
        self.vnode(p).ok_or(RepairError::NoSuchPartition(p.0))
    }

    /// True if this node runs partition `p`'s vnode and it is marked.
    pub(crate) fn is_marked(&self, p: Partition) -> bool {
        self.vnode(p).is_some_and(|v| v.is_marked())
    }
}
