//! The cluster admin commands end to end: three real nodes (`dev1`…`dev3`
//! at 127.0.0.1, each with its own ports), every command through the
//! `eddy admin` CLI as an operator types it.
//!
//! dev2 and dev3 join dev1; `cluster plan` shows the joins and the
//! transfers they cause; `cluster commit` carries them out; every node's
//! `member-status` then shows three valid members whose ring shares add up
//! to the whole ring, `ringready` says TRUE, `cluster status` and
//! `ring-status` show the claimant; `transfer-limit` sets and shows the
//! limits. Staged leave and force-remove show in the plan and `cluster
//! clear` drops them; a killed node is marked `down`. Bad input fails with
//! Riak's message and exit status 1: a node joining itself, committing an
//! empty plan, the last member leaving, an unknown node, a replacement
//! that is not joining, a join to a node that is not running, a command
//! to a node that is not running, a malformed node name or limit.

mod support;

use std::time::Duration;

use support::cluster::{Run, dev_name, member_rows, run};
use support::{TestNode, free_port};

/// Long enough for gossip and the failure detector on a loaded CI box.
const SETTLE: Duration = Duration::from_secs(20);

#[track_caller]
fn succeeds(r: &Run, expected: &str) {
    assert!(r.ok, "expected success, got {r:#?}");
    assert!(
        r.stdout.contains(expected),
        "expected {expected:?} in the output, got {r:#?}"
    );
}

#[track_caller]
fn fails(r: &Run, message: &str) {
    assert_eq!(r.code, Some(1), "expected exit status 1, got {r:#?}");
    assert!(
        r.stderr.contains(message),
        "expected {message:?} in the error, got {r:#?}"
    );
}

/// Every member valid, each named once, shares adding up to the ring.
fn all_valid(out: &str, names: &[String]) -> bool {
    let rows = member_rows(out);
    let ring: f64 = rows.iter().map(|r| r.1).sum();
    rows.len() == names.len()
        && rows.iter().all(|r| r.0 == "valid")
        && names.iter().all(|n| rows.iter().any(|r| &r.3 == n))
        && (ring - 100.0).abs() < 0.5
}

#[test]
fn cluster_admin_commands_from_the_cli() {
    let nodes: Vec<TestNode> = (1..=3).map(|i| TestNode::start_dev(i, &[])).collect();
    let names: Vec<String> = (1..=3).map(dev_name).collect();
    let (dev1, dev2, dev3) = (&nodes[0], &nodes[1], &nodes[2]);

    alone(dev1);
    join(dev1, dev2, dev3);
    plan_and_commit(dev1, dev2, &names);
    views_agree(&nodes, &names);
    transfer_limits(&nodes);
    refusals(dev1, dev2);
    staged_and_cleared(dev1);
    marked_down(nodes);
}

/// A node on its own: nothing to plan or commit, it cannot leave or join
/// itself.
fn alone(dev1: &TestNode) {
    let me = dev_name(1);
    succeeds(
        &dev1.admin(&["cluster", "plan"]),
        "There are no staged changes",
    );
    fails(
        &dev1.admin(&["cluster", "commit"]),
        "there are no staged changes to commit",
    );
    fails(&dev1.admin(&["cluster", "leave"]), "is the only member");
    let address = dev1.cluster_address();
    fails(
        &dev1.admin(&["cluster", "join", &me, "--address", &address]),
        &format!("{me} cannot join itself"),
    );
    let members = dev1.admin(&["member-status"]);
    succeeds(
        &members,
        "Valid:1 / Leaving:0 / Exiting:0 / Joining:0 / Down:0",
    );
    assert_eq!(
        member_rows(&members.stdout),
        vec![("valid".into(), 100.0, None, me)]
    );
}

/// dev2 and dev3 join dev1 (a join to a node that is not running fails
/// first).
fn join(dev1: &TestNode, dev2: &TestNode, dev3: &TestNode) {
    let nowhere = format!("127.0.0.1:{}", free_port());
    let r = dev3.admin(&["cluster", "join", "dev9@127.0.0.1", "--address", &nowhere]);
    fails(&r, "dev9@127.0.0.1 is not reachable");
    // Without --address, the error says where it looked and how to say
    // where NODE is.
    let r = dev3.admin(&["cluster", "join", "dev9@127.0.0.1"]);
    fails(&r, "dialled 127.0.0.1:8099");
    fails(&r, "give --address HOST:PORT");
    for (joiner, i) in [(dev2, 2), (dev3, 3)] {
        let r = joiner.admin(&[
            "cluster",
            "join",
            &dev_name(1),
            "--address",
            &dev1.cluster_address(),
        ]);
        let text = format!(
            "Success: staged join request for '{}' to '{}'",
            dev_name(i),
            dev_name(1)
        );
        succeeds(&r, &text);
    }
    let r = dev2.admin(&["cluster", "join", &dev_name(1)]);
    fails(&r, "is already a member");
}

