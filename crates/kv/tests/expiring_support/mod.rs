//! One node of 16 partitions over memory backends with a manual clock, and
//! plain puts and deletes into its `invoices` bucket: what the key-filter
//! and map-fold tests share.

use std::sync::Arc;

use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_storage::{Backend, ManualClock};

/// The node; its backends expire objects `expiry_secs` after they are
/// written (0: never), by `clock`. Deletes keep their tombstones.
pub fn node(clock: Arc<ManualClock>, expiry_secs: u64) -> Arc<Node> {
    node_with(clock, expiry_secs, None)
}

/// [`node`], its vnodes running map phases with `map_runner`.
#[allow(dead_code)] // not every test binary maps
pub fn node_with(
    clock: Arc<ManualClock>,
    expiry_secs: u64,
    map_runner: Option<Arc<dyn eddy_vnode::mapphase::MapRunner>>,
) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: 16,
        delete_mode: DeleteMode::Keep,
        map_runner,
        ..NodeConfig::default()
    };
    Node::start(config, registry, move |p| {
        let memory = MemoryConfig {
            expiry_secs,
            clock: clock.clone(),
            ..MemoryConfig::default()
        };
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(memory));
        (backend, Actor(7000 + u64::from(p.0)))
    })
    .unwrap()
}

pub fn invoices() -> BucketRef {
    BucketRef::default_type("invoices")
}

/// Writes `{}` under `key` in `bucket`.
pub async fn put(node: &Arc<Node>, bucket: BucketRef, key: &str) {
    let req = PutRequest {
        bucket,
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(b"{}".to_vec()),
        options: PutOptions::default(),
    };
    node.put(req).await.unwrap();
}

/// Deletes `key` from `invoices`.
pub async fn delete(node: &Arc<Node>, key: &str) {
    let req = DeleteRequest {
        bucket: invoices(),
        key: key.as_bytes().to_vec(),
        context: None,
        options: DeleteOptions::default(),
    };
    node.delete(req).await.unwrap();
}
