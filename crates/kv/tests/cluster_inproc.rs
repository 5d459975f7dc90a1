//! Three nodes in one process, their coordinators and vnodes connected
//! directly (no transport): the cluster's quorum rules, fallbacks and
//! node_confirms, with a failure detector the test controls; multi-key
//! requests, whose batched vnode messages the connection counts.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};

use eddy_kv::router::{RemoteVnodes, unanswerable};
use eddy_kv::*;
use eddy_model::error::PutFailure;
use eddy_model::limits::MultiLimits;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_ring::{ClaimParams, NodeName, Partition, Ring, claim};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_vnode::msg::{BatchItem, VnodeId, VnodeRequest};
use eddy_vnode::reply::ReplyTo;
use parking_lot::Mutex;

const RING_SIZE: u32 = 16;

/// Delivers requests between the test's nodes, and says which are up.
#[derive(Debug, Default)]
struct Wires {
    nodes: Mutex<BTreeMap<NodeName, Weak<Node>>>,
    down: Mutex<BTreeSet<NodeName>>,
    /// Each batched message sent: its node and its items.
    batches: Mutex<Vec<(NodeName, usize)>>,
}

impl Wires {
    /// The node `node` if it is up.
    fn up(&self, node: &NodeName) -> Option<Arc<Node>> {
        match self.down.lock().contains(node) {
            true => None,
            false => self.nodes.lock().get(node).and_then(Weak::upgrade),
        }
    }

    /// The batched messages sent since the last call.
    fn take_batches(&self) -> Vec<(NodeName, usize)> {
        std::mem::take(&mut *self.batches.lock())
    }
}

impl RemoteVnodes for Wires {
    fn send_batch(&self, node: &NodeName, items: Vec<(BatchItem, ReplyTo)>) {
        self.batches.lock().push((node.clone(), items.len()));
        match self.up(node) {
            Some(target) => target.receive_batch(items),
            None => {
                for (item, reply) in items {
                    let e = KvError::Unreachable(node.to_string());
                    unanswerable(item.partition, &item.request, &reply, e);
                }
            }
        }
    }

    fn send(&self, to: &VnodeId, req: VnodeRequest, reply: ReplyTo) {
        match self.up(&to.node) {
            Some(node) => node.receive(to.partition, req, reply),
            None => unanswerable(
                to.partition,
                &req,
                &reply,
                KvError::Unreachable(to.node.to_string()),
            ),
        }
    }
}

impl Liveness for Wires {
    fn is_up(&self, node: &NodeName) -> bool {
        !self.down.lock().contains(node)
    }
}

/// Opens empty memory backends for vnodes started later (fallbacks).
struct Memory;

impl VnodeFactory for Memory {
    fn open(&self, p: Partition) -> Result<VnodeParts, String> {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        Ok((backend, Actor(rand::random::<u64>() ^ u64::from(p.0))).into())
    }
}

struct Cluster {
    wires: Arc<Wires>,
    nodes: Vec<Arc<Node>>,
    ring: Ring,
}

fn name(i: usize) -> NodeName {
    NodeName(format!("dev{}@127.0.0.1", i + 1))
}

fn cluster(size: usize) -> Cluster {
    cluster_with(size, MultiLimits::default(), |_| false)
}

/// A cluster of `size` nodes; node `i` runs map phases at its vnodes
/// (with [`MapKeys`]) when `maps(i)`.
fn cluster_with(size: usize, multi: MultiLimits, maps: fn(usize) -> bool) -> Cluster {
    let members: Vec<NodeName> = (0..size).map(name).collect();
    let single = Ring::single(RING_SIZE, members[0].clone()).unwrap();
    let plan = claim(&single, &members, &ClaimParams::default()).unwrap();
    let ring = Ring::from_owners(plan.owners).unwrap();
    let wires = Arc::new(Wires::default());
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let nodes: Vec<Arc<Node>> = members
        .iter()
        .enumerate()
        .map(|(i, me)| {
            let map_runner: Option<Arc<dyn eddy_vnode::mapphase::MapRunner>> =
                maps(i).then(|| Arc::new(MapKeys) as _);
            let config = NodeConfig {
                node_name: me.clone(),
                ring_size: RING_SIZE,
                multi,
                map_runner,
                ..NodeConfig::default()
            };
            let owned = ring.owned_by(me);
            let registry = registry.clone();
            let node =
                Node::start_linked(config, links(&wires), registry, ring.clone(), &owned, |p| {
                    Memory.open(p).unwrap()
                })
                .unwrap();
            wires.nodes.lock().insert(me.clone(), Arc::downgrade(&node));
            node
        })
        .collect();
    Cluster { wires, nodes, ring }
}

