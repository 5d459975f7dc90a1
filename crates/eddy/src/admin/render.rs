//! The cluster admin answers (the node's JSON, see eddy-api's
//! `http::cluster`) as text laid out the way `riak admin` prints them:
//! 79-column banners, `member-status`'s columns, the plan's staged changes
//! and transfers, `cluster status`'s table. Pure functions, so the layout
//! is tested without a node.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::views::{
    ClusterStatus, MemberStatus, Plan, RingReady, RingStatus, Row, Transfer, Transfers,
};

/// The width of Riak's banners and rules.
const WIDTH: usize = 79;

/// A node name quoted as Erlang prints an atom with `~p`.
pub fn q(node: &str) -> String {
    format!("'{node}'")
}

fn banner(out: &mut String, title: &str) {
    let title = format!(" {title} ");
    let left = WIDTH.saturating_sub(title.len()) / 2;
    let right = WIDTH.saturating_sub(title.len() + left);
    let _ = writeln!(out, "{}{title}{}", "=".repeat(left), "=".repeat(right));
}

fn rule(out: &mut String, c: char) {
    let _ = writeln!(out, "{}", c.to_string().repeat(WIDTH));
}

fn pct(p: Option<f64>) -> String {
    p.map_or_else(|| "  --  ".to_string(), |p| format!("{p:5.1}%"))
}

/// The `Membership` block: a row per member and the count per status.
fn membership(out: &mut String, rows: &[Row]) {
    banner(out, "Membership");
    let _ = writeln!(out, "Status     Ring    Pending    Node");
    rule(out, '-');
    for r in rows {
        let ring = pct(Some(r.ring_pct));
        let pending = pct(r.pending_pct);
        let _ = writeln!(out, "{:<8} {ring}    {pending}    {}", r.status, q(&r.node));
    }
    rule(out, '-');
    let count = |s: &str| rows.iter().filter(|r| r.status == s).count();
    let _ = writeln!(
        out,
        "Valid:{} / Leaving:{} / Exiting:{} / Joining:{} / Down:{}",
        count("valid"),
        count("leaving"),
        count("exiting"),
        count("joining"),
        count("down")
    );
}

/// `member-status`.
pub fn member_status(m: &MemberStatus) -> String {
    let mut out = String::new();
    membership(&mut out, &m.members);
    out
}

/// `cluster plan`; `None` when nothing is staged.
pub fn plan(p: &Plan) -> Option<String> {
    if p.changes.is_empty() {
        return None;
    }
    let mut out = String::new();
    banner(&mut out, "Staged Changes");
    let _ = writeln!(out, "Action         Details(s)");
    rule(&mut out, '-');
    for c in &p.changes {
        let details = match &c.with {
            Some(with) => format!("{} with {}", q(&c.node), q(with)),
            None => q(&c.node),
        };
        let _ = writeln!(out, "{:<14} {details}", c.action);
    }
    rule(&mut out, '-');
    for node in &p.lost {
        let _ = writeln!(out, "WARNING: All of {} replicas will be lost", q(node));
    }
    let _ = writeln!(
        out,
        "\n\nNOTE: Applying these changes will result in 1 cluster transition\n"
    );
    rule(&mut out, '#');
    let title = "After cluster transition 1/1";
    let indent = WIDTH.saturating_sub(title.len()) / 2;
    let _ = writeln!(out, "{}{title}", " ".repeat(indent));
    rule(&mut out, '#');
    out.push('\n');
    membership(&mut out, &p.after);
    if p.reassigned > 0 {
        let _ = writeln!(
            out,
            "\nPartitions reassigned from cluster changes: {}",
            p.reassigned
        );
    }
    let _ = writeln!(
        out,
        "\nTransfers resulting from cluster changes: {}",
        p.transfers
    );
    for m in &p.moves {
        let _ = writeln!(
            out,
            "  {} transfers from {} to {}",
            m.partitions,
            q(&m.from),
            q(&m.to)
        );
    }
    Some(out)
}

/// `cluster status`: Riak's table, the claimant marked `(C)`.
pub fn cluster_status(s: &ClusterStatus) -> String {
    let header = ["node", "status", "avail", "ring", "pending"];
    let rows: Vec<[String; 5]> = s
        .members
        .iter()
        .map(|r| {
            let mark = if r.claimant == Some(true) {
                "(C)"
            } else {
                "   "
            };
            let avail = availability(r.up != Some(false), r.status == "down");
            [
                format!("{mark} {}", r.node),
                r.status.clone(),
                avail,
                format!("{:.1}", r.ring_pct),
                r.pending_pct
                    .map_or_else(|| "--".to_string(), |p| format!("{p:.1}")),
            ]
        })
        .collect();
    let mut out = format!("---- Cluster Status ----\nRing ready: {}\n\n", s.ring_ready);
    table(&mut out, header, &rows);
    out.push_str("\nKey: (C) = Claimant; availability marked with '!' is unexpected\n");
    out
}

