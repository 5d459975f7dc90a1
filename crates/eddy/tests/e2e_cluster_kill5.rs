//! Five real nodes as separate processes, joined and settled; client
//! threads write with w = 2 (and read back with r = 2) spread over all
//! five while one node is killed with SIGKILL (its clients move to the
//! other four once it refuses them) and later restarted. Once no transfer
//! is active and the ring has settled, every acknowledged write reads back
//! with r = 2 from every node and every node's key listing finds it. The
//! failures the clients saw are printed with their counts; with four of
//! five nodes up a w = 2 write or an r = 2 read fails only when it was
//! sent to the killed node: in flight, or the one refusal that moves its
//! client away; with all five up, hardly ever.

mod support;

use std::time::Duration;

use support::cluster::{dev_names, form, settle};
use support::kv::assert_all_readable;
use support::load::{BUCKET, Load};

const SETTLE: Duration = Duration::from_secs(60);

/// Client threads, and each one's pause between operations.
const WORKERS: usize = 4;
const PACE: Duration = Duration::from_millis(10);

#[test]
fn five_nodes_keep_every_acknowledged_write_through_a_kill() {
    let mut nodes = form(5, SETTLE);
    let ports: Vec<u16> = nodes.iter().map(|n| n.http_port).collect();
    let load = Load::start(WORKERS, &ports, PACE, "all up");
    std::thread::sleep(Duration::from_secs(3));

    load.phase("dev4 killed");
    nodes[3].kill9();
    std::thread::sleep(Duration::from_secs(4));

    load.phase("dev4 restarted");
    nodes[3].restart();
    load.retarget(&ports);
    std::thread::sleep(Duration::from_secs(3));
    let report = load.finish();
    report.print();

    settle(&nodes, &dev_names(1..=5), SETTLE);
    assert_all_readable(&ports, BUCKET, &report.acked, &report.attempted);
    assert!(
        report.acked.len() > 100,
        "too little load to mean anything: {} writes",
        report.acked.len()
    );
    // With every node up, one request in some thousands has been seen to
    // get a malformed HTTP answer (an open bug, printed above when it
    // happens); more than that fails the test.
    let steady: usize = ["all up", "dev4 restarted"]
        .iter()
        .map(|p| report.errors_in(p))
        .sum();
    let ops = report.ops_in("all up") + report.ops_in("dev4 restarted");
    assert!(
        steady * 1000 <= ops,
        "{steady} of {ops} operations failed with every node up"
    );
    assert!(
        report.errors_in("dev4 killed") <= 2 * WORKERS,
        "more failures than operations sent to the killed node"
    );
}
