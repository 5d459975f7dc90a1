//! What the remote_* tests share: real vnodes over memory backends behind
//! an inbound function, and vnode requests built from plain keys.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use eddy_kv::router::unanswerable;
use eddy_model::KvError;
use eddy_model::error::Signal;
use eddy_object::{Actor, Content, VersionVector, codec};
use eddy_remote::Inbound;
use eddy_ring::{NodeName, Partition};
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_vnode::msg::{
    Conditions, Coordinate, PutKind, PutRequest, StorageKey, SyncLevel, VnodeRequest, WritePolicy,
};
use eddy_vnode::reply::{LocalHint, Reply};
use eddy_vnode::{Vnode, VnodeHandle};
use tokio::sync::mpsc::UnboundedReceiver;

pub fn node(name: &str) -> NodeName {
    NodeName(name.to_string())
}

/// Vnodes for partitions `0..n`, each over its own memory backend.
pub fn vnodes(n: u32) -> Arc<HashMap<Partition, VnodeHandle>> {
    let vnodes = (0..n).map(|p| {
        let backend = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        let vnode = Vnode::new(Partition(p), Actor(1000 + u64::from(p)), backend, None);
        (Partition(p), vnode)
    });
    Arc::new(vnodes.collect())
}

/// Hands requests to `vnodes`; a partition it lacks is not hosted.
pub fn inbound(vnodes: Arc<HashMap<Partition, VnodeHandle>>) -> Inbound {
    Arc::new(move |to, req, reply| match vnodes.get(&to.partition) {
        Some(vnode) => vnode.send(req, reply, LocalHint::default()),
        None => {
            let e = KvError::Signal(Signal::NotHosted(to.partition.0));
            unanswerable(to.partition, &req, &reply, e);
        }
    })
}

pub fn skey(key: &str) -> StorageKey {
    StorageKey {
        bucket: b"bucket".to_vec(),
        key: key.as_bytes().to_vec(),
    }
}

fn policy() -> WritePolicy {
    WritePolicy {
        allow_mult: true,
        last_write_wins: false,
        max_siblings: 100,
        write_once: false,
        ttl_secs: 0,
    }
}

/// A client's write of `value` with an empty context.
pub fn coordinate(key: &str, value: &[u8], if_none_match: bool) -> VnodeRequest {
    coordinate_content(key, Content::new(value.to_vec()), if_none_match)
}

pub fn coordinate_content(key: &str, content: Content, if_none_match: bool) -> VnodeRequest {
    VnodeRequest::Put(PutRequest {
        key: skey(key),
        kind: PutKind::Coordinate(Box::new(Coordinate {
            context: VersionVector::new(),
            content,
            conditions: Conditions {
                if_none_match,
                if_not_modified: None,
            },
            update: None,
        })),
        policy: policy(),
        sync: SyncLevel::Written,
        props: None,
    })
}

pub fn replicate(key: &str, encoded: Bytes) -> VnodeRequest {
    VnodeRequest::Put(PutRequest {
        key: skey(key),
        kind: PutKind::Replicate { encoded },
        policy: policy(),
        sync: SyncLevel::Durable,
        props: None,
    })
}

pub fn get(key: &str) -> VnodeRequest {
    VnodeRequest::Get { key: skey(key) }
}

/// The values of an encoded object's siblings.
pub fn values(encoded: &[u8]) -> Vec<Vec<u8>> {
    let obj = codec::decode(encoded).expect("a stored object decodes");
    obj.contents().map(|c| c.value.clone()).collect()
}

/// The next reply, or `None` if the channel closed or `wait` passed.
pub async fn next(rx: &mut UnboundedReceiver<Reply>, wait: std::time::Duration) -> Option<Reply> {
    tokio::time::timeout(wait, rx.recv()).await.ok().flatten()
}
