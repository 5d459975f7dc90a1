//! Bucket types and props shared through the cluster (design note 010 §2):
//! a change made on this node is stamped and pushed to every member by the
//! membership service; what the service's metadata holds (every member's
//! changes, merged by stamp) is applied to this node's registry as it
//! changes, at start included.
//!
//! Not yet: a put does not carry its props' stamp, so a write coordinated
//! just after a change may still use the props from before it on a node
//! the change has not reached (the push returns once the members acked or
//! its deadline passed).

use std::sync::Arc;

use eddy_cluster::{BucketMetadata, Membership};
use eddy_kv::metadata::{MetadataChange, SharedMetadata};
use eddy_kv::types::BucketRegistry;

/// Shares `registry` through `membership`, both ways.
pub fn share(registry: &Arc<BucketRegistry>, membership: &Membership) {
    let mut changes = membership.metadata_watch();
    apply(registry, &changes.borrow_and_update());
    let weak = Arc::downgrade(registry);
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let metadata = changes.borrow_and_update().clone();
            match weak.upgrade() {
                Some(registry) => apply(&registry, &metadata),
                None => return,
            }
        }
    });
    let pusher = membership.clone();
    registry.on_change(Arc::new(move |change| {
        let membership = pusher.clone();
        tokio::spawn(async move { push(&membership, change).await });
    }));
}

/// Applies the cluster's bucket metadata to the registry.
fn apply(registry: &BucketRegistry, metadata: &BucketMetadata) {
    let mut shared = SharedMetadata::default();
    for (name, register) in &metadata.bucket_types {
        if !register.deleted {
            shared.types.push((name.clone(), register.props.clone()));
        }
    }
    for (bucket_type, buckets) in &metadata.bucket_props {
        for (bucket, register) in buckets {
            let patch = (!register.deleted).then(|| register.props.clone());
            shared
                .buckets
                .push((bucket_type.clone(), bucket.clone(), patch));
        }
    }
    if let Err(e) = registry.apply_shared(&shared) {
        tracing::error!("applying the cluster's bucket metadata: {e}");
    }
}

/// Pushes one local change to the cluster.
async fn push(membership: &Membership, change: MetadataChange) {
    let pushed = match change {
        MetadataChange::Type { name, entry } => membership.set_bucket_type(&name, entry).await,
        MetadataChange::Bucket {
            bucket_type,
            bucket,
            patch: Some(patch),
        } => {
            membership
                .set_bucket_props(&bucket_type, &bucket, patch)
                .await
        }
        MetadataChange::Bucket {
            bucket_type,
            bucket,
            patch: None,
        } => membership.reset_bucket_props(&bucket_type, &bucket).await,
    };
    match pushed {
        Ok(report) if !report.missing.is_empty() => {
            tracing::info!(missing = ?report.missing, "bucket metadata not yet on every member");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("sharing a bucket metadata change: {e}"),
    }
}
