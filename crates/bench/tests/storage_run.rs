//! The storage driver run by the runner against the memory engine:
//! `eddy bench storage`'s phases (design note 023) count their requests,
//! write every key of a pass, find what they wrote, scan the index, end
//! when told, and a workload file cannot name the driver.

use std::sync::Arc;

use eddy_bench::driver::storage::StorageEngine;
use eddy_bench::ops::OpKind;
use eddy_bench::preset::storage::{self, KeyOrder, Requests, StoragePhase};
use eddy_bench::report::summary::Ending;
use eddy_bench::{BenchError, Output, RunOptions, RunOutcome, run_config};
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{Backend, FoldOptions};
use tokio::sync::Notify;

fn phase(requests: Requests, ops: Option<u64>, key_order: KeyOrder) -> StoragePhase {
    StoragePhase {
        engine: "memory".into(),
        requests,
        ops,
        workers: 2,
        keys: 300,
        key_order,
        value_size: 50,
        compressibility: 0.5,
        sync: false,
        seed: 7,
    }
}

fn run(engine: &Arc<dyn Backend>, p: &StoragePhase, until: Option<Arc<Notify>>) -> RunOutcome {
    let options = RunOptions {
        out: Output::None,
        threads: Some(p.workers),
        skip_probe: true,
        storage: Some(StorageEngine(engine.clone())),
        until,
        ..RunOptions::default()
    };
    run_config(&storage::storage(p), "storage test", &options).unwrap()
}

fn count(outcome: &RunOutcome, op: OpKind) -> u64 {
    outcome.totals[&op].latency_ns.len()
}

fn keys_stored(engine: &dyn Backend) -> usize {
    let mut n = 0;
    engine
        .fold_keys(&FoldOptions::default(), &mut |_, _| {
            n += 1;
            eddy_storage::FoldControl::Continue
        })
        .unwrap();
    n
}

fn memory() -> Arc<dyn Backend> {
    Arc::new(MemoryBackend::new(MemoryConfig::default()))
}

#[test]
fn a_write_pass_in_either_order_writes_every_key_once() {
    for order in [KeyOrder::Sequential, KeyOrder::Random] {
        let engine = memory();
        let write = Requests::Write { indexed: false };
        let outcome = run(&engine, &phase(write, Some(300), order), None);
        assert_eq!(count(&outcome, OpKind::Put), 300, "{order:?}");
        assert_eq!(outcome.summary.ending, Ending::OpsDone);
        assert_eq!(keys_stored(engine.as_ref()), 300, "{order:?}");
        let reads = Requests::Mixed { read_percent: 100 };
        let outcome = run(&engine, &phase(reads, Some(1001), order), None);
        assert_eq!(count(&outcome, OpKind::Get), 1001);
        assert!(outcome.summary.errors_by_kind().is_empty());
    }
}

#[test]
fn reads_of_keys_never_written_are_errors() {
    let engine = memory();
    let reads = Requests::Mixed { read_percent: 100 };
    let outcome = run(&engine, &phase(reads, Some(10), KeyOrder::Random), None);
    assert_eq!(outcome.summary.errors_by_kind()["not_found"], 10);
}

#[test]
fn scans_count_one_request_each_over_the_whole_index() {
    let engine = memory();
    let load = Requests::Write { indexed: true };
    run(&engine, &phase(load, Some(300), KeyOrder::Sequential), None);
    let outcome = run(
        &engine,
        &phase(Requests::Scan, Some(4), KeyOrder::Sequential),
        None,
    );
    assert_eq!(count(&outcome, OpKind::IndexQuery), 4);
    assert!(outcome.summary.errors_by_kind().is_empty());
}

#[test]
fn a_phase_without_ops_ends_when_told() {
    let engine = memory();
    run(
        &engine,
        &phase(
            Requests::Write { indexed: false },
            Some(300),
            KeyOrder::Sequential,
        ),
        None,
    );
    let done = Arc::new(Notify::new());
    let teller = done.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        teller.notify_one();
    });
    let reads = Requests::Mixed { read_percent: 100 };
    let outcome = run(&engine, &phase(reads, None, KeyOrder::Random), Some(done));
    t.join().unwrap();
    assert_eq!(outcome.summary.ending, Ending::Told);
    assert!(count(&outcome, OpKind::Get) > 0);
}

#[test]
fn a_workload_file_cannot_name_the_storage_driver() {
    let text = r#"
        duration = "1s"
        [driver]
        protocol = "storage"
        endpoints = ["memory"]
        bucket = "b"
        [operations]
        get = 1
        [keys]
        generator = "uniform_int"
        max = 10
        [values]
        generator = "fixed_bin"
        size = 10
    "#;
    let config = eddy_bench::config::parse_valid(text).unwrap();
    let e = run_config(&config, "file", &RunOptions::default()).unwrap_err();
    assert!(e.to_string().contains("eddy bench storage"), "{e}");
    let multi = text.replace("get = 1", "multi_get = 1");
    let e = eddy_bench::config::parse_valid(&multi).unwrap_err();
    assert!(
        matches!(e, BenchError::Setting { ref setting, .. } if setting == "operations.multi_get"),
        "{e}"
    );
}
