//! Eddy's cluster admin resource: Riak's `riak admin cluster …`,
//! `member-status`, `ring-status`, `ringready`, `transfers`,
//! `transfer-limit` and `down` as HTTP requests on the node's membership
//! service (`eddy admin cluster …` and friends call it). Bodies are JSON;
//! what each answer holds is in [`json`].
//!
//! | request | body | effect |
//! |---|---|---|
//! | `POST /admin/cluster/join` | `{"node","address"?}` | this node joins `node`'s cluster (staged) |
//! | `POST /admin/cluster/leave` | `{"node"?}` | stages the leave of `node` (default: this node) |
//! | `POST /admin/cluster/force-remove` | `{"node"}` | stages its removal without handoff |
//! | `POST /admin/cluster/replace`, `…/force-replace` | `{"node","with"}` | stages the replacement |
//! | `POST /admin/cluster/clear` | | drops the staged changes |
//! | `GET /admin/cluster/plan` | | the plan (`changes` empty when nothing is staged) |
//! | `POST /admin/cluster/commit` | | commits; answers with the plan carried out |
//! | `GET /admin/cluster/status` | | members with liveness, claimant, ring-ready |
//! | `GET /admin/member-status`, `/admin/ring-status`, `/admin/transfers` | | the views (`transfers`: the ring's ownership handoffs and this node's hinted ones) |
//! | `GET /admin/ringready` | | `{"ready",…}`: asks every member now |
//! | `GET /admin/transfer-limit` | | this node's limit |
//! | `POST /admin/transfer-limit` | `{"node"?,"limit"}` | sets it on `node`, or on every member |
//! | `POST /admin/down` | `{"node"}` | marks an unreachable member down |
//!
//! A join's `address` is where the target's cluster listener is
//! (`host:port`); without it, the node name's host at port 8099 (the
//! default `listener.cluster.internal`).
//!
//! Errors: the membership service's typed errors, with their Riak
//! wording, as 400 (bad input), 404 (a node that is not a member), 409 (a
//! change the cluster's state refuses), 503 (a node or the claimant
//! unreachable, or no membership service on this node), 502 (another
//! node failed) or 500.

mod json;

use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use eddy_cluster::{CommitError, Membership, MembershipError, NodeName, StageError, Transfer};
use eddy_kv::Node;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::ApiError;
use super::keys::json_response;
use super::server::{App, read_body};

/// The port of a join's target when the request names none: the default
/// `listener.cluster.internal`.
pub const CLUSTER_PORT_DEFAULT: u16 = 8099;

/// Longest node name accepted (Erlang's limit on an atom).
const NODE_NAME_BYTES_MAX: usize = 255;

/// What a cluster admin path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterRoute {
    Join,
    Leave,
    ForceRemove,
    Replace,
    ForceReplace,
    Clear,
    Plan,
    Commit,
    Status,
    MemberStatus,
    RingStatus,
    RingReady,
    Transfers,
    TransferLimit,
    Down,
}

impl ClusterRoute {
    /// The route of `/admin/cluster/<op>`.
    pub fn cluster_op(op: &[u8]) -> Option<ClusterRoute> {
        Some(match op {
            b"join" => ClusterRoute::Join,
            b"leave" => ClusterRoute::Leave,
            b"force-remove" => ClusterRoute::ForceRemove,
            b"replace" => ClusterRoute::Replace,
            b"force-replace" => ClusterRoute::ForceReplace,
            b"clear" => ClusterRoute::Clear,
            b"plan" => ClusterRoute::Plan,
            b"commit" => ClusterRoute::Commit,
            b"status" => ClusterRoute::Status,
            _ => return None,
        })
    }

    /// The route of `/admin/<view>` for the views outside `cluster`.
    pub fn admin_view(name: &[u8]) -> Option<ClusterRoute> {
        Some(match name {
            b"member-status" => ClusterRoute::MemberStatus,
            b"ring-status" => ClusterRoute::RingStatus,
            b"ringready" => ClusterRoute::RingReady,
            b"transfers" => ClusterRoute::Transfers,
            b"transfer-limit" => ClusterRoute::TransferLimit,
            b"down" => ClusterRoute::Down,
            _ => return None,
        })
    }
}

/// Answers one cluster admin request.
pub async fn handle(app: &App, route: ClusterRoute, req: Request) -> Result<Response, ApiError> {
    let Some(m) = app.config.membership.as_ref() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "this node runs no membership service\n",
        ));
    };
    check_method(route, req.method())?;
    if *req.method() == Method::GET || *req.method() == Method::HEAD {
        return view(app, m, route).await.map(ok);
    }
    let (parts, body) = req.into_parts();
    let body = read_body(&parts.headers, body, app.config.body_bytes_max).await?;
    change(m, route, &body).await.map(ok)
}

