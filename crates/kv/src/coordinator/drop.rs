//! Dropping a bucket (design note 018): one registry change, then the
//! dropped objects' removal from this node's backends.
//!
//! A drop raises the bucket's `generation` (its shared props entry), and
//! every request names objects under the generation its props give
//! ([`BucketRef::storage_bucket_at`]), so the bucket is empty the moment
//! a node knows the new generation, whatever its backends still hold.
//! The sweep then removes each earlier generation from every vnode of the
//! node with the backend's `drop_bucket` (one step per backend, not key
//! by key): at once where the drop was made, when the change arrives
//! elsewhere (the registry's generation hook), and at start for every
//! dropped bucket (what replay or a handoff put back under an earlier
//! name). Objects of an earlier generation that still arrive — a handoff
//! or read repair from a node that has not heard of the drop, a record
//! replayed — are either refused ([`Node::is_dropped_generation`]) or
//! invisible until the next sweep: nothing reads them.
//!
//! Invariant: a key of a bucket is only ever read or written under the
//! generation the node's registry gives the bucket at that moment.

use std::sync::Arc;
use std::time::{Duration, Instant};

use eddy_storage::{FoldControl, FoldOptions};

use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::request::BucketRef;
use eddy_vnode::VnodeHandle;

/// What a drop did on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropOutcome {
    /// The bucket's generation from now on.
    pub generation: u64,
    /// Whether the change was pushed to every member the cluster could
    /// reach before the answer (always, on a node of its own).
    pub shared: bool,
}

/// How long a drop waits for the cluster to take it before it answers.
const SHARE_WAIT: Duration = Duration::from_secs(10);

impl Node {
    /// Drops `bucket`: its objects, index entries and siblings are gone at
    /// once on this node and, as the change spreads, on every member; then
    /// removes them from this node's backends and waits (a while) until
    /// the cluster has taken the change. Blocking.
    pub fn drop_bucket_blocking(&self, bucket: &BucketRef) -> Result<DropOutcome, KvError> {
        self.props(bucket)?;
        let (generation, change) = self
            .registry
            .drop_bucket(&bucket.bucket_type, &bucket.bucket)?;
        // The registry's hook may have started this sweep already; either
        // way this node holds nothing of the bucket's earlier generations
        // once it returns.
        self.sweep_dropped(bucket, generation)?;
        let deadline = Instant::now() + SHARE_WAIT;
        let shared = loop {
            let shared = self.metadata_pushes().has_pushed(change);
            if shared || Instant::now() >= deadline {
                break shared;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Ok(DropOutcome { generation, shared })
    }

    /// Removes the objects of `bucket`'s generations before `generation`
    /// from every vnode of this node; returns how many held some. Sweeps
    /// run one at a time. Blocking.
    pub fn sweep_dropped(&self, bucket: &BucketRef, generation: u64) -> Result<usize, KvError> {
        let _one_at_a_time = self.sweeping.lock();
        let mut swept = 0;
        for vnode in self.local_vnodes() {
            if sweep_vnode(&vnode, bucket, generation)? {
                swept += 1;
            }
        }
        if swept > 0 {
            tracing::info!(
                bucket_type = bucket.bucket_type,
                bucket = %String::from_utf8_lossy(&bucket.bucket),
                generation,
                vnodes = swept,
                "dropped bucket swept"
            );
        }
        Ok(swept)
    }

    /// Sweeps every bucket the registry says was dropped (at start).
    pub(crate) fn sweep_all_dropped(&self) {
        for (bucket, generation) in self.registry.dropped_buckets() {
            if let Err(e) = self.sweep_dropped(&bucket, generation) {
                tracing::error!("sweeping a dropped bucket: {e}");
            }
        }
    }

    /// Has the registry tell this node of every drop, to sweep it on a
    /// thread of its own.
    pub(crate) fn sweep_on_generation(self: &Arc<Self>) {
        let me = Arc::downgrade(self);
        self.registry
            .on_generation(Arc::new(move |bucket, generation| {
                let (me, bucket) = (me.clone(), bucket.clone());
                let spawned =
                    std::thread::Builder::new()
                        .name("eddy-sweep".into())
                        .spawn(move || {
                            let Some(node) = me.upgrade() else { return };
                            if let Err(e) = node.sweep_dropped(&bucket, generation) {
                                tracing::error!("sweeping a dropped bucket: {e}");
                            }
                        });
                if let Err(e) = spawned {
                    tracing::error!("starting a dropped bucket's sweep: {e}");
                }
            }));
    }

    /// True when `storage_bucket` names an earlier generation of its
    /// bucket than this node's registry gives: what is written there is
    /// never read.
    pub(crate) fn is_dropped_generation(&self, storage_bucket: &[u8]) -> bool {
        self.registry
            .props_of_storage_bucket(storage_bucket)
            .is_some_and(|(props, generation)| props.generation > generation)
    }
}

/// Drops each generation of `bucket` before `generation` that `vnode`
/// holds an object of; true if it held any. The sweep holds the vnode as
/// a fold does, so a drop of the vnode (after a handoff) waits for it; a
/// vnode already closing is passed over: its data goes with it.
fn sweep_vnode(vnode: &VnodeHandle, bucket: &BucketRef, generation: u64) -> Result<bool, KvError> {
    let Some(_open) = vnode.begin_fold() else {
        return Ok(false);
    };
    let backend = vnode.backend();
    let mut held = false;
    for earlier in 0..generation {
        let objects = bucket.storage_bucket_at(earlier);
        // Big data type values' segments go after their roots.
        let segments = eddy_model::request::segments_bucket(&objects);
        for name in [objects, segments] {
            let mut any = false;
            backend.fold_keys(&FoldOptions::bucket(&name), &mut |_, _| {
                any = true;
                FoldControl::Stop
            })?;
            if any {
                vnode.stores().drop_bucket(&name)?;
                held = true;
            }
        }
    }
    Ok(held)
}
