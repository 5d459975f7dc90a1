//! What a backend found damaged when it was opened.
//!
//! Engines that rebuild their state from files (bitcask) skip records whose
//! checksums fail and cut torn tails; this is the engine-neutral summary of
//! that, which the node logs at start, counts in `/stats`, and uses to mark
//! a partition for repair. A backend without such a recovery reports
//! [`RecoveryReport::default`], which is clean.

use std::path::PathBuf;

/// The damage one backend instance's open found and worked around.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Damaged byte ranges skipped (records inside them were not loaded).
    pub ranges_skipped: u64,
    /// Bytes in the skipped ranges.
    pub bytes_skipped: u64,
    /// Torn tails cut off (their records were not loaded).
    pub tails_truncated: u64,
    /// Bytes cut off by those truncations.
    pub bytes_truncated: u64,
    /// Data files not loaded at all (unreadable header).
    pub files_rejected: u64,
    /// Index (hint) files that failed validation; their data was read
    /// from the data files instead, so nothing was lost.
    pub hints_rejected: u64,
    /// The files the damage above was found in, each once.
    pub files: Vec<PathBuf>,
}

impl RecoveryReport {
    /// True when records may have been lost: something was skipped, cut
    /// or left unloaded. A rejected hint file alone loses nothing.
    pub fn lost_records(&self) -> bool {
        self.ranges_skipped > 0 || self.tails_truncated > 0 || self.files_rejected > 0
    }

    /// Adds `other`'s counts and files to this one (a `multi` backend's
    /// sub-backends).
    pub fn absorb(&mut self, other: RecoveryReport) {
        self.ranges_skipped += other.ranges_skipped;
        self.bytes_skipped += other.bytes_skipped;
        self.tails_truncated += other.tails_truncated;
        self.bytes_truncated += other.bytes_truncated;
        self.files_rejected += other.files_rejected;
        self.hints_rejected += other.hints_rejected;
        for f in other.files {
            if !self.files.contains(&f) {
                self.files.push(f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lost_records_count_as_damage() {
        let mut r = RecoveryReport {
            hints_rejected: 2,
            ..RecoveryReport::default()
        };
        assert!(!r.lost_records());
        r.absorb(RecoveryReport {
            tails_truncated: 1,
            bytes_truncated: 10,
            files: vec!["a".into()],
            ..RecoveryReport::default()
        });
        r.absorb(RecoveryReport {
            files: vec!["a".into(), "b".into()],
            ..RecoveryReport::default()
        });
        assert!(r.lost_records());
        assert_eq!((r.bytes_truncated, r.files.len()), (10, 2));
    }
}
