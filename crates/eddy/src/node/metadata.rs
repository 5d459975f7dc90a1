//! Bucket types and props shared through the cluster (design note 010 §2):
//! a change made on this node is stamped and pushed to every member by the
//! membership service; what the service's metadata holds (every member's
//! changes, merged by stamp) is applied to this node's registry as it
//! changes, at start included.
//!
//! A change made here is pushed in order, and the cluster's version of its
//! entry is not applied over it until the push is done (the registry's
//! unconfirmed entries), so a client reading back what it just set never
//! sees the cluster's older version.
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
    // One task pushes the changes in the order they were made, and
    // confirms each to the registry once the cluster took it: until then
    // the cluster's version of that entry is older than this node's.
    let (tx, mut queue) = tokio::sync::mpsc::unbounded_channel::<MetadataChange>();
    registry.on_change(Arc::new(move |change| {
        let _ = tx.send(change);
    }));
    let (membership, weak) = (membership.clone(), Arc::downgrade(registry));
    tokio::spawn(async move {
        while let Some(change) = queue.recv().await {
            let entry = change.entry();
            push(&membership, change).await;
            match weak.upgrade() {
                Some(registry) => registry.confirmed(&entry),
                None => return,
            }
        }
    });
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
