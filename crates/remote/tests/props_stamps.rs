//! Bucket props never lag a write (design note 010 §2), over the
//! simulated network: two nodes with registries of their own, one of
//! which has a newer props entry (a change or a reset) the other has not
//! heard of. A put coordinated on the stale node is applied by every
//! replica under the newest props, and leaves the stale node's registry
//! with them; a put coordinated on the up-to-date node brings a stale
//! replica's registry up to date; an older entry never replaces a newer
//! one; a put whose coordinator cannot take the newer entry fails after a
//! few tries with the refusal. A multi-put's keys do the same. A put
//! coordinated on a node that has not heard of a drop (design note 018)
//! starts again from the client's write under the new generation, keeping
//! none of the dropped siblings.

use eddy_model::error::Signal;
use std::sync::Arc;

use eddy_kv::*;
use eddy_model::metadata::entries::PropsVersion;
use eddy_model::metadata::memory::MemoryStore;
use eddy_model::metadata::register::StampKey;
use eddy_model::metadata::{SharedBucket, SharedMetadata, SharedType};
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::types::{TypeEntry, TypeStatus};
use eddy_model::*;
use eddy_net::sim::SimNetwork;
use eddy_object::{Actor, Content, codec};
use eddy_remote::{Inline, NetRemote, RemoteConfig, inbound_for};
use eddy_ring::{ClaimParams, NodeName, Partition, Ring, claim};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use serde_json::json;

const RING_SIZE: u32 = 8;
const TYPE: &str = "t";
const BUCKET: &[u8] = b"b";

fn stamp(time_ms: u64) -> StampKey {
    StampKey {
        time_ms,
        counter: 0,
        writer: 1,
    }
}

