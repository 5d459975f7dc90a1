//! Which actor id each partition's vnode coordinates writes as.
//!
//! A vnode counts its writes to a key in the key's version vector under its
//! actor id, starting from what its stored copy says. If the copy is lost
//! (a kill -9 or a machine crash took writes the commit log had not made
//! durable, damaged files, a memory backend restarted) the vnode would
//! count again from an old number and give a new write a dot (actor,
//! counter) that an older, different write already had; a client holding a
//! context that saw the older write would then replace the newer one, and
//! an acknowledged write would vanish (Riak's kv679).
//!
//! The rule: a partition keeps its actor only when nothing it held can
//! have been lost since the actor last counted. So it gets a fresh actor
//! when the data directory's last run did not end with a clean shutdown
//! ([`super::datadir::CLEAN_MARKER`] absent while partitions exist), when
//! its backend forgets data at every restart (memory, also inside multi),
//! and when its recovery lost records (the repair marker, design note 009).
//! A fresh data directory and a clean restart keep every actor.

use std::path::Path;

use eddy_object::Actor;
use eddy_ring::Partition;

use super::datadir::{DataDir, DataDirError};
use crate::config::settings::StorageBackend;

/// How the data directory's last run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LastRun {
    /// There was none that left partitions behind.
    Fresh,
    /// It shut down cleanly: everything it acknowledged is durable.
    Clean,
    /// It crashed, was killed, failed to shut down cleanly, or never
    /// finished starting.
    Unclean,
}

impl LastRun {
    /// Reads (and consumes) the clean-shutdown marker; call once at start,
    /// before any partition is opened.
    pub fn detect(datadir: &DataDir, partitions_dir: &Path) -> Result<LastRun, DataDirError> {
        if datadir.take_clean_marker()? {
            return Ok(LastRun::Clean);
        }
        match datadir.holds_partitions(partitions_dir)? {
            true => Ok(LastRun::Unclean),
            false => Ok(LastRun::Fresh),
        }
    }
}

/// Why partitions got a fresh actor at this start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// The last run did not shut down cleanly.
    UncleanStart,
    /// The backend keeps no data across a restart.
    ForgetfulBackend,
}

impl Renewal {
    fn describe(self) -> &'static str {
        match self {
            Renewal::UncleanStart => {
                "the last run did not shut down cleanly, so writes it counted may be lost"
            }
            Renewal::ForgetfulBackend => "the memory backend kept no data across the restart",
        }
    }
}

/// Gives each partition its actor as it is opened, and counts renewals.
pub struct Actors<'a> {
    datadir: &'a DataDir,
    /// Whether every partition must renew its actor, and why.
    renew_all: Option<Renewal>,
    renewed: u32,
}

impl<'a> Actors<'a> {
    /// The rule for a start after `last_run` with `backend`.
    pub fn new(datadir: &'a DataDir, last_run: LastRun, backend: StorageBackend) -> Self {
        let renew_all = match (last_run, backend.forgets_on_restart()) {
            (LastRun::Unclean, _) => Some(Renewal::UncleanStart),
            (LastRun::Clean, true) => Some(Renewal::ForgetfulBackend),
            (LastRun::Clean | LastRun::Fresh, _) => None,
        };
        Actors {
            datadir,
            renew_all,
            renewed: 0,
        }
    }

    /// Partition `p`'s actor; `lost_records` says its recovery lost
    /// records (it is then renewed whatever the last run was).
    pub fn actor(
        &mut self,
        partition_dir: &Path,
        p: Partition,
        lost_records: bool,
    ) -> Result<Actor, DataDirError> {
        if self.renew_all.is_none() && !lost_records {
            return self.datadir.actor(partition_dir, p);
        }
        if self.renew_all.is_some() {
            self.renewed += 1;
        }
        self.datadir.renew_actor(partition_dir, p)
    }

    /// Logs (once) how many partitions got a fresh actor for the whole
    /// start's reason, and returns that count.
    pub fn finish(self) -> u32 {
        if let Some(why) = self.renew_all {
            tracing::info!(
                partitions = self.renewed,
                "renewed the actor id of every partition: {}",
                why.describe()
            );
        }
        self.renewed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BACKENDS: [StorageBackend; 4] = [
        StorageBackend::Bitcask,
        StorageBackend::Lsm,
        StorageBackend::Memory,
        StorageBackend::Multi,
    ];

    /// Opens `n` partitions the way a start does and returns their actors
    /// and the renewal count.
    fn start(root: &Path, backend: StorageBackend, damaged: &[u32]) -> (LastRun, Vec<Actor>, u32) {
        let datadir = DataDir::lock(root).unwrap();
        let partitions = root.join("partitions");
        let last_run = LastRun::detect(&datadir, &partitions).unwrap();
        let mut actors = Actors::new(&datadir, last_run, backend);
        let ids = (0..4)
            .map(|p| {
                let dir = partitions.join(p.to_string());
                actors
                    .actor(&dir, Partition(p), damaged.contains(&p))
                    .unwrap()
            })
            .collect();
        (last_run, ids, actors.finish())
    }

    fn stop(root: &Path, clean: bool) {
        let datadir = DataDir::lock(root).unwrap();
        if clean {
            datadir.mark_clean().unwrap();
        }
    }

    #[test]
    fn actors_survive_only_clean_stops_of_backends_that_keep_data() {
        for backend in BACKENDS {
            for clean in [true, false] {
                let dir = tempfile::tempdir().unwrap();
                let (first, before, renewed) = start(dir.path(), backend, &[]);
                assert_eq!((first, renewed), (LastRun::Fresh, 0));
                stop(dir.path(), clean);
                let (second, after, renewed) = start(dir.path(), backend, &[]);
                let keeps = clean && !backend.forgets_on_restart();
                let expected = if clean {
                    LastRun::Clean
                } else {
                    LastRun::Unclean
                };
                assert_eq!(second, expected, "{backend:?}");
                for (b, a) in before.iter().zip(&after) {
                    assert_eq!(a == b, keeps, "{backend:?}, clean stop: {clean}");
                }
                assert_eq!(renewed, if keeps { 0 } else { 4 });
            }
        }
    }

    #[test]
    fn the_marker_counts_for_one_start_only() {
        let dir = tempfile::tempdir().unwrap();
        let (_, first, _) = start(dir.path(), StorageBackend::Bitcask, &[]);
        stop(dir.path(), true);
        let (_, second, _) = start(dir.path(), StorageBackend::Bitcask, &[]);
        assert_eq!(first, second);
        assert!(
            !dir.path()
                .join(super::super::datadir::CLEAN_MARKER)
                .exists()
        );
        // This run crashes: no marker is written.
        let (last_run, third, _) = start(dir.path(), StorageBackend::Bitcask, &[]);
        assert_eq!(last_run, LastRun::Unclean);
        assert!(second.iter().zip(&third).all(|(a, b)| a != b));
    }

    #[test]
    fn a_partition_that_lost_records_renews_after_a_clean_stop_too() {
        let dir = tempfile::tempdir().unwrap();
        let (_, before, _) = start(dir.path(), StorageBackend::Bitcask, &[]);
        stop(dir.path(), true);
        let (_, after, renewed) = start(dir.path(), StorageBackend::Bitcask, &[2]);
        assert_eq!(renewed, 0);
        for p in 0..4 {
            assert_eq!(before[p] == after[p], p != 2, "partition {p}");
        }
        let read_back = std::fs::read_to_string(dir.path().join("partitions/2/actor")).unwrap();
        assert_eq!(u64::from_str_radix(&read_back, 16).unwrap(), after[2].0);
    }
}