/// The plan lists both joins and the transfers from dev1; a replacement
/// of a joining node is refused; committing from a member that is not the
/// claimant carries the plan out.
fn plan_and_commit(dev1: &TestNode, dev2: &TestNode, names: &[String]) {
    let plan = dev1.admin(&["cluster", "plan"]);
    succeeds(&plan, "Staged Changes");
    for name in &names[1..] {
        assert!(
            plan.stdout.contains(&format!("join           '{name}'")),
            "{plan:#?}"
        );
        let moves = format!("transfers from '{}' to '{name}'", names[0]);
        assert!(plan.stdout.contains(&moves), "{plan:#?}");
    }
    assert!(plan.stdout.contains("Valid:3 / Leaving:0"), "{plan:#?}");
    let total: usize = plan
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Transfers resulting from cluster changes: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("a transfer count");
    assert!(total > 0 && total < 16, "{plan:#?}");
    let after = member_rows(&plan.stdout);
    let pending: f64 = after.iter().filter_map(|r| r.2).sum();
    assert!((pending - 100.0).abs() < 0.5, "{plan:#?}");
    let same = dev2.admin(&["cluster", "plan"]);
    assert_eq!(
        same.stdout, plan.stdout,
        "the plan is the claimant's, asked anywhere"
    );

    fails(
        &dev1.admin(&["cluster", "leave", &names[1]]),
        "is still joining",
    );
    succeeds(
        &dev2.admin(&["cluster", "commit"]),
        "Cluster changes committed",
    );
    fails(
        &dev1.admin(&["cluster", "commit"]),
        "there are no staged changes to commit",
    );
}

/// Every node's views agree once gossip has spread the commit.
fn views_agree(nodes: &[TestNode], names: &[String]) {
    for node in nodes {
        node.admin_until(&["member-status"], SETTLE, |r| {
            r.ok && all_valid(&r.stdout, names)
        });
    }
    let list = names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(",");
    let ready = nodes[0].admin_until(&["ringready"], SETTLE, |r| r.ok);
    succeeds(
        &ready,
        &format!("TRUE All nodes agree on the ring [{list}]"),
    );
    let status = nodes[1].admin_until(&["cluster", "status"], SETTLE, |r| {
        r.stdout.contains("Ring ready: true")
    });
    succeeds(&status, &format!("(C) {}", names[0]));
    for name in names {
        let line = status.stdout.lines().find(|l| l.contains(name.as_str()));
        let line = line.unwrap_or_else(|| panic!("{name} missing: {status:#?}"));
        assert!(
            line.contains("valid") && line.contains(" up "),
            "{status:#?}"
        );
    }
    let ring = nodes[2].admin(&["ring-status"]);
    succeeds(&ring, &format!("Claimant:  '{}'", names[0]));
    assert!(
        ring.stdout.contains("All nodes are up and reachable"),
        "{ring:#?}"
    );
    let transfers = nodes[0].admin(&["transfers"]);
    let (summary, active) = transfers
        .stdout
        .split_once("Active Transfers:\n")
        .unwrap_or((&transfers.stdout, ""));
    let lines_ok = summary.lines().all(|l| {
        l.is_empty()
            || l == "No transfers active"
            || l.contains("waiting to handoff")
            || l.contains("handed off")
    });
    let active_ok =
        active.is_empty() || (active.contains("transfer type: ") && active.contains("=======>"));
    assert!(
        transfers.ok && !transfers.stdout.is_empty() && lines_ok && active_ok,
        "{transfers:#?}"
    );
}

/// `transfer-limit LIMIT` sets every member's, `NODE LIMIT` one's; each
/// node shows its own.
fn transfer_limits(nodes: &[TestNode]) {
    let shows = |node: &TestNode, limit: u32| {
        let r = node.admin(&["transfer-limit"]);
        let row = r.stdout.lines().find(|l| l.contains("@127.0.0.1"));
        let first = row.and_then(|l| l.split_whitespace().next());
        assert_eq!(first, Some(limit.to_string().as_str()), "{r:#?}");
    };
    shows(&nodes[0], 2);
    succeeds(
        &nodes[0].admin(&["transfer-limit", "4"]),
        "Set transfer limit for all nodes to 4",
    );
    for node in nodes {
        shows(node, 4);
    }
    let dev3 = dev_name(3);
    succeeds(
        &nodes[1].admin(&["transfer-limit", &dev3, "1"]),
        &format!("Set transfer limit for '{dev3}' to 1"),
    );
    shows(&nodes[2], 1);
    shows(&nodes[0], 4);
    fails(
        &nodes[0].admin(&["transfer-limit", "dev9@127.0.0.1", "3"]),
        "dev9@127.0.0.1 is not a member",
    );
    fails(
        &nodes[0].admin(&["transfer-limit", "many"]),
        "must be a positive number",
    );
    fails(
        &nodes[0].admin(&["transfer-limit", "0"]),
        "must be a positive number",
    );
}

