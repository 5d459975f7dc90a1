//! Kill -9 crash tests: a child process (this test binary re-executed, see
//! `eddy_storage::testkit::crash`) writes with sync on and is SIGKILLed at
//! random moments; after each kill the partition is reopened and verified:
//! every acknowledged write is there with its value.
//!
//! Memtables are tiny and values often exceed the separation threshold, so
//! kills land during flushes, compactions and blob-file writes too.

use std::path::Path;

use eddy_lsm::{LsmBackend, LsmConfig};
use eddy_storage::Backend;
use eddy_storage::testkit::crash::{child_main, run_kill_cycles};
use eddy_storage::testkit::{BackendFactory, OpenOptions};

struct SmallMemtables;

impl BackendFactory for SmallMemtables {
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Box<dyn Backend> {
        let config = LsmConfig {
            expiry_secs: opts.expiry_secs,
            clock: opts.clock.clone(),
            kv_separation_threshold_bytes: Some(1024),
            memtable_size_bytes: 256 * 1024,
            cache_size_bytes: 4 * 1024 * 1024,
            worker_threads: 1,
            ..LsmConfig::default()
        };
        Box::new(LsmBackend::open(dir, config).expect("open lsm backend"))
    }
}

/// The child half: writes until killed (a no-op in a normal test run).
#[test]
fn crash_child() {
    child_main(&SmallMemtables);
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let cycles = std::env::var("EDDY_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    run_kill_cycles(&SmallMemtables, cycles, 0x15a1_c0de);
}
