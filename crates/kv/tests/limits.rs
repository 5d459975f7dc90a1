//! Per-object metadata limits: usermeta, links and index entries are
//! checked at write time, in counts and in bytes, with the node's settings.

use std::sync::Arc;

use eddy_kv::*;
use eddy_model::limits::{Limit, MetaLimits};
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content, Link};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};

fn node_with(meta_limits: MetaLimits) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: 8,
        meta_limits,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

fn put_req(content: Content) -> PutRequest {
    PutRequest {
        bucket: BucketRef::default_type("b"),
        key: Some(b"k".to_vec()),
        context: None,
        content,
        options: PutOptions::default(),
    }
}

fn pairs(n: usize, value_len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| (format!("f{i:05}_bin").into_bytes(), vec![b'v'; value_len]))
        .collect()
}

#[tokio::test]
async fn default_limits_refuse_more_than_1000_usermeta_entries() {
    let node = node_with(MetaLimits::default());
    let mut content = Content::new("v");
    content.meta.user_meta = pairs(1000, 1);
    node.put(put_req(content.clone())).await.unwrap();
    content.meta.user_meta = pairs(24_570, 1);
    let err = node.put(put_req(content)).await.unwrap_err();
    assert!(
        matches!(
            err,
            KvError::TooMany {
                what: "usermeta",
                count: 24_570,
                max: 1000
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn default_limits_refuse_more_than_64_kib_of_links() {
    let node = node_with(MetaLimits::default());
    let mut content = Content::new("v");
    let link = Link {
        bucket: b"b".to_vec(),
        key: vec![b'k'; 100],
        tag: b"t".to_vec(),
    };
    content.meta.links = vec![link; 700];
    let err = node.put(put_req(content)).await.unwrap_err();
    assert!(
        matches!(
            err,
            KvError::TooLarge {
                what: "links",
                size: 71_400,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn configured_index_limits_apply_and_nothing_is_stored() {
    let limit = Limit {
        entries: 3,
        bytes: 100,
    };
    let node = node_with(MetaLimits {
        index: limit,
        ..MetaLimits::default()
    });
    let mut content = Content::new("v");
    content.meta.indexes = pairs(4, 1);
    let err = node.put(put_req(content.clone())).await.unwrap_err();
    assert!(
        matches!(
            err,
            KvError::TooMany {
                what: "index entries",
                ..
            }
        ),
        "{err:?}"
    );
    content.meta.indexes = pairs(1, 200);
    let err = node.put(put_req(content)).await.unwrap_err();
    assert!(
        matches!(
            err,
            KvError::TooLarge {
                what: "index entries",
                ..
            }
        ),
        "{err:?}"
    );
    let got = node
        .get(GetRequest {
            bucket: BucketRef::default_type("b"),
            key: b"k".to_vec(),
            options: GetOptions::default(),
        })
        .await
        .unwrap();
    assert!(
        matches!(got, GetResponse::NotFound { .. }),
        "a refused write stores nothing"
    );
}

#[tokio::test]
async fn an_index_term_longer_than_backends_store_is_a_client_error() {
    let node = node_with(MetaLimits::default());
    let mut content = Content::new("v");
    content.meta.indexes = pairs(1, 9000);
    let err = node.put(put_req(content)).await.unwrap_err();
    assert!(
        matches!(
            err,
            KvError::TooLarge {
                what: "index term",
                ..
            }
        ),
        "{err:?}"
    );
}