/// A member's availability; `!` marks the unexpected: a member reachable
/// though marked down, or unreachable though not.
fn availability(up: bool, marked_down: bool) -> String {
    let text = if up { "up" } else { "down" };
    let unexpected = if up == marked_down { "!" } else { "" };
    format!("{text}{unexpected}")
}

/// A table with `+---+` borders and centred cells, as Riak's clique
/// prints one.
fn table<const N: usize>(out: &mut String, header: [&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len() + 2);
        }
    }
    let border: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(*w)))
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let cells: String = cells
            .zip(&widths)
            .map(|(c, w)| format!("|{c:^w$}"))
            .collect();
        format!("{cells}|\n")
    };
    let _ = writeln!(out, "{border}+");
    out.push_str(&line(&mut header.iter().copied()));
    let _ = writeln!(out, "{border}+");
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    let _ = writeln!(out, "{border}+");
}

/// `ring-status`: the claimant, the ownership handoffs per (owner, next
/// owner), and the unreachable members.
pub fn ring_status(s: &RingStatus) -> String {
    let mut out = String::new();
    banner(&mut out, "Claimant");
    match &s.claimant {
        Some(c) => {
            let _ = writeln!(out, "Claimant:  {}\nStatus:     up", q(c));
        }
        None => {
            let _ = writeln!(out, "Claimant:  undefined\nStatus:     down");
        }
    }
    let _ = writeln!(out, "Ring Ready: {}\n", s.ring_ready);
    banner(&mut out, "Ownership Handoff");
    ownership_handoff(&mut out, &s.pending);
    out.push('\n');
    banner(&mut out, "Unreachable Nodes");
    if s.unreachable.is_empty() {
        out.push_str("All nodes are up and reachable\n");
    } else {
        let nodes: Vec<String> = s.unreachable.iter().map(|n| q(n)).collect();
        let _ = writeln!(
            out,
            "The following nodes are unreachable: [{}]\n\n\
             WARNING: The cluster state will not converge until all nodes\n\
             are up. Once the above nodes come back online, convergence\n\
             will continue. If the outages are long-term or permanent, you\n\
             can either mark the nodes as down (eddy admin down NODE) or\n\
             forcibly remove the nodes from the cluster (eddy admin cluster\n\
             force-remove NODE) to allow the remaining nodes to settle.",
            nodes.join(",")
        );
    }
    out
}

fn ownership_handoff(out: &mut String, pending: &[Transfer]) {
    if pending.is_empty() {
        out.push_str("No pending changes.\n");
        return;
    }
    let mut by_pair: BTreeMap<(&str, &str), Vec<&Transfer>> = BTreeMap::new();
    for t in pending {
        by_pair.entry((&t.from, &t.to)).or_default().push(t);
    }
    for ((from, to), transfers) in by_pair {
        let _ = writeln!(out, "Owner:      {from}\nNext Owner: {to}\n");
        for t in transfers {
            let state = if t.done { "Complete:  " } else { "Waiting on:" };
            let _ = writeln!(out, "Index: {}\n  {state} [eddy_kv_vnode]\n", t.partition);
        }
        rule(out, '-');
    }
}

/// `ringready`: the text, and whether it is `TRUE`.
pub fn ringready(r: &RingReady) -> (String, bool) {
    let list = |nodes: &[String]| {
        let quoted: Vec<String> = nodes.iter().map(|n| q(n)).collect();
        format!("[{}]", quoted.join(","))
    };
    if r.ready {
        (
            format!("TRUE All nodes agree on the ring {}", list(&r.nodes)),
            true,
        )
    } else {
        let text = format!(
            "FALSE {} down or not at this node's ring.  All nodes need to be up and agree on the ring.",
            list(&r.waiting)
        );
        (text, false)
    }
}

/// `transfers`: per node, the handoffs it still has to send.
pub fn transfers(t: &Transfers) -> String {
    let mut out = String::new();
    for n in &t.transfers {
        if !n.waiting.is_empty() {
            let _ = writeln!(
                out,
                "{} waiting to handoff {} partitions",
                q(&n.node),
                n.waiting.len()
            );
        }
        if !n.reported.is_empty() {
            let _ = writeln!(
                out,
                "{} handed off {} partitions, waiting for the claimant to record them",
                q(&n.node),
                n.reported.len()
            );
        }
    }
    active::section(&mut out, &t.active, &t.inbound);
    if out.is_empty() {
        out.push_str("No transfers active\n");
    }
    out
}

/// `transfer-limit` without arguments: this node's limit.
pub fn transfer_limit(node: &str, limit: u64) -> String {
    let mut out = String::new();
    banner(&mut out, "Transfer Limit");
    let _ = writeln!(out, "Limit        Node");
    rule(&mut out, '-');
    let _ = writeln!(out, "{limit:>5}        {}", q(node));
    rule(&mut out, '-');
    out.push_str(
        "Note: You can change transfer limits with 'eddy admin transfer-limit <limit>'\n      \
         and 'eddy admin transfer-limit <node> <limit>'\n",
    );
    out
}

#[cfg(test)]
mod tests;

mod active;
