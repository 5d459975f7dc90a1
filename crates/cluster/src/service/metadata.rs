//! Bucket metadata writes: any node stamps the entry, applies it to its
//! own state, saves it, and pushes its state to every reachable member,
//! returning once each acked (merged and saved) or `push_timeout` passed.
//! The report names who has not acked; gossip brings the entry to them.

use eddy_ring::NodeName;

use super::Membership;
use super::error::MembershipError;
use super::exec::{push_state, reachable_members};
use crate::state::ClusterState;

/// Which members a push reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushReport {
    /// The members that acknowledged (merged and saved).
    pub acked: Vec<NodeName>,
    /// The members that did not before the deadline, or were down.
    pub missing: Vec<NodeName>,
}

impl PushReport {
    /// Whether every member other than the writer has the change.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty()
    }
}

impl Membership {
    /// Writes the props of bucket type `name` (what the kv layer stores
    /// for a type: its status and props).
    pub async fn set_bucket_type(
        &self,
        name: &str,
        props: serde_json::Value,
    ) -> Result<PushReport, MembershipError> {
        self.write_metadata(|s, stamp| {
            s.set_bucket_type(name, props, stamp);
        })
        .await
    }

    /// Writes a bucket's own props.
    pub async fn set_bucket_props(
        &self,
        bucket_type: &str,
        bucket: &str,
        props: serde_json::Value,
    ) -> Result<PushReport, MembershipError> {
        self.write_metadata(|s, stamp| {
            s.set_bucket_props(bucket_type, bucket, props, stamp);
        })
        .await
    }

    /// Resets a bucket's props to its type's.
    pub async fn reset_bucket_props(
        &self,
        bucket_type: &str,
        bucket: &str,
    ) -> Result<PushReport, MembershipError> {
        self.write_metadata(|s, stamp| {
            s.reset_bucket_props(bucket_type, bucket, stamp);
        })
        .await
    }

    /// Stamps and applies one write, saves, and pushes to every member.
    async fn write_metadata(
        &self,
        write: impl FnOnce(&mut ClusterState, crate::Stamp),
    ) -> Result<PushReport, MembershipError> {
        let inner = &self.inner;
        let now_ms = (inner.config.wall_clock_ms)();
        let me = inner.me.clone();
        inner
            .update(|s| {
                let stamp = s.next_stamp(&me, now_ms);
                write(s, stamp);
                Ok(())
            })
            .await?;
        let state = inner.current();
        let targets = reachable_members(inner, &state);
        let acked = push_state(inner, &state, targets).await;
        let others = state.members().keys().filter(|n| **n != me);
        let (acked, missing) = others.cloned().partition(|n| acked.contains_key(n));
        Ok(PushReport { acked, missing })
    }
}
