//! What a backend reports about itself.

/// Sizes and counts of one backend instance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendStatus {
    /// Live keys (may include expired keys not yet reclaimed).
    pub keys: u64,
    /// Bytes on disk (or in memory) held by live data.
    pub live_bytes: u64,
    /// Bytes held by overwritten, deleted or expired data awaiting reclaim.
    pub dead_bytes: u64,
    /// Data files on disk.
    pub files: u64,
    /// Engine-specific figures, as name/value pairs.
    pub extra: Vec<(String, String)>,
}
