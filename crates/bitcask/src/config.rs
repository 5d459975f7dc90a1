//! Settings of one bitcask instance, with Riak's defaults.
//!
//! Invariant: a config accepted by [`BitcaskConfig::validate`] keeps every
//! record offset inside a `u32` (files never start a record at or beyond
//! 4 GiB), which the keydir relies on.

use std::sync::Arc;
use std::time::Duration;

use eddy_storage::{Clock, StorageError, SyncPolicy, SystemClock};

/// When the background thread may start a merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeWindow {
    /// At any hour.
    Always,
    /// Never (explicit [`crate::Bitcask::merge`] calls still run).
    Never,
    /// From hour `start` to hour `end`, inclusive, in UTC, wrapping past
    /// midnight when `start > end` (Riak's `{Start, End}`).
    Hours { start: u8, end: u8 },
}

impl MergeWindow {
    /// True when a merge may start at `now_secs` (Unix seconds, UTC).
    pub fn admits(&self, now_secs: u64) -> bool {
        let hour = ((now_secs / 3600) % 24) as u8;
        match *self {
            MergeWindow::Always => true,
            MergeWindow::Never => false,
            MergeWindow::Hours { start, end } if start <= end => (start..=end).contains(&hour),
            MergeWindow::Hours { start, end } => hour >= start || hour <= end,
        }
    }
}

/// Settings of one bitcask instance. `Default` gives Riak's defaults.
#[derive(Clone, Debug)]
pub struct BitcaskConfig {
    /// Roll the active file over once it would grow beyond this (≤ 4 GiB).
    pub max_file_size_bytes: u64,
    /// When writes are synced: with `None` only writes that ask for it
    /// (`WriteOptions::sync`) and `sync()` calls wait for a sync, and files
    /// closed by rollover are synced by a background thread; with
    /// `Interval` a background thread also syncs every `sync_interval`;
    /// with `OSync` every write waits for a sync shared with concurrent
    /// writers.
    pub sync: SyncPolicy,
    /// The period of the `Interval` policy's background sync (at least
    /// 1 ms).
    pub sync_interval: Duration,
    /// Instance-wide time to live in seconds (0 = none).
    pub expiry_secs: u64,
    /// Store values lz4-compressed when that makes them smaller.
    pub compression: bool,
    /// Merge when some file's dead fraction reaches this percentage.
    pub frag_merge_trigger: u8,
    /// Merge when some file holds this many dead bytes.
    pub dead_bytes_merge_trigger: u64,
    /// Once merging, include files at least this percentage dead.
    pub frag_threshold: u8,
    /// Once merging, include files with at least this many dead bytes.
    pub dead_bytes_threshold: u64,
    /// Once merging, include files smaller than this.
    pub small_file_threshold: u64,
    /// Hours in which the background thread may merge.
    pub merge_window: MergeWindow,
    /// How often the background thread checks merge triggers (0 = never).
    pub merge_check_interval_ms: u64,
    /// Time source for timestamps, expiry and the merge window.
    pub clock: Arc<dyn Clock>,
}

/// 1 MiB.
const MIB: u64 = 1024 * 1024;

impl Default for BitcaskConfig {
    fn default() -> Self {
        BitcaskConfig {
            max_file_size_bytes: 2048 * MIB,
            sync: SyncPolicy::None,
            sync_interval: Duration::from_secs(1),
            expiry_secs: 0,
            compression: false,
            frag_merge_trigger: 60,
            dead_bytes_merge_trigger: 512 * MIB,
            frag_threshold: 40,
            dead_bytes_threshold: 128 * MIB,
            small_file_threshold: 10 * MIB,
            merge_window: MergeWindow::Always,
            merge_check_interval_ms: 180_000,
            clock: Arc::new(SystemClock),
        }
    }
}

impl BitcaskConfig {
    /// Rejects settings the on-disk format or the merge logic cannot honour.
    pub fn validate(&self) -> Result<(), StorageError> {
        let bad = |msg: &str| Err(StorageError::Config(msg.to_string()));
        if self.max_file_size_bytes < 1024 || self.max_file_size_bytes > u32::MAX as u64 {
            return bad("max_file_size_bytes must be between 1 KiB and 4 GiB");
        }
        if self.frag_merge_trigger > 100 || self.frag_threshold > 100 {
            return bad("frag_merge_trigger and frag_threshold are percentages (0..=100)");
        }
        if let MergeWindow::Hours { start, end } = self.merge_window
            && (start > 23 || end > 23)
        {
            return bad("merge_window hours must be 0..=23");
        }
        if self.sync == SyncPolicy::Interval && self.sync_interval < Duration::from_millis(1) {
            return bad("sync interval must be at least 1 ms");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_hours_wrap_past_midnight() {
        let w = MergeWindow::Hours { start: 22, end: 2 };
        assert!(w.admits(23 * 3600));
        assert!(w.admits(3600));
        assert!(!w.admits(12 * 3600));
        let day = MergeWindow::Hours { start: 9, end: 17 };
        assert!(day.admits(9 * 3600) && day.admits(17 * 3600 + 59));
        assert!(!day.admits(18 * 3600));
    }

    #[test]
    fn defaults_are_riaks_and_valid() {
        let c = BitcaskConfig::default();
        assert_eq!(c.max_file_size_bytes, 2 << 30);
        assert_eq!(c.dead_bytes_merge_trigger, 512 << 20);
        assert!(c.validate().is_ok());
    }
}
