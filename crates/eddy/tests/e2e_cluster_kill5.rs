//! Five real nodes as separate processes, joined and settled; client
//! threads write with w = 2 (and read back with r = 2) spread over all
//! five while one node is killed with SIGKILL, its clients moving to the
//! other four, and later restarted. Once no transfer is active and the
//! ring has settled, every acknowledged write reads back with r = 2 from
//! every node and every node's key listing finds it. The failures the
//! clients saw are printed with their counts; with four of five nodes up
//! a w = 2 write or an r = 2 read may fail only when it was in flight on
//! the node killed.

mod support;

use std::time::{Duration, Instant};

use support::cluster::{dev_names, form, settle};
use support::kv::assert_all_readable;
use support::load::{BUCKET, Load};

const SETTLE: Duration = Duration::from_secs(60);

/// Client threads, and each one's pause between operations.
const WORKERS: usize = 4;
const PACE: Duration = Duration::from_millis(10);

/// Lets the load run for `time`.
fn run_for(time: Duration) {
    let end = Instant::now() + time;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn five_nodes_keep_every_acknowledged_write_through_a_kill() {
    let mut nodes = form(5, SETTLE);
    let ports: Vec<u16> = nodes.iter().map(|n| n.http_port).collect();
    let load = Load::start(WORKERS, &ports, PACE, "all up");
    run_for(Duration::from_secs(3));

    let victim = 3;
    load.phase("dev4 killed");
    let others: Vec<u16> = ports
        .iter()
        .copied()
        .filter(|&p| p != ports[victim])
        .collect();
    load.retarget(&others);
    nodes[victim].kill9();
    run_for(Duration::from_secs(4));

    load.phase("dev4 restarted");
    nodes[victim].restart();
    load.retarget(&ports);
    run_for(Duration::from_secs(3));
    let report = load.finish();
    report.print();

    settle(&nodes[0], &dev_names(1..=5), SETTLE);
    assert_all_readable(&ports, BUCKET, &report.acked, &report.attempted);
    let ops =
        report.ops_in("all up") + report.ops_in("dev4 killed") + report.ops_in("dev4 restarted");
    assert!(
        report.acked.len() > 100,
        "too little load to mean anything: {report:?}"
    );
    assert_eq!(report.errors_in("all up"), 0, "failures with every node up");
    assert_eq!(
        report.errors_in("dev4 restarted"),
        0,
        "failures after the restart"
    );
    assert!(
        report.errors_in("dev4 killed") <= WORKERS,
        "more failures than operations in flight on the killed node ({ops} operations)"
    );
}
