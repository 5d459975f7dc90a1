//! What this node's backends report of their term indexes' memory, summed
//! over its vnodes for `/stats`.
//!
//! bitcask keeps its term index in memory and reports `index_entries`,
//! `index_memory_bytes`, `index_memory_max` (bytes, or `off`) and
//! `index_writes_refused` among its status figures (a multi backend
//! prefixes them with the sub-backend's name: `bitcask.index_entries`).
//! Backends that keep their index on disk report none, and count nothing.

use eddy_storage::BackendStatus;

use crate::node::Node;

/// The term indexes of this node's vnodes, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexMemory {
    /// Index entries held in memory.
    pub entries: u64,
    /// Their estimated memory, in bytes.
    pub bytes: u64,
    /// The sum of the bounds of the indexes that have one.
    pub max_bytes: u64,
    /// Writes refused because an index would have outgrown its bound.
    pub writes_refused: u64,
    /// Indexes over their bound now (loaded so at open, or by replay):
    /// they refuse writes that add entries until they shrink.
    pub over_limit: u64,
}

impl IndexMemory {
    /// Adds the figures of one backend's status.
    pub fn absorb(&mut self, status: &BackendStatus) {
        let figure = |name: &str| -> Vec<u64> {
            status
                .extra
                .iter()
                .filter(|(n, _)| {
                    n == name || n.strip_suffix(name).is_some_and(|p| p.ends_with('.'))
                })
                .filter_map(|(_, v)| v.parse().ok())
                .collect()
        };
        let bytes = figure("index_memory_bytes");
        let max = figure("index_memory_max");
        self.entries += figure("index_entries").iter().sum::<u64>();
        self.bytes += bytes.iter().sum::<u64>();
        self.max_bytes += max.iter().sum::<u64>();
        self.writes_refused += figure("index_writes_refused").iter().sum::<u64>();
        // A multi backend has at most one bitcask, so bytes and bound pair up.
        if let ([b], [m]) = (bytes.as_slice(), max.as_slice())
            && b > m
        {
            self.over_limit += 1;
        }
    }
}

impl Node {
    /// The term indexes of the vnodes this node runs, summed (a vnode whose
    /// backend cannot report is left out).
    pub fn index_memory(&self) -> IndexMemory {
        let mut total = IndexMemory::default();
        for v in self.local_vnodes() {
            if let Ok(status) = v.backend().status() {
                total.absorb(&status);
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(pairs: &[(&str, &str)]) -> BackendStatus {
        BackendStatus {
            extra: pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..BackendStatus::default()
        }
    }

    #[test]
    fn figures_of_plain_and_multi_backends_are_summed() {
        let mut total = IndexMemory::default();
        total.absorb(&status(&[
            ("keydir_bytes", "999"),
            ("index_entries", "3"),
            ("index_memory_bytes", "900"),
            ("index_memory_max", "1000"),
            ("index_writes_refused", "1"),
        ]));
        total.absorb(&status(&[
            ("bitcask.index_entries", "5"),
            ("bitcask.index_memory_bytes", "1500"),
            ("bitcask.index_memory_max", "1000"),
            ("bitcask.index_writes_refused", "0"),
            ("lsm.aux_entries_approx", "7"),
            ("other_index_entries", "100"),
        ]));
        total.absorb(&status(&[
            ("index_entries", "2"),
            ("index_memory_bytes", "600"),
            ("index_memory_max", "off"),
        ]));
        let expected = IndexMemory {
            entries: 10,
            bytes: 3000,
            max_bytes: 2000,
            writes_refused: 1,
            over_limit: 1,
        };
        assert_eq!(total, expected);
    }
}
