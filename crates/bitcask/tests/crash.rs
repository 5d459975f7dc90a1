//! Kill -9 crash tests: a child writer with sync on is SIGKILLed at random
//! moments; after each kill the instance is reopened and verified.

mod common;

use common::SmallFiles;
use eddy_storage::testkit::crash::{child_main, run_kill_cycles};

fn factory() -> SmallFiles {
    SmallFiles {
        max_file_size_bytes: 64 * 1024,
        merge_check_interval_ms: 20,
        ..SmallFiles::default()
    }
}

/// The child half: writes until killed (a no-op in a normal test run).
#[test]
fn crash_child() {
    child_main(&factory());
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let cycles = std::env::var("EDDY_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    run_kill_cycles(&factory(), cycles, 0xb17c_a5c0);
}
