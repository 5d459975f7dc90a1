//! The dev cluster's calls to its nodes' HTTP admin API: `/ping`, the
//! staged join, plan and commit, and the views that say whether the
//! cluster has settled (`/admin/ringready`, `/admin/transfers`,
//! `/admin/member-status`).
//!
//! What "settled" means is [`Settled::check`]: pure, over the views'
//! JSON, so it is tested without a node.

use eddy_client::http::{self, HttpResponse};
use serde_json::{Value, json};

use super::error::DevError;
use super::layout::DevNode;

/// A request to `node`'s HTTP listener; `Err` holds why it got no answer.
fn call(node: DevNode, method: &str, path: &str, body: &str) -> Result<HttpResponse, String> {
    let headers = [("Content-Type", "application/json")];
    http::request(
        &node.http().to_string(),
        method,
        path,
        &headers,
        body.as_bytes(),
    )
    .map_err(|e| format!("no answer at {}: {e}", node.http()))
}

/// The JSON of a 2xx answer, else the error naming `what`.
fn expect_json(
    node: DevNode,
    what: &'static str,
    r: Result<HttpResponse, String>,
) -> Result<Value, DevError> {
    let failed = |message: String| DevError::Admin {
        node: node.nodename(),
        what,
        message,
    };
    let r = r.map_err(failed)?;
    if !(200..300).contains(&r.status) {
        return Err(failed(format!("HTTP {}: {}", r.status, r.text().trim())));
    }
    serde_json::from_slice(&r.body).map_err(|e| failed(format!("bad JSON: {e}")))
}

/// True when `node` answers `/ping`.
pub fn ping(node: DevNode) -> bool {
    call(node, "GET", "/ping", "").is_ok_and(|r| r.status == 200)
}

/// Has `node` join the cluster `target` belongs to (a staged join, sent to
/// the joining node); returns Riak's line for it.
pub fn join(node: DevNode, target: DevNode) -> Result<String, DevError> {
    let body = json!({
        "node": target.nodename(),
        "address": target.cluster().to_string(),
    });
    let r = call(node, "POST", "/admin/cluster/join", &body.to_string());
    expect_json(node, "cluster join", r)?;
    Ok(format!(
        "Success: staged join request for '{}' to '{}'",
        node.nodename(),
        target.nodename()
    ))
}

/// The staged plan, summed up in one line.
pub fn plan(node: DevNode) -> Result<String, DevError> {
    let plan = expect_json(
        node,
        "cluster plan",
        call(node, "GET", "/admin/cluster/plan", ""),
    )?;
    Ok(plan_summary(&plan))
}

/// Commits the staged plan. A commit the claimant refuses because the ring
/// is not ready yet (gossip still carries the joins) is `Ok(false)`: the
/// caller retries.
pub fn commit(node: DevNode) -> Result<bool, DevError> {
    let r = call(node, "POST", "/admin/cluster/commit", "");
    if let Ok(answer) = &r
        && answer.status == 409
        && answer.text().contains("not ready")
    {
        return Ok(false);
    }
    expect_json(node, "cluster commit", r).map(|_| true)
}

/// The member names `node`'s `member-status` lists.
pub fn members(node: DevNode) -> Result<Vec<String>, DevError> {
    let view = member_status(node)?;
    Ok(rows(&view)
        .iter()
        .filter_map(|r| r["node"].as_str().map(str::to_string))
        .collect())
}

/// `GET /admin/member-status`.
pub fn member_status(node: DevNode) -> Result<Value, DevError> {
    let r = call(node, "GET", "/admin/member-status", "");
    expect_json(node, "member-status", r)
}

/// `Ok` when `node` reports the cluster settled with exactly `expected`
/// as its members ([`Settled::check`] over its three views); otherwise
/// what it still waits for.
pub fn settled(node: DevNode, expected: &[DevNode]) -> Result<(), String> {
    let get = |path: &str| -> Result<Value, String> {
        let r = call(node, "GET", path, "")?;
        if r.status != 200 {
            return Err(format!("{path}: HTTP {}", r.status));
        }
        serde_json::from_slice(&r.body).map_err(|e| format!("{path}: bad JSON: {e}"))
    };
    let views = Settled {
        ringready: get("/admin/ringready")?,
        transfers: get("/admin/transfers")?,
        member_status: get("/admin/member-status")?,
    };
    let names: Vec<String> = expected.iter().map(|n| n.nodename()).collect();
    views.check(&names)
}

/// The three views a node's answer to "has the cluster settled?" is made of.
pub struct Settled {
    pub ringready: Value,
    pub transfers: Value,
    pub member_status: Value,
}

