//! The cluster admin answers as the CLI reads them: the JSON bodies of
//! eddy-api's `http::cluster` resource, typed, so an answer of the wrong
//! shape is an error rather than an empty line.

use serde::Deserialize;

/// One member row.
#[derive(Debug, Deserialize)]
pub struct Row {
    pub node: String,
    pub status: String,
    pub ring_pct: f64,
    pub pending_pct: Option<f64>,
    #[serde(default)]
    pub up: Option<bool>,
    #[serde(default)]
    pub claimant: Option<bool>,
}

/// `GET /admin/member-status`
#[derive(Debug, Deserialize)]
pub struct MemberStatus {
    pub members: Vec<Row>,
}

/// One staged change.
#[derive(Debug, Deserialize)]
pub struct Change {
    pub action: String,
    pub node: String,
    pub with: Option<String>,
}

/// Partitions moving from one node to another.
#[derive(Debug, Deserialize)]
pub struct Move {
    pub from: String,
    pub to: String,
    pub partitions: usize,
}

/// `GET /admin/cluster/plan`, `POST /admin/cluster/commit`
#[derive(Debug, Deserialize)]
pub struct Plan {
    pub changes: Vec<Change>,
    pub lost: Vec<String>,
    pub after: Vec<Row>,
    pub transfers: usize,
    pub reassigned: usize,
    pub moves: Vec<Move>,
}

/// `GET /admin/cluster/status`
#[derive(Debug, Deserialize)]
pub struct ClusterStatus {
    pub ring_ready: bool,
    pub members: Vec<Row>,
}

/// A transfer.
#[derive(Debug, Deserialize)]
pub struct Transfer {
    pub partition: u32,
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub done: bool,
}

/// `GET /admin/ring-status`
#[derive(Debug, Deserialize)]
pub struct RingStatus {
    pub claimant: Option<String>,
    pub ring_ready: bool,
    pub pending: Vec<Transfer>,
    pub unreachable: Vec<String>,
}

/// `GET /admin/ringready`
#[derive(Debug, Deserialize)]
pub struct RingReady {
    pub ready: bool,
    pub nodes: Vec<String>,
    pub waiting: Vec<String>,
}

/// One node's row of `GET /admin/transfers`.
#[derive(Debug, Deserialize)]
pub struct NodeTransfers {
    pub node: String,
    pub waiting: Vec<Transfer>,
    pub reported: Vec<Transfer>,
}

/// A transfer this node is sending now.
#[derive(Debug, Deserialize)]
pub struct ActiveTransfer {
    #[serde(rename = "type")]
    pub kind: String,
    pub partition: u32,
    pub from: String,
    pub to: String,
    pub objects: u64,
    pub bytes: u64,
    pub resumes: u64,
    pub last_error: Option<String>,
    pub elapsed_ms: u64,
    pub bytes_per_sec: u64,
}

/// A transfer this node is receiving now.
#[derive(Debug, Deserialize)]
pub struct InboundTransfer {
    pub partition: u32,
    pub from: String,
    pub to: String,
    pub batches: u64,
    pub objects: u64,
}

/// `GET /admin/transfers`
#[derive(Debug, Deserialize)]
pub struct Transfers {
    pub transfers: Vec<NodeTransfers>,
    /// What the answering node is sending now.
    #[serde(default)]
    pub active: Vec<ActiveTransfer>,
    /// What it is receiving now.
    #[serde(default)]
    pub inbound: Vec<InboundTransfer>,
}

/// `GET /admin/transfer-limit`
#[derive(Debug, Deserialize)]
pub struct TransferLimit {
    pub node: String,
    pub limit: u64,
}

/// `POST /admin/transfer-limit`
#[derive(Debug, Deserialize)]
pub struct LimitSet {
    pub missing: Vec<String>,
}
