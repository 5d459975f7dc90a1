//! The transport's settings, read once at start.

use std::time::Duration;

use crate::handshake::{PROTOCOL_VERSIONS, Versions};

/// Settings shared by the TCP and the simulated transports.
#[derive(Clone, Debug)]
pub struct NetConfig {
    /// Nodes of another cluster name are refused at the handshake.
    pub cluster_name: String,
    /// Largest frame body sent or accepted; a peer announcing more is cut off.
    pub frame_body_bytes_max: usize,
    /// Frames queued per control connection before senders wait, and
    /// requests a peer may have outstanding on one inbound control connection.
    pub control_queue_frames: usize,
    /// The same for bulk connections, whose frames are handoff batches.
    pub bulk_queue_frames: usize,
    /// How long opening a connection (TCP connect) may take.
    pub connect_timeout: Duration,
    /// How long the handshake may take, on either side.
    pub handshake_timeout: Duration,
    /// Wait after the first failed connect before the next attempt; doubled
    /// after each failure up to `reconnect_backoff_max`.
    pub reconnect_backoff_min: Duration,
    /// Longest wait between connect attempts.
    pub reconnect_backoff_max: Duration,
    /// Protocol versions offered and accepted.
    pub protocol_versions: Versions,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            cluster_name: "default".into(),
            frame_body_bytes_max: 16 << 20,
            control_queue_frames: 4096,
            bulk_queue_frames: 64,
            connect_timeout: Duration::from_secs(2),
            handshake_timeout: Duration::from_secs(5),
            reconnect_backoff_min: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_secs(1),
            protocol_versions: PROTOCOL_VERSIONS,
        }
    }
}

impl NetConfig {
    /// The queue length of a lane.
    pub fn queue_frames(&self, lane: crate::Lane) -> usize {
        match lane {
            crate::Lane::Control => self.control_queue_frames,
            crate::Lane::Bulk => self.bulk_queue_frames,
        }
        .max(1)
    }
}
