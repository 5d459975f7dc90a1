//! Bucket types and props shared through the cluster (design note 010 §2):
//! a change made on this node is stamped and pushed to every member by the
//! membership service; what the service's metadata holds (every member's
//! changes, merged by stamp) is applied to this node's registry at start
//! and as each change is saved, before the change is acknowledged to the
//! member that pushed it (design note 026), so a member that acked a
//! change serves it.
//!
//! A change made here is pushed in order, and the cluster's version of its
//! entry is not applied over it until the push is done (the registry's
//! unconfirmed entries), so a client reading back what it just set never
//! sees the cluster's older version. Each push's outcome (the members it
//! did not reach) is reported to the node's `MetadataPushes`, which the
//! request that made the change waits on before it answers.
//!
//! Each entry is applied with its stamp (as the kv layer's
//! [`EntryStamp`]: time, counter and [`Stamp::writer_key`], ordered as
//! the cluster orders stamps), and a put to another node carries the
//! stamps and entries its coordinator resolved: a replica that has not
//! yet received a change takes it from the put, and a coordinator that
//! has not is refused by a replica that has, takes the change from the
//! refusal and puts again (eddy_kv's `metadata::entries`, design note 010
//! §2). Both go through the registry's `apply_shared`, which never
//! replaces an entry by an older one.
//!
//! A change made here keeps its previous stamp until the cluster's
//! stamped version of the same content comes back (the service stamps and
//! saves it as its push starts, or a replica's refusal of a put carries
//! it); until then this node's puts carry
//! the older stamp, so a replica the push has not reached yet applies
//! them with its own older entry for its local choices (its `backend`).

use std::sync::Arc;

use eddy_cluster::{BucketMetadata, Membership, Stamp};
use eddy_kv::Node;
use eddy_kv::metadata_push::Sharing;
use eddy_model::metadata::entries::EntryStamp;
use eddy_model::metadata::{ChangeId, MetadataChange, SharedBucket, SharedMetadata, SharedType};
use eddy_model::types::BucketRegistry;

/// Shares `node`'s registry through `membership`, both ways.
pub fn share(node: &Arc<Node>, membership: &Membership) {
    let registry = node.registry();
    // Applied as the cluster saves each change, before this node
    // acknowledges it to the member that pushed it.
    let weak = Arc::downgrade(registry);
    membership.on_metadata(Arc::new(move |metadata| {
        if let Some(registry) = weak.upgrade() {
            apply(&registry, metadata);
        }
    }));
    // One task pushes the changes in the order they were made, and
    // confirms each to the registry once the cluster took it: until then
    // the cluster's version of that entry is older than this node's.
    let (tx, mut queue) = tokio::sync::mpsc::unbounded_channel::<(ChangeId, MetadataChange)>();
    registry.on_change(Arc::new(move |id, change| {
        let _ = tx.send((id, change));
    }));
    let (membership, weak) = (membership.clone(), Arc::downgrade(node));
    tokio::spawn(async move {
        while let Some((id, change)) = queue.recv().await {
            let entry = change.entry();
            let outcome = push(&membership, change).await;
            let Some(node) = weak.upgrade() else { return };
            node.registry().confirmed(&entry);
            node.metadata_pushes().pushed(id, outcome);
        }
    });
}

/// Applies the cluster's bucket metadata to the registry.
fn apply(registry: &BucketRegistry, metadata: &BucketMetadata) {
    let mut shared = SharedMetadata::default();
    for (name, register) in &metadata.bucket_types {
        if !register.deleted {
            shared.types.push(SharedType {
                name: name.clone(),
                entry: register.props.clone(),
                stamp: Some(entry_stamp(&register.stamp)),
            });
        }
    }
    for (bucket_type, buckets) in &metadata.bucket_props {
        for (bucket, register) in buckets {
            shared.buckets.push(SharedBucket {
                bucket_type: bucket_type.clone(),
                bucket: bucket.clone(),
                patch: (!register.deleted).then(|| register.props.clone()),
                stamp: Some(entry_stamp(&register.stamp)),
            });
        }
    }
    if let Err(e) = registry.apply_shared(&shared) {
        tracing::error!("applying the cluster's bucket metadata: {e}");
    }
}

/// The kv layer's form of a cluster stamp.
fn entry_stamp(stamp: &Stamp) -> EntryStamp {
    EntryStamp {
        time_ms: stamp.time_ms,
        counter: stamp.counter,
        writer: stamp.writer_key(),
    }
}

/// Pushes one local change to the cluster; answers where it reached.
async fn push(membership: &Membership, change: MetadataChange) -> Sharing {
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
            Sharing::Missing(report.missing)
        }
        Ok(_) => Sharing::Complete,
        Err(e) => {
            tracing::warn!("sharing a bucket metadata change: {e}");
            Sharing::Failed(e.to_string())
        }
    }
}