impl Settled {
    /// `Ok` when the ring is ready, no transfer is pending and the members
    /// are exactly `expected`, each valid and owning its final share;
    /// otherwise what is still awaited.
    pub fn check(&self, expected: &[String]) -> Result<(), String> {
        if self.ringready["ready"] != Value::Bool(true) {
            let waiting = names(&self.ringready["waiting"]);
            return Err(format!("ring not ready (waiting for {waiting})"));
        }
        let pending: usize = self.transfers["transfers"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| count(&r["waiting"]) + count(&r["reported"]))
                    .sum()
            })
            .unwrap_or(0);
        if pending > 0 {
            return Err(format!("{pending} transfers pending"));
        }
        let rows = rows(&self.member_status);
        let mut found: Vec<String> = rows
            .iter()
            .filter_map(|r| r["node"].as_str().map(str::to_string))
            .collect();
        found.sort();
        let mut want = expected.to_vec();
        want.sort();
        if found != want {
            return Err(format!("members are [{}]", found.join(", ")));
        }
        for r in rows {
            if r["status"] != "valid" || !r["pending_pct"].is_null() {
                return Err(format!("member {r} has not settled"));
            }
        }
        Ok(())
    }
}

/// The rows of a `member-status` answer.
fn rows(view: &Value) -> Vec<Value> {
    view["members"].as_array().cloned().unwrap_or_default()
}

fn count(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

fn names(v: &Value) -> String {
    let list: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    list.join(", ")
}

/// A plan in one line: its changes and how many partitions move.
fn plan_summary(plan: &Value) -> String {
    let changes: Vec<String> = plan["changes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    let action = c["action"].as_str().unwrap_or("change");
                    let node = c["node"].as_str().unwrap_or("?");
                    format!("{action} {node}")
                })
                .collect()
        })
        .unwrap_or_default();
    let transfers = plan["transfers"].as_u64().unwrap_or(0);
    format!(
        "Plan: {}; {transfers} transfers",
        if changes.is_empty() {
            "no changes".to_string()
        } else {
            changes.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn row(node: &str, status: &str, pending: Value) -> Value {
        json!({"node": node, "status": status, "ring_pct": 50.0, "pending_pct": pending})
    }

    fn views(ready: bool, transfers: Value, members: Vec<Value>) -> Settled {
        Settled {
            ringready: json!({"ready": ready, "nodes": [], "waiting": if ready { json!([]) } else { json!(["b@h"]) }}),
            transfers: json!({ "transfers": transfers }),
            member_status: json!({ "members": members }),
        }
    }

    #[test]
    fn settled_needs_ready_no_transfers_and_the_members() {
        let both = names(&["a@h", "b@h"]);
        let valid = || {
            vec![
                row("b@h", "valid", Value::Null),
                row("a@h", "valid", Value::Null),
            ]
        };
        assert_eq!(views(true, json!([]), valid()).check(&both), Ok(()));
        let e = views(false, json!([]), valid()).check(&both).unwrap_err();
        assert!(e.contains("not ready") && e.contains("b@h"), "{e}");
        let t =
            json!([{"node": "a@h", "waiting": [{"partition": 0}], "reported": [{"partition": 1}]}]);
        let e = views(true, t, valid()).check(&both).unwrap_err();
        assert!(e.contains("2 transfers pending"), "{e}");
        let one = vec![row("a@h", "valid", Value::Null)];
        let e = views(true, json!([]), one).check(&both).unwrap_err();
        assert!(e.contains("members are [a@h]"), "{e}");
        let joining = vec![
            row("a@h", "valid", Value::Null),
            row("b@h", "joining", Value::Null),
        ];
        assert!(views(true, json!([]), joining).check(&both).is_err());
        let moving = vec![
            row("a@h", "valid", json!(50.0)),
            row("b@h", "valid", json!(50.0)),
        ];
        assert!(views(true, json!([]), moving).check(&both).is_err());
        let rows_empty = json!([{"node": "a@h", "waiting": [], "reported": []}]);
        assert_eq!(views(true, rows_empty, valid()).check(&both), Ok(()));
    }

    #[test]
    fn plan_summary_names_changes_and_transfers() {
        let plan = json!({"changes": [{"action": "join", "node": "dev2@127.0.0.1"}, {"action": "join", "node": "dev3@127.0.0.1"}], "transfers": 42});
        assert_eq!(
            plan_summary(&plan),
            "Plan: join dev2@127.0.0.1, join dev3@127.0.0.1; 42 transfers"
        );
        assert_eq!(
            plan_summary(&json!({"changes": [], "transfers": 0})),
            "Plan: no changes; 0 transfers"
        );
    }
}