/// Bad input to a running cluster, and a command to a node that is not
/// running.
fn refusals(dev1: &TestNode, dev2: &TestNode) {
    let (d2, d3) = (dev_name(2), dev_name(3));
    fails(
        &dev1.admin(&["cluster", "force-remove", "dev9@127.0.0.1"]),
        "dev9@127.0.0.1 is not a member of the cluster",
    );
    fails(
        &dev1.admin(&["cluster", "replace", &d2, &d3]),
        &format!("{d3} is not a valid replacement candidate"),
    );
    fails(
        &dev2.admin(&["cluster", "force-replace", &d2, &d3]),
        &format!("{d3} is not a valid replacement candidate"),
    );
    fails(&dev1.admin(&["down", &d2]), &format!("{d2} is up"));
    fails(
        &dev1.admin(&["cluster", "leave", "nonsense"]),
        "not a valid node name",
    );
    fails(
        &dev1.admin(&["cluster", "force-remove", &dev_name(1)]),
        "is the claimant",
    );
    let mut stopped = dev1.command(&["admin", "member-status"]);
    stopped.env(
        "EDDY_LISTENER_HTTP_INTERNAL",
        format!("127.0.0.1:{}", free_port()),
    );
    fails(&run(stopped), "is not responding");
}

/// A staged leave and force-remove show in the plan; `clear` drops them.
fn staged_and_cleared(dev1: &TestNode) {
    let (d2, d3) = (dev_name(2), dev_name(3));
    succeeds(
        &dev1.admin(&["cluster", "leave", &d2]),
        &format!("Success: staged leave request for '{d2}'"),
    );
    succeeds(
        &dev1.admin(&["cluster", "force-remove", &d3]),
        &format!("Success: staged remove request for '{d3}'"),
    );
    fails(
        &dev1.admin(&["cluster", "leave", &d2]),
        &format!("a change for {d2} is already staged"),
    );
    let plan = dev1.admin(&["cluster", "plan"]);
    succeeds(&plan, &format!("leave          '{d2}'"));
    assert!(
        plan.stdout.contains(&format!("force-remove   '{d3}'")),
        "{plan:#?}"
    );
    assert!(
        plan.stdout
            .contains(&format!("WARNING: All of '{d3}' replicas will be lost")),
        "{plan:#?}"
    );
    succeeds(
        &dev1.admin(&["cluster", "clear"]),
        "Cleared staged cluster changes",
    );
    succeeds(
        &dev1.admin(&["cluster", "plan"]),
        "There are no staged changes",
    );
}

/// A killed node: `ringready` is FALSE naming it, `ring-status` lists
/// it as unreachable, a commit waits for it (pointing to `down`), and it
/// can be marked down.
fn marked_down(mut nodes: Vec<TestNode>) {
    let d3 = dev_name(3);
    nodes[2].kill9();
    let only_dev3 = format!("FALSE ['{d3}'] down");
    let ready = nodes[0].admin_until(&["ringready"], SETTLE, |r| r.stderr.contains(&only_dev3));
    fails(&ready, &only_dev3);
    let ring = nodes[0].admin_until(&["ring-status"], SETTLE, |r| {
        r.stdout.contains("The following nodes are unreachable")
    });
    succeeds(
        &ring,
        &format!("The following nodes are unreachable: ['{d3}']"),
    );
    // A change committed while dev3 is unreachable is refused, and the
    // refusal says how to go on without it.
    let staged = nodes[0].admin(&["cluster", "force-remove", &d3]);
    succeeds(&staged, "staged remove request");
    let r = nodes[0].admin_until(&["cluster", "commit"], SETTLE, |r| {
        r.stderr.contains("not ready")
    });
    fails(&r, "`eddy admin down NODE`");
    succeeds(
        &nodes[0].admin(&["cluster", "clear"]),
        "Cleared staged cluster changes",
    );
    let r = nodes[0].admin_until(&["down", &d3], SETTLE, |r| r.ok);
    succeeds(&r, &format!("Success: '{d3}' marked as down"));
    let members = nodes[1].admin_until(&["member-status"], SETTLE, |r| r.stdout.contains("Down:1"));
    let rows = member_rows(&members.stdout);
    assert!(
        rows.iter().any(|r| r.0 == "down" && r.3 == d3),
        "{members:#?}"
    );
}
