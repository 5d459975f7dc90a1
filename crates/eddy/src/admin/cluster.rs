//! `eddy admin cluster …`, `member-status`, `ring-status`, `ringready`,
//! `transfers`, `transfer-limit` and `down`: each is one request to the
//! node's cluster admin resource (eddy-api's `http::cluster`), printed as
//! `riak admin` prints it ([`super::render`]). A refusal comes back as the
//! node's message (Riak's wording) and exit status 1.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::render::{self, q};
use super::views::{self, ClusterStatus, MemberStatus, Plan, RingReady, RingStatus, Transfers};
use super::{CommandError, call, expect, fail};
use crate::cli::{ClusterAction, ClusterView};
use crate::config::Settings;

/// `eddy admin cluster …`
pub fn cluster(settings: &Settings, action: &ClusterAction) -> Result<String, CommandError> {
    let node_of = |v: &Value, field: &str| q(v[field].as_str().unwrap_or("?"));
    Ok(match action {
        ClusterAction::Join { node, address } => {
            let body = json!({ "node": node, "address": address });
            let r: Value = post(settings, "/admin/cluster/join", &body)
                .map_err(|e| join_hint(e, node, address.is_none()))?;
            format!(
                "Success: staged join request for {} to {}",
                node_of(&r, "node"),
                node_of(&r, "target")
            )
        }
        ClusterAction::Leave { node } => {
            let r: Value = post(settings, "/admin/cluster/leave", &json!({ "node": node }))?;
            format!("Success: staged leave request for {}", node_of(&r, "node"))
        }
        ClusterAction::ForceRemove { node } => {
            let body = json!({ "node": node });
            let r: Value = post(settings, "/admin/cluster/force-remove", &body)?;
            format!("Success: staged remove request for {}", node_of(&r, "node"))
        }
        ClusterAction::Replace { node1, node2 } => {
            let body = json!({ "node": node1, "with": node2 });
            post::<Value>(settings, "/admin/cluster/replace", &body)?;
            format!(
                "Success: staged replacement of {} with {}",
                q(node1),
                q(node2)
            )
        }
        ClusterAction::ForceReplace { node1, node2 } => {
            let body = json!({ "node": node1, "with": node2 });
            post::<Value>(settings, "/admin/cluster/force-replace", &body)?;
            format!(
                "Success: staged forced replacement of {} with {}",
                q(node1),
                q(node2)
            )
        }
        ClusterAction::Plan => {
            let plan: Plan = get(settings, "/admin/cluster/plan")?;
            render::plan(&plan).unwrap_or_else(|| "There are no staged changes".into())
        }
        ClusterAction::Commit => {
            post::<Plan>(settings, "/admin/cluster/commit", &json!({})).map_err(commit_hint)?;
            "Cluster changes committed".into()
        }
        ClusterAction::Clear => {
            post::<Value>(settings, "/admin/cluster/clear", &json!({}))?;
            "Cleared staged cluster changes".into()
        }
        ClusterAction::Status => {
            render::cluster_status(&get::<ClusterStatus>(settings, "/admin/cluster/status")?)
        }
    })
}

/// A failed join without `--address` says where NODE was looked for:
/// its name's host at the cluster port's default, which a node on another
/// port (a second node on one host) is not at.
fn join_hint(e: CommandError, node: &str, defaulted: bool) -> CommandError {
    if !defaulted {
        return e;
    }
    let host = node.split_once('@').map_or(node, |(_, host)| host);
    CommandError(format!(
        "{e}\n(dialled {host}:8099, {node}'s host at the default cluster port: if its \
         listener.cluster.internal is elsewhere, give --address HOST:PORT)"
    ))
}

/// A commit refused while the ring waits for a member says the way on
/// when that member is gone for good.
fn commit_hint(e: CommandError) -> CommandError {
    if !e.0.contains("not ready") {
        return e;
    }
    CommandError(format!(
        "{e}\n(a member that is down for good can be marked down with \
         `eddy admin down NODE`; the commit then goes on without it)"
    ))
}

/// `eddy admin member-status` and the other views beside `cluster`.
pub fn view(settings: &Settings, view: &ClusterView) -> Result<String, CommandError> {
    Ok(match view {
        ClusterView::MemberStatus => {
            render::member_status(&get::<MemberStatus>(settings, "/admin/member-status")?)
        }
        ClusterView::RingStatus => {
            render::ring_status(&get::<RingStatus>(settings, "/admin/ring-status")?)
        }
        ClusterView::Ringready => {
            let (text, ready) = render::ringready(&get::<RingReady>(settings, "/admin/ringready")?);
            if !ready {
                return fail(text);
            }
            text
        }
        ClusterView::Transfers => {
            render::transfers(&get::<Transfers>(settings, "/admin/transfers")?)
        }
        ClusterView::TransferLimit { args } => transfer_limit(settings, args)?,
        ClusterView::Down { node } => {
            let r: Value = post(settings, "/admin/down", &json!({ "node": node }))?;
            format!(
                "Success: {} marked as down",
                q(r["node"].as_str().unwrap_or(node))
            )
        }
    })
}

/// `transfer-limit`: shows this node's limit; `LIMIT` sets every
/// member's, `NODE LIMIT` one member's. Fails when a member did not take
/// the new limit.
fn transfer_limit(settings: &Settings, args: &[String]) -> Result<String, CommandError> {
    let (node, limit) = match args {
        [] => {
            let shown: views::TransferLimit = get(settings, "/admin/transfer-limit")?;
            return Ok(render::transfer_limit(&shown.node, shown.limit));
        }
        [limit] => (None, limit),
        [node, limit] => (Some(node), limit),
        _ => return fail("usage: eddy admin transfer-limit [NODE] LIMIT"),
    };
    let Ok(limit) = limit.parse::<u32>() else {
        return fail(format!(
            "Failed: the transfer limit must be a positive number, not {limit:?}"
        ));
    };
    let body = json!({ "node": node, "limit": limit });
    let set: views::LimitSet = post(settings, "/admin/transfer-limit", &body)?;
    if !set.missing.is_empty() {
        let nodes: Vec<String> = set.missing.iter().map(|n| q(n)).collect();
        return fail(format!(
            "Failed to set the transfer limit to {limit} on: {} (unreachable)",
            nodes.join(", ")
        ));
    }
    Ok(match node {
        Some(node) => format!("Set transfer limit for {} to {limit}", q(node)),
        None => format!("Set transfer limit for all nodes to {limit}"),
    })
}

fn get<T: DeserializeOwned>(settings: &Settings, path: &str) -> Result<T, CommandError> {
    decode(
        expect(call(settings, "GET", path, "")?, 200)?
            .body
            .as_slice(),
    )
}

fn post<T: DeserializeOwned>(
    settings: &Settings,
    path: &str,
    body: &Value,
) -> Result<T, CommandError> {
    let r = call(settings, "POST", path, &body.to_string())?;
    decode(expect(r, 200)?.body.as_slice())
}

fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, CommandError> {
    serde_json::from_slice(body)
        .map_err(|e| CommandError(format!("unexpected answer from the node: {e}")))
}
