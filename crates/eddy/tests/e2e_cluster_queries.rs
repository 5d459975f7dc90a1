//! 2i and MapReduce while the ring changes, with real processes: three
//! nodes hold coupons with `count_int` and `aff_bin` index entries; a
//! fourth joins, and while its transfers run (and after they settle) every
//! node answers each query (2i range and equality, a MapReduce count, a
//! key listing) with exactly the set of keys written — Riak's 2i answered
//! different key sets from query to query in that window, and so did
//! Eddy's: a fold sent (by a plan from a ring older or newer than the
//! node's) to a vnode its node did not own was answered with the part it
//! held, and a hinted handoff started before the join dropped a vnode
//! that had meanwhile received its node's ownership transfer; and a joining
//! node dropped the vnode an ownership transfer had just moved into while
//! its own ring, behind the sender's, still called that vnode a fallback.

mod support;

use std::time::{Duration, Instant};

use support::TestNode;
use support::cluster::{dev_names, form, settle};
use support::queries::{check_round, store};

const SETTLE: Duration = Duration::from_secs(90);

fn transfers_active(node: &TestNode) -> bool {
    let r = node.admin(&["transfers"]);
    r.ok && !r.stdout.contains("No transfers active")
}

#[test]
fn queries_answer_every_key_while_a_node_joins() {
    let mut nodes = form(3, SETTLE);
    store(&nodes);
    check_round(&nodes);

    let dev4 = TestNode::start_dev(4, &[]);
    dev4.join(&nodes[0]);
    nodes[0].commit(SETTLE);
    nodes.push(dev4);
    // Query while the ring changes, until every node says no transfer is
    // left; the rounds that ran during transfers are counted.
    let deadline = Instant::now() + SETTLE;
    let mut during = 0;
    loop {
        let active = nodes.iter().any(transfers_active);
        check_round(&nodes);
        if !active {
            break;
        }
        during += 1;
        assert!(Instant::now() < deadline, "the join did not settle");
    }
    settle(nodes.iter(), &dev_names(1..=4), SETTLE);
    check_round(&nodes);
    println!("query rounds during transfers: {during}");
}
