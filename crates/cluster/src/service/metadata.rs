//! Bucket metadata writes: any node stamps the entry, applies it to its
//! own state and saves it (`record_metadata`: the node's registry has it
//! when that returns), then pushes its state to every reachable member
//! (`push_metadata`), returning once each acked (merged and saved) or
//! `push_timeout` passed. The report names who has not acked; gossip
//! brings the entry to them.

use eddy_model::metadata::MetadataChange;
use eddy_model::props::PropsPatch;
use eddy_model::types::TypeEntry;
use eddy_ring::NodeName;

use super::Membership;
use super::error::MembershipError;
use super::exec::{push_state, reachable_members};

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
    /// Writes the entry of bucket type `name`.
    pub async fn set_bucket_type(
        &self,
        name: &str,
        entry: TypeEntry,
    ) -> Result<PushReport, MembershipError> {
        let change = MetadataChange::Type {
            name: name.to_owned(),
            entry,
        };
        self.write_metadata(change).await
    }

    /// Writes a bucket's own props.
    pub async fn set_bucket_props(
        &self,
        bucket_type: &str,
        bucket: &str,
        patch: PropsPatch,
    ) -> Result<PushReport, MembershipError> {
        self.write_metadata(bucket_change(bucket_type, bucket, Some(patch)))
            .await
    }

    /// Resets a bucket's props to its type's.
    pub async fn reset_bucket_props(
        &self,
        bucket_type: &str,
        bucket: &str,
    ) -> Result<PushReport, MembershipError> {
        self.write_metadata(bucket_change(bucket_type, bucket, None))
            .await
    }

    /// Records one change and pushes it to every member.
    pub async fn write_metadata(
        &self,
        change: MetadataChange,
    ) -> Result<PushReport, MembershipError> {
        self.record_metadata(change).await?;
        Ok(self.push_metadata().await)
    }

    /// Stamps one change to the bucket metadata, applies it to this
    /// node's state and saves it; the metadata applier has it before this
    /// returns.
    pub async fn record_metadata(&self, change: MetadataChange) -> Result<(), MembershipError> {
        let inner = &self.inner;
        let now_ms = (inner.config.wall_clock_ms)();
        let me = inner.me.clone();
        inner
            .update(|s| {
                let stamp = s.metadata().next_stamp(&me, now_ms);
                s.metadata_mut().write(change, stamp);
                Ok(())
            })
            .await?;
        Ok(())
    }

    /// Pushes this node's state to every reachable member; returns once
    /// each acked (merged and saved) or `push_timeout` passed.
    pub async fn push_metadata(&self) -> PushReport {
        let inner = &self.inner;
        let state = inner.current();
        let targets = reachable_members(inner, &state);
        let acked = push_state(inner, &state, targets).await;
        let others = state.members().keys().filter(|n| **n != inner.me);
        let (acked, missing) = others.cloned().partition(|n| acked.contains_key(n));
        PushReport { acked, missing }
    }
}

fn bucket_change(bucket_type: &str, bucket: &str, patch: Option<PropsPatch>) -> MetadataChange {
    MetadataChange::Bucket {
        bucket_type: bucket_type.to_owned(),
        bucket: bucket.to_owned(),
        patch,
    }
}