/// The methods each route takes.
fn check_method(route: ClusterRoute, method: &Method) -> Result<(), ApiError> {
    use ClusterRoute::*;
    let get = matches!(*method, Method::GET | Method::HEAD);
    let post = *method == Method::POST;
    match route {
        Plan | Status | MemberStatus | RingStatus | RingReady | Transfers if !get => {
            Err(ApiError::method_not_allowed("GET, HEAD"))
        }
        TransferLimit if !get && !post => Err(ApiError::method_not_allowed("GET, HEAD, POST")),
        Join | Leave | ForceRemove | Replace | ForceReplace | Clear | Commit | Down if !post => {
            Err(ApiError::method_not_allowed("POST"))
        }
        _ => Ok(()),
    }
}

/// An inbound transfer silent for this long is not shown as active (its
/// sender is gone; the receiver keeps its slot until another needs it).
const INBOUND_FRESH_MS: u128 = 10_000;

/// The read-only requests.
async fn view(app: &App, m: &Membership, route: ClusterRoute) -> Result<Value, ApiError> {
    Ok(match route {
        ClusterRoute::Plan => match m.plan().await {
            Ok(plan) => json::plan(&plan),
            Err(MembershipError::Commit(CommitError::EmptyPlan)) => json::empty_plan(),
            Err(e) => return Err(membership_error(e)),
        },
        ClusterRoute::Status => json::cluster_status(m),
        ClusterRoute::MemberStatus => json::member_status(&m.member_status()),
        ClusterRoute::RingStatus => json::ring_status(&m.ring_status(), &m.transfers()),
        ClusterRoute::RingReady => {
            let members: Vec<NodeName> = m.state().members().keys().cloned().collect();
            json::ringready(&members, m.ringready().await)
        }
        ClusterRoute::Transfers => transfers(app, m),
        _ => json!({ "node": m.node(), "limit": *m.transfer_limit_watch().borrow() }),
    })
}

/// `transfers`: the cluster's waiting and reported transfers (with this
/// node's hinted handoffs), and the ones this node is running now.
fn transfers(app: &App, m: &Membership) -> Value {
    let mut body = json::transfers(&m.transfers_with(hinted(&app.node)));
    if let Some(h) = app.config.handoffs.as_ref() {
        let (active, inbound) =
            json::active(m.node(), &h.transfers(), &h.inbound(), INBOUND_FRESH_MS);
        body["active"] = active;
        body["inbound"] = inbound;
    }
    body
}

/// The hinted handoffs `node` has to send: one per fallback vnode it runs,
/// to the partition's owner (up or not), by the node's own ring.
fn hinted(node: &Node) -> Vec<Transfer> {
    let ring = node.ring();
    let me = &node.config().node_name;
    node.fallback_partitions(&ring)
        .into_iter()
        .map(|partition| Transfer {
            partition,
            from: me.clone(),
            to: ring.owner(partition).clone(),
        })
        .collect()
}

/// `{"node"}`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeBody {
    node: String,
}

/// `{"node"?}`
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MaybeNodeBody {
    node: Option<String>,
}

/// `{"node","address"?}`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JoinBody {
    node: String,
    address: Option<String>,
}

/// `{"node","with"}`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplaceBody {
    node: String,
    with: String,
}

/// `{"node"?,"limit"}`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitBody {
    node: Option<String>,
    limit: u32,
}

