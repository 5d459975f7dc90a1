//! The layouts, line by line, against what `riak admin` prints.

use super::super::views::{Change, Move, NodeTransfers};
use super::*;

fn row(node: &str, status: &str, ring: f64, pending: Option<f64>) -> Row {
    Row {
        node: node.into(),
        status: status.into(),
        ring_pct: ring,
        pending_pct: pending,
        up: None,
        claimant: None,
    }
}

#[test]
fn banners_are_79_columns_with_the_title_centred() {
    let mut out = String::new();
    banner(&mut out, "Membership");
    assert_eq!(
        out,
        format!("{} Membership {}\n", "=".repeat(33), "=".repeat(34))
    );
    let mut out = String::new();
    banner(&mut out, "Ownership Handoff");
    assert_eq!(out.trim_end().len(), WIDTH);
}

#[test]
fn member_status_has_riaks_columns_and_counts() {
    let m = MemberStatus {
        members: vec![
            row("dev1@127.0.0.1", "valid", 100.0, Some(37.5)),
            row("dev2@127.0.0.1", "valid", 0.0, Some(31.25)),
            row("dev3@127.0.0.1", "joining", 0.0, None),
        ],
    };
    let text = member_status(&m);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "Status     Ring    Pending    Node");
    assert_eq!(lines[3], "valid    100.0%     37.5%    'dev1@127.0.0.1'");
    assert_eq!(lines[4], "valid      0.0%     31.2%    'dev2@127.0.0.1'");
    assert_eq!(lines[5], "joining    0.0%      --      'dev3@127.0.0.1'");
    assert_eq!(
        lines[7],
        "Valid:2 / Leaving:0 / Exiting:0 / Joining:1 / Down:0"
    );
}

#[test]
fn a_plan_lists_changes_warnings_and_moves() {
    let p = Plan {
        changes: vec![
            Change {
                action: "join".into(),
                node: "b@h".into(),
                with: None,
            },
            Change {
                action: "force-replace".into(),
                node: "c@h".into(),
                with: Some("b@h".into()),
            },
        ],
        lost: vec!["c@h".into()],
        after: vec![row("a@h", "valid", 50.0, Some(50.0))],
        transfers: 3,
        reassigned: 8,
        moves: vec![Move {
            from: "a@h".into(),
            to: "b@h".into(),
            partitions: 3,
        }],
    };
    let text = plan(&p).expect("a plan");
    for line in [
        "join           'b@h'",
        "force-replace  'c@h' with 'b@h'",
        "WARNING: All of 'c@h' replicas will be lost",
        "NOTE: Applying these changes will result in 1 cluster transition",
        "                         After cluster transition 1/1",
        "Partitions reassigned from cluster changes: 8",
        "Transfers resulting from cluster changes: 3",
        "  3 transfers from 'a@h' to 'b@h'",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
    let empty = Plan {
        changes: vec![],
        lost: vec![],
        after: vec![],
        transfers: 0,
        reassigned: 0,
        moves: vec![],
    };
    assert_eq!(plan(&empty), None);
}

#[test]
fn cluster_status_is_a_bordered_table_marking_the_claimant() {
    let mut a = row("dev1@127.0.0.1", "valid", 34.4, None);
    a.claimant = Some(true);
    a.up = Some(true);
    let mut b = row("dev2@127.0.0.1", "valid", 65.6, Some(50.0));
    b.up = Some(false);
    let text = cluster_status(&ClusterStatus {
        ring_ready: true,
        members: vec![a, b],
    });
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "---- Cluster Status ----");
    assert_eq!(lines[1], "Ring ready: true");
    let table: Vec<&str> = lines[3..9].to_vec();
    let width = table[0].len();
    assert!(table.iter().all(|l| l.len() == width), "{text}");
    assert!(table[1].contains("|        node        |"), "{text}");
    assert!(table[3].starts_with("| (C) dev1@127.0.0.1 |"), "{text}");
    assert!(table[4].starts_with("|     dev2@127.0.0.1 |"), "{text}");
    assert!(table[3].contains("|  up   |"), "{text}");
    assert!(table[4].contains("| down! |"), "{text}");
    assert!(table[4].contains("| 50.0  |"), "{text}");
    assert_eq!(availability(false, true), "down");
    assert_eq!(availability(true, true), "up!");
}

#[test]
fn ring_status_groups_handoffs_by_owner_pair() {
    let t = |p, done| Transfer {
        partition: p,
        from: "a@h".into(),
        to: "b@h".into(),
        done,
    };
    let text = ring_status(&RingStatus {
        claimant: Some("a@h".into()),
        ring_ready: false,
        pending: vec![t(1, false), t(5, true)],
        unreachable: vec!["c@h".into()],
    });
    assert_eq!(text.matches("Owner:      a@h").count(), 1, "{text}");
    assert!(
        text.contains("Index: 1\n  Waiting on: [eddy_kv_vnode]"),
        "{text}"
    );
    assert!(
        text.contains("Index: 5\n  Complete:   [eddy_kv_vnode]"),
        "{text}"
    );
    assert!(text.contains("Ring Ready: false"), "{text}");
    assert!(text.contains("The following nodes are unreachable: ['c@h']"));
    let settled = ring_status(&RingStatus {
        claimant: None,
        ring_ready: true,
        pending: vec![],
        unreachable: vec![],
    });
    assert!(settled.contains("Claimant:  undefined"));
    assert!(settled.contains("No pending changes."));
    assert!(settled.contains("All nodes are up and reachable"));
}

#[test]
fn ringready_and_transfers_read_like_riaks() {
    let nodes = vec!["a@h".to_string(), "b@h".to_string()];
    let (text, ok) = ringready(&RingReady {
        ready: true,
        nodes: nodes.clone(),
        waiting: vec![],
    });
    assert!(ok);
    assert_eq!(text, "TRUE All nodes agree on the ring ['a@h','b@h']");
    let (text, ok) = ringready(&RingReady {
        ready: false,
        nodes,
        waiting: vec!["b@h".into()],
    });
    assert!(!ok && text.starts_with("FALSE ['b@h'] down"));
    let t = |p| Transfer {
        partition: p,
        from: "a@h".into(),
        to: "b@h".into(),
        done: false,
    };
    let text = transfers(&Transfers {
        transfers: vec![NodeTransfers {
            node: "a@h".into(),
            waiting: vec![t(0), t(2)],
            reported: vec![t(4)],
        }],
        active: vec![],
        inbound: vec![],
    });
    assert!(
        text.contains("'a@h' waiting to handoff 2 partitions"),
        "{text}"
    );
    assert!(text.contains("'a@h' handed off 1 partitions"), "{text}");
    let none = transfers(&Transfers {
        transfers: vec![],
        active: vec![],
        inbound: vec![],
    });
    assert_eq!(none, "No transfers active\n");
}

#[test]
fn transfer_limit_shows_the_node_and_its_limit() {
    let text = transfer_limit("a@h", 4);
    assert!(text.lines().any(|l| l == "    4        'a@h'"), "{text}");
}