/// The type both nodes know, and bucket `b`'s props as of `time_ms`.
fn shared(bucket_patch: serde_json::Value, time_ms: u64) -> SharedMetadata {
    SharedMetadata {
        types: vec![SharedType {
            name: TYPE.into(),
            entry: TypeEntry {
                status: TypeStatus::Active,
                ..TypeEntry::default()
            },
            stamp: Some(stamp(1)),
        }],
        buckets: vec![SharedBucket {
            bucket_type: TYPE.into(),
            bucket: hex(BUCKET),
            patch: serde_json::from_value(bucket_patch).unwrap(),
            stamp: Some(stamp(time_ms)),
        }],
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

struct Memory;

impl VnodeFactory for Memory {
    fn open(&self, p: Partition) -> Result<VnodeParts, String> {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        Ok((
            backend,
            Actor(1000 + rand::random::<u32>() as u64 + u64::from(p.0)),
        )
            .into())
    }
}

struct Pair {
    _net: SimNetwork,
    nodes: Vec<Arc<Node>>,
}

/// Two nodes on a claimed ring, every preflist of three on both, each
/// with its own registry holding bucket `b` with `allow_mult: false`.
fn pair() -> Pair {
    let net = SimNetwork::new(7);
    let names: Vec<NodeName> = ["dev1@sim", "dev2@sim"]
        .iter()
        .map(|n| NodeName(n.to_string()))
        .collect();
    let single = Ring::single(RING_SIZE, names[0].clone()).unwrap();
    let plan = claim(&single, &names, &ClaimParams::default()).unwrap();
    let ring = Ring::from_owners(plan.owners).unwrap();
    let nodes = names
        .iter()
        .map(|name| {
            let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
            registry
                .apply_shared(&shared(json!({"allow_mult": false}), 10))
                .unwrap();
            let config = NodeConfig {
                node_name: name.clone(),
                ring_size: RING_SIZE,
                ..NodeConfig::default()
            };
            let owned = ring.owned_by(name);
            let remote = remote(&net, name);
            let links = NodeLinks {
                remote: Some(remote.clone()),
                vnode_factory: Some(Arc::new(Memory)),
                ..NodeLinks::default()
            };
            let node = Node::start_linked(config, links, registry, ring.clone(), &owned, |p| {
                Memory.open(p).unwrap()
            })
            .unwrap();
            serve(&remote, &node);
            node
        })
        .collect();
    Pair { _net: net, nodes }
}

/// Node `name`'s remote vnodes over `net`, built before its node.
fn remote(net: &SimNetwork, name: &NodeName) -> Arc<NetRemote> {
    let config = RemoteConfig {
        request_id_start: 1,
        ..RemoteConfig::default()
    };
    NetRemote::new(net.add_node(name.clone()).unwrap(), config)
}

/// Serves other nodes' requests to `node` once it runs.
fn serve(remote: &Arc<NetRemote>, node: &Arc<Node>) {
    remote.serve(inbound_for(node), Arc::new(Inline)).unwrap();
    remote.install().unwrap();
    tokio::spawn(remote.watch_peers());
}

fn bucket() -> BucketRef {
    BucketRef::typed(TYPE, BUCKET.to_vec())
}

fn put(key: &str, value: &str) -> PutRequest {
    PutRequest {
        bucket: bucket(),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options: PutOptions {
            w: Some(Quorum::All),
            ..PutOptions::default()
        },
    }
}

/// The sibling values of every copy of `key` on both nodes, sorted.
fn copies(p: &Pair, key: &str) -> Vec<Vec<String>> {
    copies_at(p, key, 0)
}

/// [`copies`] under the bucket's generation `generation`'s storage name.
fn copies_at(p: &Pair, key: &str, generation: u64) -> Vec<Vec<String>> {
    let storage_bucket = bucket().storage_bucket_at(generation);
    let mut out = Vec::new();
    for node in &p.nodes {
        for part in 0..RING_SIZE {
            let Some(backend) = node.partition_backend(Partition(part)) else {
                continue;
            };
            let Some(bytes) = backend.get(&storage_bucket, key.as_bytes()).unwrap() else {
                continue;
            };
            let object = codec::decode(&bytes).unwrap();
            let mut values: Vec<String> = object
                .contents()
                .map(|c| String::from_utf8(c.value.clone()).unwrap())
                .collect();
            values.sort();
            out.push(values);
        }
    }
    out
}

fn version(node: &Node) -> PropsVersion {
    node.registry().props_version(TYPE, BUCKET)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_put_coordinated_on_a_stale_node_is_applied_under_the_newest_props() {
    let p = pair();
    let (stale, fresh) = (&p.nodes[0], &p.nodes[1]);
    fresh
        .registry()
        .apply_shared(&shared(json!({"allow_mult": true}), 20))
        .unwrap();
    assert!(!stale.bucket_props(&bucket()).unwrap().allow_mult);

    stale.put(put("k", "x")).await.unwrap();
    // The stale node took the newer entry from the replica that refused.
    assert_eq!(version(stale), version(fresh));
    assert_eq!(version(stale).bucket, Some(stamp(20)));
    assert!(stale.bucket_props(&bucket()).unwrap().allow_mult);

    // A second blind write is a sibling on every replica (allow_mult),
    // where the old props would have kept one value.
    stale.put(put("k", "y")).await.unwrap();
    let copies = copies(&p, "k");
    assert_eq!(copies.len(), 3, "{copies:?}");
    for values in &copies {
        assert_eq!(values, &["x", "y"], "{copies:?}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_put_brings_a_stale_replica_the_newer_props() {
    let p = pair();
    let (fresh, stale) = (&p.nodes[0], &p.nodes[1]);
    fresh
        .registry()
        .apply_shared(&shared(json!({"allow_mult": true, "n_val": 3}), 30))
        .unwrap();
    assert_eq!(version(stale).bucket, Some(stamp(10)));

    fresh.put(put("k", "x")).await.unwrap();
    assert_eq!(version(stale).bucket, Some(stamp(30)));
    assert!(stale.bucket_props(&bucket()).unwrap().allow_mult);
    fresh.put(put("k", "y")).await.unwrap();
    for values in copies(&p, "k") {
        assert_eq!(values, ["x", "y"]);
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_older_entry_a_put_carries_never_replaces_a_newer_one() {
    let p = pair();
    let (older, newer) = (&p.nodes[0], &p.nodes[1]);
    newer
        .registry()
        .apply_shared(&shared(json!({"allow_mult": true}), 40))
        .unwrap();
    // Applying the older version again (as gossip or a put might) keeps
    // the newer one.
    newer
        .registry()
        .apply_shared(&shared(json!({"allow_mult": false}), 10))
        .unwrap();
    assert!(newer.bucket_props(&bucket()).unwrap().allow_mult);
    older.put(put("k", "x")).await.unwrap();
    assert_eq!(version(newer).bucket, Some(stamp(40)));
    assert!(newer.bucket_props(&bucket()).unwrap().allow_mult);
}

/// `node`'s registry given a stamped entry for the `default` type: no
/// registry writes one and a coordinator never takes one from a replica
/// (the default type's props are each node's configuration), so a
/// replica holding it stays newer than any coordinator, as a replica
/// whose entries a coordinator cannot take would.
fn newer_than_any_coordinator(node: &Node) {
    let shared = SharedMetadata {
        types: vec![SharedType {
            name: "default".into(),
            entry: TypeEntry::default(),
            stamp: Some(stamp(50)),
        }],
        buckets: Vec::new(),
    };
    node.registry().apply_shared(&shared).unwrap();
}

/// A put of `key` to bucket `b` of the `default` type, with w = all.
fn default_put(key: &str) -> PutRequest {
    PutRequest {
        bucket: BucketRef::default_type(BUCKET.to_vec()),
        ..put(key, "x")
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_coordinator_that_cannot_take_the_newer_props_fails_after_a_few_tries() {
    let p = pair();
    let (behind, ahead) = (&p.nodes[0], &p.nodes[1]);
    newer_than_any_coordinator(ahead);
    let err = behind.put(default_put("k")).await.unwrap_err();
    assert!(
        matches!(err, KvError::Signal(Signal::PropsNewer(_))),
        "{err:?}"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_local_change_older_than_a_replicas_entry_gives_way_to_it() {
    let p = pair();
    let (writer, replica) = (&p.nodes[0], &p.nodes[1]);
    replica
        .registry()
        .apply_shared(&shared(json!({"allow_mult": true}), 50))
        .unwrap();
    // The writer's store stamps its change at once, newer than the
    // writer's entry but older than the replica's (its clock is behind):
    // the replica's wins, as it does in the cluster's registers.
    MemoryStore::attach_at(writer.registry(), NodeName("dev1@sim".into()), 20);
    let patch = serde_json::from_value(json!({"last_write_wins": false})).unwrap();
    writer
        .registry()
        .set_bucket_props(TYPE, BUCKET, &patch)
        .unwrap();
    let stamped = version(writer).bucket;
    assert!(
        stamped > Some(stamp(10)) && stamped < Some(stamp(50)),
        "{stamped:?}"
    );
    writer.put(put("k", "x")).await.unwrap();
    assert_eq!(version(writer).bucket, Some(stamp(50)));
    assert!(writer.bucket_props(&bucket()).unwrap().allow_mult);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_newer_reset_reaches_the_coordinator_and_the_type_props_apply() {
    let p = pair();
    let (stale, fresh) = (&p.nodes[0], &p.nodes[1]);
    let mut reset = shared(json!(null), 60);
    reset.buckets[0].patch = None;
    fresh.registry().apply_shared(&reset).unwrap();
    // A typed bucket's defaults have allow_mult on.
    assert!(fresh.bucket_props(&bucket()).unwrap().allow_mult);

    stale.put(put("k", "x")).await.unwrap();
    assert_eq!(version(stale).bucket, Some(stamp(60)));
    assert!(stale.bucket_props(&bucket()).unwrap().allow_mult);
    stale.put(put("k", "y")).await.unwrap();
    for values in copies(&p, "k") {
        assert_eq!(values, ["x", "y"]);
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_local_change_is_stamped_before_it_returns_and_reaches_a_replica_with_a_put() {
    let p = pair();
    let (writer, replica) = (&p.nodes[0], &p.nodes[1]);
    // Stamps from a clock ahead of the pair's entries.
    MemoryStore::attach_at(writer.registry(), NodeName("dev1@sim".into()), 100);
    let patch = serde_json::from_value(json!({"allow_mult": true})).unwrap();
    writer
        .registry()
        .set_bucket_props(TYPE, BUCKET, &patch)
        .unwrap();
    let stamped = version(writer).bucket;
    assert!(stamped > Some(stamp(10)), "{stamped:?}");

    writer.put(put("k", "x")).await.unwrap();
    assert_eq!(version(replica).bucket, stamped);
    assert!(replica.bucket_props(&bucket()).unwrap().allow_mult);
    writer.put(put("k", "y")).await.unwrap();
    for values in copies(&p, "k") {
        assert_eq!(values, ["x", "y"]);
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_put_coordinated_before_the_drop_reached_it_keeps_no_dropped_sibling() {
    let p = pair();
    let (stale, fresh) = (&p.nodes[0], &p.nodes[1]);
    for node in &p.nodes {
        node.registry()
            .apply_shared(&shared(json!({"allow_mult": true}), 20))
            .unwrap();
    }
    stale.put(put("k", "old")).await.unwrap();
    // The bucket is dropped where `fresh` heard of it, not yet on `stale`.
    fresh
        .registry()
        .apply_shared(&shared(json!({"allow_mult": true, "generation": 1}), 30))
        .unwrap();
    assert_eq!(stale.bucket_props(&bucket()).unwrap().generation, 0);

    // A blind write on the stale node merges with the dropped "old" at its
    // own vnode first; the refusal of a fresh replica restarts it.
    stale.put(put("k", "new")).await.unwrap();
    assert_eq!(stale.bucket_props(&bucket()).unwrap().generation, 1);
    let copies = copies_at(&p, "k", 1);
    assert_eq!(copies.len(), 3, "{copies:?}");
    for values in &copies {
        assert_eq!(values, &["new"], "{copies:?}");
    }
    let got = fresh
        .get(GetRequest {
            bucket: bucket(),
            key: b"k".to_vec(),
            options: GetOptions::default(),
        })
        .await
        .unwrap();
    let GetResponse::Found(object) = got else {
        panic!("{got:?}")
    };
    assert_eq!(object.siblings.len(), 1);
}

/// A multi-put of `keys`, each written `value`, with w = all.
fn multi_put(keys: &[&str], value: &str) -> MultiPutRequest {
    MultiPutRequest {
        bucket: bucket(),
        objects: keys
            .iter()
            .map(|k| MultiPutObject {
                key: k.as_bytes().to_vec(),
                context: None,
                content: Content::new(value.as_bytes().to_vec()),
            })
            .collect(),
        options: PutOptions {
            w: Some(Quorum::All),
            ..PutOptions::default()
        },
    }
}

/// A multi-put on the stale node: the replica refuses its keys' batched
/// replication with its newer props, and each key runs again under them
/// as a single put does; a coordinator that cannot take them fails each
/// key with the refusal.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_multi_put_on_a_stale_node_runs_its_keys_again_under_the_newest_props() {
    let p = pair();
    let (stale, fresh) = (&p.nodes[0], &p.nodes[1]);
    fresh
        .registry()
        .apply_shared(&shared(json!({"allow_mult": true}), 20))
        .unwrap();
    let keys = ["k1", "k2", "k3", "k4"];
    let written = stale.multi_put(multi_put(&keys, "x")).await.unwrap();
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    assert_eq!(version(stale), version(fresh));
    assert!(stale.bucket_props(&bucket()).unwrap().allow_mult);
    let written = stale.multi_put(multi_put(&keys, "y")).await.unwrap();
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    for key in keys {
        let copies = copies(&p, key);
        assert_eq!(copies.len(), 3, "{key}: {copies:?}");
        for values in &copies {
            assert_eq!(values, &["x", "y"], "{key}: {copies:?}");
        }
    }

    let p = pair();
    let (behind, ahead) = (&p.nodes[0], &p.nodes[1]);
    newer_than_any_coordinator(ahead);
    let mut request = multi_put(&keys, "x");
    request.bucket = BucketRef::default_type(BUCKET.to_vec());
    let written = behind.multi_put(request).await.unwrap();
    for result in written {
        assert!(
            matches!(result, Err(KvError::Signal(Signal::PropsNewer(_)))),
            "{result:?}"
        );
    }
}
