//! Membership changes under load, with real processes: three nodes joined
//! and settled hold some data; client threads keep writing with w = 2 and
//! reading back with r = 2 against the three; a fourth node joins (staged
//! `cluster join`, `plan`, `commit`) and the ring settles with four
//! members each owning its share; then dev2 leaves (staged on the
//! claimant, dev1) and the test waits until it has handed everything off,
//! left the ring and stopped, clients moving off it then. Afterwards every
//! acknowledged write, the preloaded ones included, reads back with r = 2
//! from every remaining node. The clients' failures are printed per phase,
//! operation and error; they must be few during a change and none before
//! it or once the leave has settled.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::TestNode;
use support::cluster::{dev_name, dev_names, form, settle};
use support::kv::{assert_all_readable, put_w2};
use support::load::{BUCKET, Load, Report};

const SETTLE: Duration = Duration::from_secs(60);

/// Client threads, and each one's pause between operations.
const WORKERS: usize = 4;
const PACE: Duration = Duration::from_millis(10);

/// Writes `count` keys to bucket `pre` with w = 2 through the nodes in
/// turn; all must be acknowledged.
fn preload(nodes: &[TestNode], count: usize) -> BTreeMap<String, String> {
    (0..count)
        .map(|i| {
            let (key, value) = (format!("p{i}"), format!("pv{i}"));
            let port = nodes[i % nodes.len()].http_port;
            put_w2(port, "pre", &key, &value).unwrap_or_else(|e| panic!("preload {key}: {e}"));
            (key, value)
        })
        .collect()
}

/// dev4 starts and joins through a staged join, plan and commit; returns
/// once the four members have settled.
fn join_fourth(nodes: &mut Vec<TestNode>) {
    let dev4 = TestNode::start_dev(4, &[]);
    dev4.join(&nodes[0]);
    nodes[0].commit(SETTLE);
    nodes.push(dev4);
    settle(nodes.iter(), &dev_names(1..=4), SETTLE);
}

/// dev2 leaves, staged and committed on the claimant (dev1); once dev2,
/// removed, has stopped by itself (as Riak's node does), the clients move
/// to dev1 and dev3; returns when the claimant's ring has settled without
/// dev2.
fn leave_second(nodes: &mut [TestNode], load: &Load) {
    let staged = nodes[0].admin(&["cluster", "leave", &dev_name(2)]);
    assert!(staged.ok, "{staged:#?}");
    nodes[0].commit(SETTLE);
    let exit = nodes[1].wait_exit(SETTLE);
    load.retarget(&[nodes[0].http_port, nodes[2].http_port]);
    assert!(exit.success(), "dev2 stopped with {exit}");
    settle(
        [&nodes[0], &nodes[2], &nodes[3]],
        &dev_names([1, 3, 4]),
        SETTLE,
    );
}

/// Asserts the failures are bounded: none before the changes or once the
/// leave has settled, at most `share` of the operations during each change
/// and in the seconds after the join settled.
///
/// The changes' phases are not held to zero: a client's connection to the
/// leaving node is refused once it stops, and a request it had coordinated
/// as it stopped can fail its quorum. (Reads during a join once missed
/// writes a handed vnode took before the ring change; its rounds now send
/// them on within 50 ms, design note 010 "Finish".)
fn assert_bounded(report: &Report, share: f64) {
    for phase in ["steady", "left"] {
        assert_eq!(report.errors_in(phase), 0, "failures in phase {phase}");
    }
    for phase in ["join", "joined", "leave"] {
        let (errors, ops) = (report.errors_in(phase), report.ops_in(phase));
        assert!(ops > 0, "no load during the {phase}");
        assert!(
            errors as f64 <= share * ops as f64,
            "{errors} of {ops} operations failed during the {phase}"
        );
    }
}

#[test]
fn a_node_joins_and_one_leaves_under_load_and_nothing_is_lost() {
    let mut nodes = form(3, SETTLE);
    let preloaded = preload(&nodes, 300);
    let originals: Vec<u16> = nodes.iter().map(|n| n.http_port).collect();
    let load = Load::start(WORKERS, &originals, PACE, "steady");
    std::thread::sleep(Duration::from_secs(2));

    load.phase("join");
    join_fourth(&mut nodes);
    load.phase("joined");
    std::thread::sleep(Duration::from_secs(2));

    load.phase("leave");
    leave_second(&mut nodes, &load);
    load.phase("left");
    std::thread::sleep(Duration::from_secs(2));
    let report = load.finish();

    report.print();
    let remaining: Vec<u16> = [0, 2, 3].iter().map(|&i| nodes[i].http_port).collect();
    let pre_keys: Vec<String> = preloaded.keys().cloned().collect();
    assert_all_readable(&remaining, "pre", &preloaded, &pre_keys);
    assert_all_readable(&remaining, BUCKET, &report.acked, &report.attempted);
    assert_bounded(&report, 0.05);
}
