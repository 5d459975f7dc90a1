//! The membership service's settings, read once at start.

use std::path::PathBuf;
use std::time::Duration;

use eddy_ring::ClaimParams;

/// Riak's default `transfer_limit` (concurrent handoffs per node).
pub const TRANSFER_LIMIT_DEFAULT: u32 = 2;

/// How a [`super::Membership`] runs.
#[derive(Clone, Debug)]
pub struct MembershipConfig {
    /// Where the node's cluster state is saved (`meta/cluster.json`).
    pub state_path: PathBuf,
    /// What claim aims for when a plan is computed.
    pub claim: ClaimParams,
    /// Time between gossip rounds (one digest to one random member).
    pub gossip_interval: Duration,
    /// Wait after a change before the next gossip round, instead of the
    /// whole interval.
    pub gossip_after_change: Duration,
    /// Time between probes of each member.
    pub probe_interval: Duration,
    /// How long a direct or indirect probe waits for its ack.
    pub probe_timeout: Duration,
    /// Members asked to probe a member that missed a direct probe.
    pub indirect_probes: usize,
    /// A member not heard from for this long is down.
    pub down_after: Duration,
    /// Deadline of an admin call to the claimant or a join's target.
    pub admin_timeout: Duration,
    /// How long a bucket metadata push (or the claimant's pre-commit sync)
    /// waits for members' acks.
    pub push_timeout: Duration,
    /// This node's transfer limit until an operator sets one.
    pub transfer_limit: u32,
    /// Wall-clock milliseconds since the Unix epoch, for bucket metadata
    /// stamps (injected so a simulation can drive it).
    pub wall_clock_ms: fn() -> u64,
    /// Saves the state on the calling task instead of tokio's blocking
    /// pool. A save on another thread finishes at a real instant, so the
    /// order in which a current-thread runtime then runs its tasks would
    /// depend on the machine's load; inline, a simulation on paused time
    /// replays exactly. Off in a server, whose runtime must not stall on
    /// an fsync.
    pub blocking_inline: bool,
}

impl MembershipConfig {
    /// Default timings, saving the state at `state_path`. A killed node is
    /// down for the others within `down_after` (1 s) at most, usually at
    /// once (its connections are refused); a partitioned one within
    /// `down_after` + `probe_interval`.
    pub fn new(state_path: impl Into<PathBuf>) -> MembershipConfig {
        MembershipConfig {
            state_path: state_path.into(),
            claim: ClaimParams::default(),
            gossip_interval: Duration::from_secs(1),
            gossip_after_change: Duration::from_millis(20),
            probe_interval: Duration::from_millis(200),
            probe_timeout: Duration::from_millis(400),
            indirect_probes: 2,
            down_after: Duration::from_secs(1),
            admin_timeout: Duration::from_secs(10),
            push_timeout: Duration::from_secs(2),
            transfer_limit: TRANSFER_LIMIT_DEFAULT,
            wall_clock_ms: system_clock_ms,
            blocking_inline: false,
        }
    }
}

/// The system's wall clock in milliseconds since the Unix epoch.
pub fn system_clock_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
