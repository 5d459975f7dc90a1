//! Factories shared by the bitcask integration tests.

#![allow(dead_code)]

use std::path::Path;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::testkit::{BackendFactory, OpenOptions};
use eddy_storage::{Backend, SyncPolicy};

/// Opens bitcask with small files so rollover and merge happen in tests.
pub struct SmallFiles {
    pub max_file_size_bytes: u64,
    pub compression: bool,
    pub merge_check_interval_ms: u64,
    pub sync: SyncPolicy,
}

impl Default for SmallFiles {
    fn default() -> Self {
        SmallFiles {
            max_file_size_bytes: 16 * 1024,
            compression: false,
            merge_check_interval_ms: 0,
            sync: SyncPolicy::None,
        }
    }
}

impl SmallFiles {
    pub fn config(&self, opts: &OpenOptions) -> BitcaskConfig {
        BitcaskConfig {
            max_file_size_bytes: self.max_file_size_bytes,
            compression: self.compression,
            merge_check_interval_ms: self.merge_check_interval_ms,
            sync: self.sync,
            expiry_secs: opts.expiry_secs,
            clock: opts.clock.clone(),
            // Merge eagerly: any dead byte triggers and every file qualifies.
            frag_merge_trigger: 1,
            frag_threshold: 1,
            ..BitcaskConfig::default()
        }
    }
}

impl BackendFactory for SmallFiles {
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Box<dyn Backend> {
        Box::new(Bitcask::open(dir, self.config(opts)).expect("open bitcask"))
    }
}

/// Like [`SmallFiles`], but merges (forced) right after every open, so the
/// suite's reopens exercise merge output and hint files.
pub struct MergeOnOpen(pub SmallFiles);

impl BackendFactory for MergeOnOpen {
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Box<dyn Backend> {
        let b = Bitcask::open(dir, self.0.config(opts)).expect("open bitcask");
        b.merge(true).expect("merge after open");
        Box::new(b)
    }
}