/// A node's links over `wires`: every other node's vnodes and liveness
/// through them, vnodes started later in memory.
fn links(wires: &Arc<Wires>) -> NodeLinks {
    NodeLinks {
        remote: Some(wires.clone()),
        liveness: Some(wires.clone()),
        vnode_factory: Some(Arc::new(Memory)),
        transfers: None,
    }
}

fn bucket() -> BucketRef {
    BucketRef::default_type(b"b".to_vec())
}

fn put(key: &str, value: &str, options: PutOptions) -> PutRequest {
    PutRequest {
        bucket: bucket(),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options,
    }
}

fn get(key: &str, options: GetOptions) -> GetRequest {
    GetRequest {
        bucket: bucket(),
        key: key.as_bytes().to_vec(),
        options,
    }
}

fn values(resp: &GetResponse) -> Vec<Vec<u8>> {
    match resp {
        GetResponse::Found(o) => o.contents().map(|c| c.value.clone()).collect(),
        GetResponse::NotFound { .. } => vec![],
    }
}

/// What node `i` stores for `key` in partition `p`, if it runs that vnode.
fn stored(c: &Cluster, i: usize, p: Partition, key: &str) -> Option<Vec<u8>> {
    let backend = c.nodes[i].partition_backend(p)?;
    backend
        .get(&bucket().storage_bucket(), key.as_bytes())
        .unwrap()
}

fn index_of(c: &Cluster, node: &NodeName) -> usize {
    c.nodes
        .iter()
        .position(|n| &n.config().node_name == node)
        .unwrap()
}

#[tokio::test]
async fn a_write_lands_on_each_primary_of_its_preflist_on_distinct_nodes() {
    let c = cluster(4);
    for k in 0..50 {
        let key = format!("k{k}");
        let w = Some(Quorum::All);
        let req = put(
            &key,
            "v",
            PutOptions {
                w,
                ..PutOptions::default()
            },
        );
        c.nodes[k % 4].put(req).await.unwrap();
        let hash = Node::key_hash(&bucket(), key.as_bytes());
        let preflist = c.ring.preflist(hash, 3);
        let owners: BTreeSet<_> = preflist.iter().map(|(_, n)| (*n).clone()).collect();
        assert_eq!(owners.len(), 3, "a claimed ring of 4 spaces preflists");
        for (p, owner) in preflist {
            let i = index_of(&c, owner);
            assert!(stored(&c, i, p, &key).is_some(), "{key} missing at {p}");
            for other in (0..4).filter(|j| *j != i) {
                assert!(stored(&c, other, p, &key).is_none());
            }
        }
        for n in &c.nodes {
            let got = n.get(get(&key, GetOptions::default())).await.unwrap();
            assert_eq!(values(&got), vec![b"v".to_vec()]);
        }
    }
}

#[tokio::test]
async fn with_a_node_down_fallbacks_take_its_writes_and_pw_counts_primaries_only() {
    let c = cluster(4);
    let down = name(3);
    c.wires.down.lock().insert(down.clone());
    let key = (0..)
        .map(|k| format!("k{k}"))
        .find(|k| {
            let hash = Node::key_hash(&bucket(), k.as_bytes());
            c.ring.preflist(hash, 3).iter().any(|(_, n)| **n == down)
        })
        .unwrap();
    let hash = Node::key_hash(&bucket(), key.as_bytes());
    let (lost, _) = *c
        .ring
        .preflist(hash, 3)
        .iter()
        .find(|(_, n)| **n == down)
        .unwrap();
    let w3 = PutOptions {
        w: Some(Quorum::All),
        ..PutOptions::default()
    };
    c.nodes[0].put(put(&key, "v1", w3)).await.unwrap();
    // The fallback for the down primary's partition holds the write.
    let holders: Vec<usize> = (0..3)
        .filter(|i| stored(&c, *i, lost, &key).is_some())
        .collect();
    assert_eq!(holders.len(), 1, "one fallback vnode for partition {lost}");
    let pw3 = PutOptions {
        pw: Some(Quorum::All),
        ..PutOptions::default()
    };
    let err = c.nodes[0].put(put(&key, "v2", pw3)).await.unwrap_err();
    assert!(
        matches!(err, KvError::WriteQuorum(_)),
        "pw=3 with a primary down: {err}"
    );
    let pr3 = GetOptions {
        pr: Some(Quorum::All),
        ..GetOptions::default()
    };
    let err = c.nodes[1].get(get(&key, pr3)).await.unwrap_err();
    assert!(
        matches!(err, KvError::ReadQuorum { which: "pr", .. }),
        "{err}"
    );
    let got = c.nodes[1]
        .get(get(&key, GetOptions::default()))
        .await
        .unwrap();
    assert!(!values(&got).is_empty());
}