/// The requests that change something.
async fn change(m: &Membership, route: ClusterRoute, body: &[u8]) -> Result<Value, ApiError> {
    let me = m.node().clone();
    let out = match route {
        ClusterRoute::Join => {
            let b: JoinBody = parse(body)?;
            let target = node_name(b.node)?;
            let address = join_address(&target, b.address.as_deref()).await?;
            m.join(target.clone(), address)
                .await
                .map_err(membership_error)?;
            json!({ "node": me, "target": target, "address": address.to_string() })
        }
        ClusterRoute::Leave => {
            let b: MaybeNodeBody = parse_or_default(body)?;
            let node = b.node.map(node_name).transpose()?.unwrap_or(me);
            m.leave(Some(node.clone()))
                .await
                .map_err(membership_error)?;
            json!({ "node": node })
        }
        ClusterRoute::ForceRemove => {
            let node = node_name(parse::<NodeBody>(body)?.node)?;
            m.force_remove(node.clone())
                .await
                .map_err(membership_error)?;
            json!({ "node": node })
        }
        ClusterRoute::Replace | ClusterRoute::ForceReplace => {
            let b: ReplaceBody = parse(body)?;
            let (node, with) = (node_name(b.node)?, node_name(b.with)?);
            let staged = match route {
                ClusterRoute::Replace => m.replace(node.clone(), with.clone()).await,
                _ => m.force_replace(node.clone(), with.clone()).await,
            };
            staged.map_err(membership_error)?;
            json!({ "node": node, "with": with })
        }
        ClusterRoute::Clear => {
            m.clear().await.map_err(membership_error)?;
            json!({ "cleared": true })
        }
        ClusterRoute::Commit => json::plan(&m.commit().await.map_err(membership_error)?),
        ClusterRoute::TransferLimit => transfer_limit(m, body).await?,
        ClusterRoute::Down => {
            let node = node_name(parse::<NodeBody>(body)?.node)?;
            m.down(node.clone()).await.map_err(membership_error)?;
            json!({ "node": node })
        }
        _ => return Err(ApiError::method_not_allowed("GET, HEAD")),
    };
    Ok(out)
}

async fn transfer_limit(m: &Membership, body: &[u8]) -> Result<Value, ApiError> {
    let b: LimitBody = parse(body)?;
    if b.limit == 0 {
        return Err(ApiError::bad_request(
            "limit must be a positive number of transfers\n",
        ));
    }
    let node = b.node.map(node_name).transpose()?;
    let report = m
        .transfer_limit(node.clone(), b.limit)
        .await
        .map_err(membership_error)?;
    Ok(json!({
        "node": node,
        "limit": b.limit,
        "acked": report.acked,
        "missing": report.missing,
    }))
}

fn ok(body: Value) -> Response {
    json_response(body.to_string().into())
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("bad JSON request body: {e}\n")))
}

/// An empty body is `{}`.
fn parse_or_default<T: DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    parse(body)
}

/// A node name as Riak takes it: `name@host`, both parts non-empty, no
/// spaces.
pub fn node_name(text: String) -> Result<NodeName, ApiError> {
    let valid = text.len() <= NODE_NAME_BYTES_MAX
        && !text.chars().any(char::is_whitespace)
        && text.split_once('@').is_some_and(|(name, host)| {
            !name.is_empty() && !host.is_empty() && !host.contains('@')
        });
    if !valid {
        return Err(ApiError::bad_request(format!(
            "Failed: {text:?} is not a valid node name; node names look like name@host\n"
        )));
    }
    Ok(NodeName(text))
}

/// Where `target`'s cluster listener is: `address` resolved, or the node
/// name's host at [`CLUSTER_PORT_DEFAULT`].
async fn join_address(target: &NodeName, address: Option<&str>) -> Result<SocketAddr, ApiError> {
    let host = target.0.split_once('@').map_or("", |(_, h)| h);
    let text = match address {
        Some(a) => a.to_string(),
        None => format!("{host}:{CLUSTER_PORT_DEFAULT}"),
    };
    let unresolved = |reason: String| {
        ApiError::bad_request(format!(
            "Failed: cannot resolve {text:?}, the cluster address of {target}: {reason}\n"
        ))
    };
    let mut found = tokio::net::lookup_host(text.as_str())
        .await
        .map_err(|e| unresolved(e.to_string()))?;
    found
        .next()
        .ok_or_else(|| unresolved("no address found".into()))
}

/// A membership error as an HTTP answer, with the error's own words.
pub fn membership_error(e: MembershipError) -> ApiError {
    let status = match &e {
        MembershipError::Stage(StageError::JoinSelf(_)) => StatusCode::BAD_REQUEST,
        MembershipError::Stage(StageError::NotMember(_)) => StatusCode::NOT_FOUND,
        MembershipError::Stage(_) | MembershipError::Transfer(_) => StatusCode::CONFLICT,
        MembershipError::Commit(
            CommitError::EmptyPlan
            | CommitError::RingNotReady { .. }
            | CommitError::NotClaimant { .. },
        ) => StatusCode::CONFLICT,
        MembershipError::Unreachable { .. }
        | MembershipError::NoClaimant
        | MembershipError::Shutdown => StatusCode::SERVICE_UNAVAILABLE,
        MembershipError::Remote { .. } | MembershipError::BadReply { .. } => {
            StatusCode::BAD_GATEWAY
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, format!("{e}\n"))
}

#[cfg(test)]
mod tests;
