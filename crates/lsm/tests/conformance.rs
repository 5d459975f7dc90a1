//! The lsm backend against the shared conformance suite, standalone and as
//! one partition of a shared environment.

use std::path::Path;

use eddy_lsm::{LsmBackend, LsmConfig, LsmEnv};
use eddy_storage::Backend;
use eddy_storage::testkit::{BackendFactory, OpenOptions, run_conformance};

fn config(opts: &OpenOptions) -> LsmConfig {
    LsmConfig {
        expiry_secs: opts.expiry_secs,
        clock: opts.clock.clone(),
        // Small enough that the suite's larger values go to blob files.
        kv_separation_threshold_bytes: Some(256),
        cache_size_bytes: 8 * 1024 * 1024,
        worker_threads: 1,
        ..LsmConfig::default()
    }
}

struct Standalone;

impl BackendFactory for Standalone {
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Box<dyn Backend> {
        Box::new(LsmBackend::open(dir, config(opts)).expect("open lsm backend"))
    }
}

#[test]
fn lsm_conforms() {
    run_conformance(&Standalone);
}

/// A partition of a node-wide environment, as a vnode would open it; the
/// environment lives as long as the partition does.
struct SharedEnvPartition;

impl BackendFactory for SharedEnvPartition {
    fn open(&self, dir: &Path, opts: &OpenOptions) -> Box<dyn Backend> {
        let env = LsmEnv::open(dir, &config(opts)).expect("open lsm env");
        Box::new(
            env.open_partition("1370157784997721485815954530671515330927436759040")
                .expect("open partition"),
        )
    }
}

#[test]
fn lsm_partition_in_shared_env_conforms() {
    run_conformance(&SharedEnvPartition);
}
