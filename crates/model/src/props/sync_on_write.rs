//! `sync_on_write` (Riak 2.9): which replicas of a put flush it to stable
//! storage before they reply, whatever the client's `dw` asked.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which replicas sync a put before replying.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncOnWrite {
    /// Every replica (all n_val vnodes) syncs the write before it replies.
    All,
    /// The coordinating vnode syncs it; the other replicas follow the
    /// backend's own policy.
    One,
    /// Every replica follows the backend's own policy (Riak's default).
    #[default]
    Backend,
}

impl SyncOnWrite {
    /// Whether the vnode that applies a put syncs it before replying,
    /// beyond what its backend's policy and the put's `dw` would do.
    pub fn syncs(self, coordinating: bool) -> bool {
        match self {
            SyncOnWrite::All => true,
            SyncOnWrite::One => coordinating,
            SyncOnWrite::Backend => false,
        }
    }
}

impl fmt::Display for SyncOnWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyncOnWrite::All => "all",
            SyncOnWrite::One => "one",
            SyncOnWrite::Backend => "backend",
        })
    }
}

impl Serialize for SyncOnWrite {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SyncOnWrite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SyncOnWrite, D::Error> {
        let bad = || serde::de::Error::custom("sync_on_write must be all, one or backend");
        let text = serde_json::Value::deserialize(d)?;
        match text.as_str().ok_or_else(bad)? {
            "all" => Ok(SyncOnWrite::All),
            "one" => Ok(SyncOnWrite::One),
            "backend" => Ok(SyncOnWrite::Backend),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_and_print_as_riak_spells_them() {
        for mode in [SyncOnWrite::All, SyncOnWrite::One, SyncOnWrite::Backend] {
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, serde_json::Value::from(mode.to_string()));
            assert_eq!(serde_json::from_value::<SyncOnWrite>(json).unwrap(), mode);
        }
        for bad in [serde_json::json!("ALL"), serde_json::json!(1)] {
            let e = serde_json::from_value::<SyncOnWrite>(bad).unwrap_err();
            assert!(e.to_string().contains("sync_on_write"), "{e}");
        }
    }

    #[test]
    fn who_syncs() {
        assert!(SyncOnWrite::All.syncs(false));
        assert!(SyncOnWrite::One.syncs(true) && !SyncOnWrite::One.syncs(false));
        assert!(!SyncOnWrite::Backend.syncs(true));
    }
}
