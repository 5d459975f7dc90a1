//! The state on disk (`meta/cluster.json`): JSON with a format number,
//! replaced atomically: written to a temporary file beside it, fsynced,
//! renamed over the old one, and the directory fsynced, so a crash leaves
//! either the old state or the new one whole.
//!
//! Invariant: `load` returns only a state that satisfies the ring's and
//! the cluster's invariants; anything else is [`PersistError::Corrupt`].

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::PersistError;
use crate::state::ClusterState;

/// The format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct Saving<'a> {
    format: u32,
    state: &'a ClusterState,
}

#[derive(Deserialize)]
struct Loading {
    format: u32,
    state: ClusterState,
}

impl ClusterState {
    /// Writes the state to `path` atomically and durably.
    pub fn save(&self, path: &Path) -> Result<(), PersistError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PersistError::Io { path, source }
        };
        let saving = Saving {
            format: FORMAT_VERSION,
            state: self,
        };
        let bytes =
            serde_json::to_vec_pretty(&saving).map_err(|e| io(path)(std::io::Error::other(e)))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let tmp = path.with_extension("json.tmp");
        let mut file = File::create(&tmp).map_err(io(&tmp))?;
        file.write_all(&bytes).map_err(io(&tmp))?;
        file.sync_all().map_err(io(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io(path))?;
        let dir = dir.unwrap_or(Path::new("."));
        File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
    }

    /// Reads a state saved by [`ClusterState::save`]. `Ok(None)` when
    /// there is no file (a node that never saved one).
    pub fn load(path: &Path) -> Result<Option<ClusterState>, PersistError> {
        let corrupt = |reason: String| PersistError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                let path = path.to_path_buf();
                return Err(PersistError::Io { path, source });
            }
        };
        let loading: Loading =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if loading.format != FORMAT_VERSION {
            return Err(corrupt(format!(
                "format {} is not {FORMAT_VERSION}, the one this build reads",
                loading.format
            )));
        }
        loading.state.check().map_err(corrupt)?;
        Ok(Some(loading.state))
    }

    /// The invariants the ring's own checks do not cover: every node the
    /// ring names is a member, and exactly the pending transfers have a
    /// planning epoch, none later than the state's.
    fn check(&self) -> Result<(), String> {
        let ring = self.ring();
        let named = ring
            .partitions()
            .flat_map(|p| [Some(ring.owner(p)), ring.next_owner(p)]);
        if let Some(n) = named.flatten().find(|n| !self.members().contains_key(*n)) {
            return Err(format!("the ring names {n}, which is not a member"));
        }
        let pending: BTreeSet<_> = ring.pending().map(|t| t.partition).collect();
        let planned: BTreeSet<_> = self.ring.planned_at.keys().copied().collect();
        if pending != planned {
            return Err("planning epochs do not match the pending transfers".to_owned());
        }
        if self.ring.planned_at.values().any(|e| *e > self.epoch()) {
            return Err("a transfer is planned after the state's epoch".to_owned());
        }
        Ok(())
    }
}