#[tokio::test]
async fn node_confirms_counts_distinct_nodes() {
    let c = cluster(3);
    let registry = c.nodes[0].registry().clone();
    let patch = serde_json::json!({"node_confirms": 3});
    registry
        .set_bucket_props(
            "default",
            b"b",
            &eddy_model::props::PropsPatch::from_json(patch.as_object().unwrap()).unwrap(),
        )
        .unwrap();
    c.nodes[0]
        .put(put("k", "v", PutOptions::default()))
        .await
        .expect("three nodes answer for a 3-node cluster");
    c.wires.down.lock().insert(name(2));
    let err = c.nodes[0]
        .put(put("k2", "v", PutOptions::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::WriteQuorum(_)), "{err}");
}

/// Riak's sloppy quorum on three nodes with one down: the fallback for the
/// down node's partition goes to an up node that already holds another
/// replica, so w = 3 is met by three vnodes on two nodes, while
/// node_confirms = 3 (distinct machines) is not.
#[tokio::test]
async fn two_of_three_nodes_meet_w_all_but_not_three_node_confirms() {
    let c = cluster(3);
    let down = name(2);
    c.wires.down.lock().insert(down.clone());
    let key = "k";
    let hash = Node::key_hash(&bucket(), key.as_bytes());
    let (lost, _) = *c
        .ring
        .preflist(hash, 3)
        .iter()
        .find(|(_, n)| **n == down)
        .expect("on three nodes every preflist has every node");
    let w_all = || PutOptions {
        w: Some(Quorum::All),
        ..PutOptions::default()
    };
    c.nodes[0].put(put(key, "v", w_all())).await.unwrap();
    // Each of the two up nodes holds one partition it owns, and one of them
    // also the fallback vnode for the down node's partition.
    let copies = |i: usize| {
        (0..RING_SIZE)
            .filter(|p| stored(&c, i, Partition(*p), key).is_some())
            .count()
    };
    assert_eq!(copies(0) + copies(1), 3);
    let fallback = (0..2)
        .find(|i| stored(&c, *i, lost, key).is_some())
        .expect("a fallback holds the down node's partition");
    assert_eq!(copies(fallback), 2, "a primary and a fallback on one node");
    let registry = c.nodes[0].registry().clone();
    let patch = serde_json::json!({"node_confirms": 3});
    registry
        .set_bucket_props(
            "default",
            b"b",
            &eddy_model::props::PropsPatch::from_json(patch.as_object().unwrap()).unwrap(),
        )
        .unwrap();
    let err = c.nodes[0].put(put(key, "v2", w_all())).await.unwrap_err();
    assert!(
        matches!(
            err,
            KvError::WriteQuorum(PutFailure::NodeConfirms { needed: 3, got: 2 })
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_coordinator_away_from_every_replica_still_coordinates() {
    let c = cluster(4);
    // Find a key none of whose replicas is on node 0.
    let key = (0..)
        .map(|k| format!("k{k}"))
        .find(|k| {
            let hash = Node::key_hash(&bucket(), k.as_bytes());
            c.ring.preflist(hash, 3).iter().all(|(_, n)| **n != name(0))
        })
        .unwrap();
    let w3 = PutOptions {
        w: Some(Quorum::All),
        return_body: true,
        ..PutOptions::default()
    };
    let resp = c.nodes[0].put(put(&key, "v", w3)).await.unwrap();
    assert!(resp.object.is_some());
    let got = c.nodes[0]
        .get(get(&key, GetOptions::default()))
        .await
        .unwrap();
    assert_eq!(values(&got), vec![b"v".to_vec()]);
}

#[tokio::test]
async fn a_node_outside_the_ring_with_every_owner_down_refuses_requests() {
    let c = cluster(3);
    let config = NodeConfig {
        node_name: name(3),
        ring_size: RING_SIZE,
        ..NodeConfig::default()
    };
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let links = links(&c.wires);
    let outside = Node::start_linked(config, links, registry, c.ring.clone(), &[], |p| {
        Memory.open(p).unwrap()
    })
    .unwrap();
    c.wires.down.lock().extend((0..3).map(name));
    let err = outside
        .put(put("k", "v", PutOptions::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::WriteQuorum(_)), "{err}");
    let err = outside
        .get(get("k", GetOptions::default()))
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::ReadQuorum { got: 0, .. }), "{err}");
}

/// The keys of `bucket()` as node `i` lists them.
async fn listed(c: &Cluster, i: usize) -> Result<Vec<Vec<u8>>, KvError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let node = c.nodes[i].clone();
    let fold = tokio::task::spawn_blocking(move || node.list_keys_blocking(&bucket(), &tx));
    let mut keys = Vec::new();
    while let Some(chunk) = rx.recv().await {
        keys.extend(chunk);
    }
    fold.await.unwrap()?;
    keys.sort();
    Ok(keys)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_covers_every_key_once_across_nodes() {
    let c = cluster(4);
    let mut written: Vec<Vec<u8>> = (0..300).map(|k| format!("k{k}").into_bytes()).collect();
    for (i, key) in written.iter().enumerate() {
        let key = String::from_utf8(key.clone()).unwrap();
        c.nodes[i % 4]
            .put(put(&key, "v", PutOptions::default()))
            .await
            .unwrap();
    }
    written.sort();
    for i in 0..4 {
        assert_eq!(
            listed(&c, i).await.unwrap(),
            written,
            "listed from node {i}"
        );
    }
    // One node down: n_val 3 still covers every range from the others.
    c.wires.down.lock().insert(name(2));
    assert_eq!(listed(&c, 0).await.unwrap(), written);
    let buckets = {
        let node = c.nodes[1].clone();
        tokio::task::spawn_blocking(move || node.list_buckets_blocking("default"))
            .await
            .unwrap()
            .unwrap()
    };
    assert_eq!(buckets, vec![b"b".to_vec()]);
    // Three of four down: some ranges have no replica up.
    c.wires.down.lock().extend([name(1), name(3)]);
    let err = listed(&c, 0).await.unwrap_err();
    assert!(matches!(err, KvError::InsufficientVnodes(_)), "{err}");
}

/// Every page of a 2i range query on `n_int`, from node `i`.
async fn index_range_pages(
    c: &Cluster,
    i: usize,
    lo: i64,
    hi: i64,
) -> Result<Vec<(String, String)>, KvError> {
    let mut req = eddy_model::index::IndexRequest {
        field: b"n_int".to_vec(),
        start: lo.to_string().into_bytes(),
        end: Some(hi.to_string().into_bytes()),
        return_terms: true,
        max_results: Some(13),
        ..Default::default()
    };
    let mut out = Vec::new();
    loop {
        let node = c.nodes[i].clone();
        let r = req.clone();
        let page = tokio::task::spawn_blocking(move || node.index_query_blocking(&bucket(), &r))
            .await
            .unwrap()?;
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        out.extend(page.results.into_iter().map(|(t, k)| (text(t), text(k))));
        match page.continuation {
            Some(c) => req.continuation = Some(c),
            None => return Ok(out),
        }
    }
}

/// The keys of `bucket()` that `json`'s key filter matches, as node `i`
/// lists them.
async fn filtered(
    c: &Cluster,
    i: usize,
    json: &serde_json::Value,
) -> Result<Vec<Vec<u8>>, KvError> {
    let filter = eddy_model::keyfilter::KeyFilter::parse(json).unwrap();
    let node = c.nodes[i].clone();
    let timeout = std::time::Duration::from_secs(30);
    tokio::task::spawn_blocking(move || {
        node.list_keys_filtered_blocking(&bucket(), &filter, timeout)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_listings_cover_every_matching_key_once_across_nodes() {
    let c = cluster(4);
    let mut want = Vec::new();
    for k in 0..300u32 {
        let key = format!("k-{k}");
        c.nodes[k as usize % 4]
            .put(put(&key, "v", PutOptions::default()))
            .await
            .unwrap();
        // Between 100 and 200, both excluded.
        if (101..200).contains(&k) {
            want.push(key.into_bytes());
        }
    }
    want.sort();
    let json = serde_json::json!([
        ["tokenize", "-", 2],
        ["string_to_int"],
        ["between", 100, 200, false]
    ]);
    for i in 0..4 {
        assert_eq!(
            filtered(&c, i, &json).await.unwrap(),
            want,
            "listed from node {i}"
        );
    }
    // One node down: the other replicas answer for its ranges.
    c.wires.down.lock().insert(name(2));
    assert_eq!(filtered(&c, 0, &json).await.unwrap(), want);
    c.wires.down.lock().extend([name(1), name(3)]);
    let err = filtered(&c, 0, &json).await.unwrap_err();
    assert!(matches!(err, KvError::InsufficientVnodes(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_queries_cover_every_entry_once_across_nodes() {
    let c = cluster(4);
    let mut want = Vec::new();
    for k in 0..300i64 {
        let key = format!("k{k:03}");
        let mut content = Content::new(b"v".to_vec());
        let n = k % 37 - 10;
        content.meta.indexes = vec![(b"n_int".to_vec(), n.to_string().into_bytes())];
        let req = PutRequest {
            content,
            ..put(&key, "v", PutOptions::default())
        };
        c.nodes[k as usize % 4].put(req).await.unwrap();
        if (-3..=9).contains(&n) {
            want.push((n, key));
        }
    }
    want.sort();
    let want: Vec<(String, String)> = want.into_iter().map(|(n, k)| (n.to_string(), k)).collect();
    for i in 0..4 {
        let got = index_range_pages(&c, i, -3, 9).await.unwrap();
        assert_eq!(got, want, "queried from node {i}");
    }
    // One node down: the other replicas answer for its ranges.
    c.wires.down.lock().insert(name(2));
    assert_eq!(index_range_pages(&c, 0, -3, 9).await.unwrap(), want);
    c.wires.down.lock().extend([name(1), name(3)]);
    let err = index_range_pages(&c, 0, -3, 9).await.unwrap_err();
    assert!(matches!(err, KvError::InsufficientVnodes(_)), "{err}");
}

/// Multi-key requests on three nodes with one down (design note 016): each
/// key is coordinated as its single operation, so fallbacks take the down
/// node's writes, and a pr/pw the up primaries cannot meet fails each key
/// while the request itself succeeds.
#[tokio::test]
async fn multi_key_requests_with_a_node_down_fail_per_key_not_per_request() {
    let c = cluster(3);
    c.wires.down.lock().insert(name(2));
    let keys: Vec<Vec<u8>> = (0..40).map(|k| format!("m{k}").into_bytes()).collect();
    let objects = keys
        .iter()
        .map(|k| MultiPutObject {
            key: k.clone(),
            context: None,
            content: Content::new(k.clone()),
        })
        .collect();
    let put = MultiPutRequest {
        bucket: bucket(),
        objects,
        options: PutOptions::default(),
    };
    let written = c.nodes[0].multi_put(put).await.unwrap();
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    let get = |options| MultiGetRequest {
        bucket: bucket(),
        keys: keys.clone(),
        options,
    };
    let got = c.nodes[1].multi_get(get(GetOptions::default())).await;
    for (key, result) in keys.iter().zip(got.unwrap()) {
        assert_eq!(values(&result.unwrap()), vec![key.clone()]);
    }
    // A key with a primary on the down node cannot meet pr = all; the
    // others (a ring of 16 on three nodes has a few preflists that skip
    // it) can.
    let pr_all = GetOptions {
        pr: Some(Quorum::All),
        ..GetOptions::default()
    };
    let on_down = |key: &[u8]| {
        let hash = Node::key_hash(&bucket(), key);
        c.ring.preflist(hash, 3).iter().any(|(_, n)| **n == name(2))
    };
    let got = c.nodes[1].multi_get(get(pr_all)).await.unwrap();
    assert_eq!(got.len(), keys.len());
    let mut refused = 0;
    for (key, result) in keys.iter().zip(got) {
        match on_down(key) {
            true => {
                refused += 1;
                assert!(
                    matches!(result, Err(KvError::ReadQuorum { which: "pr", .. })),
                    "{result:?}"
                );
            }
            false => assert_eq!(values(&result.unwrap()), vec![key.clone()]),
        }
    }
    assert!(
        refused > keys.len() / 2,
        "most preflists span all three nodes"
    );
    let deletes = MultiDeleteRequest {
        bucket: bucket(),
        keys: keys
            .iter()
            .map(|k| MultiDeleteKey {
                key: k.clone(),
                context: None,
            })
            .collect(),
        options: DeleteOptions {
            pw: Some(Quorum::All),
            ..DeleteOptions::default()
        },
    };
    let deleted = c.nodes[0].multi_delete(deletes.clone()).await.unwrap();
    for (key, result) in keys.iter().zip(&deleted) {
        match on_down(key) {
            true => assert!(
                matches!(result, Err(KvError::WriteQuorum(PutFailure::Pw { .. }))),
                "{result:?}"
            ),
            false => assert!(matches!(result, Ok(DeleteOutcome::Deleted))),
        }
    }
    // Those tombstones were written where the write could go (pw counts,
    // it does not undo): with every node back, a delete finds each key
    // deleted already or deletes it.
    c.wires.down.lock().clear();
    let deletes = MultiDeleteRequest {
        options: DeleteOptions::default(),
        ..deletes
    };
    let deleted = c.nodes[2].multi_delete(deletes).await.unwrap();
    assert!(deleted.iter().all(Result::is_ok), "{deleted:?}");
    let got = c.nodes[0].multi_get(get(GetOptions::default())).await;
    for result in got.unwrap() {
        assert!(matches!(result, Ok(GetResponse::NotFound { .. })));
    }
}

/// A map runner answering `[key]` for each object it is given.
#[derive(Debug)]
struct MapKeys;

impl eddy_vnode::mapphase::MapRunner for MapKeys {
    fn run(
        &self,
        _phase: &[u8],
        inputs: Vec<eddy_vnode::mapphase::MapInput>,
    ) -> Result<Vec<u8>, String> {
        assert!(inputs.iter().all(|i| !i.object.is_deleted()));
        let keys: Vec<String> = inputs
            .iter()
            .map(|i| String::from_utf8(i.key.clone()).unwrap())
            .collect();
        Ok(serde_json::to_vec(&keys).unwrap())
    }
}

/// The keys of `bucket()` (that `json`'s key filter matches, if any) a
/// map at the vnodes answers when node `i` coordinates it, sorted with
/// duplicates kept.
async fn mapped(
    c: &Cluster,
    i: usize,
    json: Option<serde_json::Value>,
) -> Result<Vec<Vec<u8>>, KvError> {
    let filter = json.map(|j| eddy_model::keyfilter::KeyFilter::parse(&j).unwrap());
    let node = c.nodes[i].clone();
    let timeout = std::time::Duration::from_secs(30);
    let lists = tokio::task::spawn_blocking(move || {
        node.map_coverage_blocking(&bucket(), filter.as_ref(), b"{}", timeout)
    })
    .await
    .unwrap()?;
    let mut keys: Vec<Vec<u8>> = lists
        .iter()
        .flat_map(|l| serde_json::from_slice::<Vec<String>>(l).unwrap())
        .map(String::into_bytes)
        .collect();
    keys.sort();
    Ok(keys)
}

/// Writes 300 keys through the four nodes in turn and deletes every
/// seventh; answers the live ones, sorted.
async fn fill_for_maps(c: &Cluster) -> Vec<Vec<u8>> {
    let mut live = Vec::new();
    for k in 0..300u32 {
        let key = format!("k-{k}");
        let node = &c.nodes[k as usize % 4];
        node.put(put(&key, "v", PutOptions::default()))
            .await
            .unwrap();
        match k % 7 == 0 {
            true => {
                let del = DeleteRequest {
                    bucket: bucket(),
                    key: key.into_bytes(),
                    context: None,
                    options: DeleteOptions::default(),
                };
                node.delete(del).await.unwrap();
            }
            false => live.push(key.into_bytes()),
        }
    }
    live.sort();
    live
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maps_at_the_vnodes_see_every_live_key_once_across_nodes() {
    // Only node 0 runs map phases: its four vnodes cannot cover the ring,
    // and another node's vnode without a runner fails the map.
    let c = cluster_with(4, MultiLimits::default(), |i| i == 0);
    fill_for_maps(&c).await;
    let err = mapped(&c, 0, None).await.unwrap_err();
    assert!(err.to_string().contains("no map phase runner"), "{err}");
    let c = cluster_with(4, MultiLimits::default(), |_| true);
    let live = fill_for_maps(&c).await;
    for i in 0..4 {
        assert_eq!(mapped(&c, i, None).await.unwrap(), live, "from node {i}");
    }
    let json = serde_json::json!([["tokenize", "-", 2], ["ends_with", "5"]]);
    let want: Vec<Vec<u8>> = live.iter().filter(|k| k.ends_with(b"5")).cloned().collect();
    assert_eq!(mapped(&c, 1, Some(json.clone())).await.unwrap(), want);
    // One node down: the other replicas answer for its ranges.
    c.wires.down.lock().insert(name(2));
    assert_eq!(mapped(&c, 0, None).await.unwrap(), live);
    assert_eq!(mapped(&c, 3, Some(json)).await.unwrap(), want);
    c.wires.down.lock().extend([name(1), name(3)]);
    let err = mapped(&c, 0, None).await.unwrap_err();
    assert!(matches!(err, KvError::InsufficientVnodes(_)), "{err}");
}

/// A bucket of a type that keeps siblings.
fn siblings_bucket(c: &Cluster) -> BucketRef {
    let registry = c.nodes[0].registry();
    if registry.bucket_props("sibs", b"b").is_err() {
        let patch = serde_json::json!({"allow_mult": true});
        registry
            .create_type(
                "sibs",
                &eddy_model::props::PropsPatch::from_json(patch.as_object().unwrap()).unwrap(),
            )
            .unwrap();
        registry.activate_type("sibs").unwrap();
    }
    BucketRef::typed("sibs", b"b".to_vec())
}

/// Writes `k0`..`k29` to `bucket` from all three nodes, every fifth key
/// twice without a context (two siblings), and returns the keys to read:
/// those, two that were never written, an empty one and one too long.
async fn thirty_keys(c: &Cluster, bucket: &BucketRef) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for k in 0..30 {
        let key = format!("k{k}").into_bytes();
        let writes = if k % 5 == 0 { 2 } else { 1 };
        for w in 0..writes {
            let req = PutRequest {
                bucket: bucket.clone(),
                key: Some(key.clone()),
                context: None,
                content: Content::new(format!("v{k}.{w}").into_bytes()),
                options: PutOptions {
                    w: Some(Quorum::All),
                    ..PutOptions::default()
                },
            };
            c.nodes[(k + w) % 3].put(req).await.unwrap();
        }
        keys.push(key);
    }
    keys.push(b"missing-1".to_vec());
    keys.push(b"missing-2".to_vec());
    keys.push(Vec::new());
    keys.push(vec![b'x'; eddy_storage::limits::KEY_BYTES_MAX + 1]);
    keys
}

/// Whether a multi-get's result for a key says what the single get said:
/// the same siblings and context, the same not found, the same error (for
/// an unmet `r` or `pr`, the same quorum: how many replicas had answered
/// when it could no longer be met depends on the order replies came in,
/// and on whether a fallback vnode had started yet).
fn same_answer(multi: &Result<GetResponse, KvError>, single: &Result<GetResponse, KvError>) {
    let sorted = |o: &eddy_object::RiakObject| {
        let mut v: Vec<Vec<u8>> = o.contents().map(|c| c.value.clone()).collect();
        v.sort();
        v
    };
    match (multi, single) {
        (Ok(GetResponse::Found(m)), Ok(GetResponse::Found(s))) => {
            assert_eq!(sorted(m), sorted(s));
            assert_eq!(m.vv, s.vv, "the same context");
        }
        (Ok(GetResponse::NotFound { .. }), Ok(GetResponse::NotFound { .. })) => {}
        (
            Err(KvError::ReadQuorum { which, needed, .. }),
            Err(KvError::ReadQuorum {
                which: w,
                needed: n,
                ..
            }),
        ) => assert_eq!((which, needed), (w, n)),
        (Err(m), Err(s)) => assert_eq!(m.to_string(), s.to_string()),
        _ => panic!("multi: {multi:?}\nsingle: {single:?}"),
    }
}

/// Reads `keys` from node `i` as one multi-get and as single gets, and
/// checks that each key answers alike; returns the multi-get's results.
async fn multi_as_single(
    c: &Cluster,
    i: usize,
    bucket: &BucketRef,
    keys: &[Vec<u8>],
    options: GetOptions,
) -> Vec<Result<GetResponse, KvError>> {
    let req = MultiGetRequest {
        bucket: bucket.clone(),
        keys: keys.to_vec(),
        options: options.clone(),
    };
    let multi = c.nodes[i].multi_get(req).await.unwrap();
    assert_eq!(multi.len(), keys.len());
    for (key, m) in keys.iter().zip(&multi) {
        let single = GetRequest {
            bucket: bucket.clone(),
            key: key.clone(),
            options: options.clone(),
        };
        same_answer(m, &c.nodes[i].get(single).await);
    }
    multi
}

/// A multi-get of keys spread over every node sends one batched message
/// to each other node, and each key answers as its single get does:
/// siblings and their context, not found, per-key errors; with a node
/// down, fallbacks and `pr` alike.
#[tokio::test]
async fn a_multi_get_sends_one_batch_per_other_node_and_answers_as_single_gets() {
    let c = cluster(3);
    let bucket = siblings_bucket(&c);
    let keys = thirty_keys(&c, &bucket).await;
    c.wires.take_batches();
    let before = c.nodes[0].metrics.vnode_batches.get();
    let req = MultiGetRequest {
        bucket: bucket.clone(),
        keys: keys.clone(),
        options: GetOptions::default(),
    };
    let got = c.nodes[0].multi_get(req).await.unwrap();
    let mut sent = c.wires.take_batches();
    sent.sort();
    let to: Vec<&NodeName> = sent.iter().map(|(n, _)| n).collect();
    assert_eq!(to, [&name(1), &name(2)], "one batch to each other node");
    let after = c.nodes[0].metrics.vnode_batches.get();
    assert_eq!(after - before, 2);
    // Each batch carries a get for every replica its node holds.
    for (node, items) in &sent {
        let held: usize = keys[..32]
            .iter()
            .map(|k| {
                let hash = Node::key_hash(&bucket, k);
                c.ring
                    .preflist(hash, 3)
                    .iter()
                    .filter(|(_, n)| *n == node)
                    .count()
            })
            .sum();
        assert_eq!(*items, held, "{node}");
    }
    let siblings = |r: &Result<GetResponse, KvError>| match r {
        Ok(GetResponse::Found(o)) => o.siblings.len(),
        other => panic!("{other:?}"),
    };
    assert_eq!(siblings(&got[0]), 2);
    assert_eq!(siblings(&got[1]), 1);
    assert!(matches!(got[30], Ok(GetResponse::NotFound { .. })));
    assert!(matches!(got[32], Err(KvError::Empty("key"))));
    assert!(matches!(
        got[33],
        Err(KvError::TooLarge { what: "key", .. })
    ));
    for i in 0..3 {
        multi_as_single(&c, i, &bucket, &keys, GetOptions::default()).await;
    }
    // One node down: no batch goes to it, fallbacks answer for it.
    c.wires.down.lock().insert(name(2));
    c.wires.take_batches();
    let got = multi_as_single(&c, 0, &bucket, &keys, GetOptions::default()).await;
    assert!(got[..30].iter().all(Result::is_ok), "{got:?}");
    let sent = c.wires.take_batches();
    let to: Vec<&NodeName> = sent.iter().map(|(n, _)| n).collect();
    assert_eq!(to, [&name(1)], "one batch, to the node up");
    let pr_all = GetOptions {
        pr: Some(Quorum::All),
        ..GetOptions::default()
    };
    let got = multi_as_single(&c, 1, &bucket, &keys, pr_all).await;
    assert!(
        got[..30]
            .iter()
            .any(|r| matches!(r, Err(KvError::ReadQuorum { which: "pr", .. })))
    );
}

/// A multi-put's replicated objects go to each other node in one batch;
/// every write lands on every replica.
#[tokio::test]
async fn a_multi_put_replicates_in_one_batch_per_other_node() {
    let c = cluster(3);
    let keys: Vec<Vec<u8>> = (0..40).map(|k| format!("p{k}").into_bytes()).collect();
    let objects = keys
        .iter()
        .map(|k| MultiPutObject {
            key: k.clone(),
            context: None,
            content: Content::new(k.clone()),
        })
        .collect();
    let req = MultiPutRequest {
        bucket: bucket(),
        objects,
        options: PutOptions {
            w: Some(Quorum::All),
            dw: Some(Quorum::All),
            return_body: true,
            ..PutOptions::default()
        },
    };
    c.wires.take_batches();
    let written = c.nodes[0].multi_put(req).await.unwrap();
    for (key, result) in keys.iter().zip(&written) {
        let object = result.as_ref().unwrap().object.as_ref().unwrap();
        assert_eq!(object.contents().next().unwrap().value, *key);
    }
    let mut sent = c.wires.take_batches();
    sent.sort();
    let to: Vec<&NodeName> = sent.iter().map(|(n, _)| n).collect();
    assert_eq!(to, [&name(1), &name(2)], "one batch to each other node");
    for key in &keys {
        let hash = Node::key_hash(&bucket(), key);
        for (p, owner) in c.ring.preflist(hash, 3) {
            let i = index_of(&c, owner);
            let k = std::str::from_utf8(key).unwrap();
            assert!(stored(&c, i, p, k).is_some(), "{k} missing at {p}");
        }
    }
}

/// Batches above their item cap are split, and a request needing more
/// batches to a node than `multi.concurrency` runs in waves: the answers
/// stay those of single gets and puts.
#[tokio::test]
async fn small_batches_and_waves_answer_alike() {
    let limits = MultiLimits {
        batch_items_max: 4,
        concurrency: 2,
        ..MultiLimits::default()
    };
    let c = cluster_with(3, limits, |_| false);
    let bucket = siblings_bucket(&c);
    let keys: Vec<Vec<u8>> = (0..40).map(|k| format!("w{k}").into_bytes()).collect();
    let objects = keys
        .iter()
        .map(|k| MultiPutObject {
            key: k.clone(),
            context: None,
            content: Content::new(k.clone()),
        })
        .collect();
    let req = MultiPutRequest {
        bucket: bucket.clone(),
        objects,
        options: PutOptions::default(),
    };
    let written = c.nodes[1].multi_put(req).await.unwrap();
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    let sent = c.wires.take_batches();
    assert!(
        sent.len() > 4 && sent.iter().all(|(_, n)| *n <= 4),
        "{sent:?}"
    );
    let got = multi_as_single(&c, 2, &bucket, &keys, GetOptions::default()).await;
    for (key, result) in keys.iter().zip(got) {
        assert_eq!(values(&result.unwrap()), vec![key.clone()]);
    }
    let sent = c.wires.take_batches();
    assert!(sent.iter().all(|(_, n)| *n <= 4), "{sent:?}");
}
