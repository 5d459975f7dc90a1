//! Links between a coordinator and a replica that go down mid-request,
//! over the simulated network (virtual time): a replica whose link back
//! to the coordinator is down sends its reply again once the link
//! returns, and a coordinator that loses its link to a replica fails that
//! replica's requests at once, so the request completes from the other
//! replicas (or fails) long before its deadline.

mod sim_support;

use std::time::Duration;

use eddy_kv::*;
use eddy_model::*;
use eddy_net::sim::LinkFaults;
use eddy_object::Content;
use eddy_ring::NodeName;
use sim_support::{SimCluster, bucket, name};
use tokio::time::Instant;

/// A coordinator's deadline, as Riak's default: what a lost reply would
/// cost.
const DEADLINE_MS: u64 = 60_000;

/// Far below the deadline: what every request here must take at most.
const PROMPT: Duration = Duration::from_secs(2);

fn put(key: &str, value: &str, w: Option<Quorum>) -> PutRequest {
    PutRequest {
        bucket: bucket(),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options: PutOptions {
            w,
            timeout_ms: Some(DEADLINE_MS),
            ..PutOptions::default()
        },
    }
}

fn get(key: &str, r: Option<Quorum>) -> GetRequest {
    GetRequest {
        bucket: bucket(),
        key: key.as_bytes().to_vec(),
        options: GetOptions {
            r,
            timeout_ms: Some(DEADLINE_MS),
            ..GetOptions::default()
        },
    }
}

fn values(resp: &GetResponse) -> Vec<Vec<u8>> {
    match resp {
        GetResponse::Found(o) => o.contents().map(|c| c.value.clone()).collect(),
        GetResponse::NotFound { .. } => vec![],
    }
}

/// The owners of `key`'s primary preflist, in order.
fn owners(c: &SimCluster, key: &str) -> Vec<NodeName> {
    let hash = Node::key_hash(&bucket(), key.as_bytes());
    let ring = c.node(0).ring();
    ring.preflist(hash, 3)
        .into_iter()
        .map(|(_, n)| n.clone())
        .collect()
}

/// A key whose three replicas are on three nodes, node `i` among them.
fn key_on(c: &SimCluster, i: usize) -> String {
    (0..)
        .map(|k| format!("k{k}"))
        .find(|k| {
            let owners = owners(c, k);
            let distinct = owners
                .iter()
                .all(|n| owners.iter().filter(|m| *m == n).count() == 1);
            distinct && owners.contains(&name(i))
        })
        .unwrap()
}

/// Messages from `from` to `to` take a second: requests are in flight
/// when the test acts.
fn slow(c: &SimCluster, from: usize, to: usize) {
    let second = LinkFaults {
        delay_min: Duration::from_secs(1),
        delay_max: Duration::from_secs(1),
        ..LinkFaults::default()
    };
    c.net.set_link_faults(&name(from), &name(to), second);
}

/// Takes down `from`'s link to `to` after `after`.
async fn disconnect_after(c: &SimCluster, from: usize, to: usize, after: Duration) {
    tokio::time::sleep(after).await;
    c.net.disconnect(&name(from), &name(to)).unwrap();
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_reply_whose_link_is_down_is_sent_again_once_the_link_returns() {
    let c = SimCluster::new(1, 3).await;
    // Node 1's link back to the coordinator (node 0) is down for 300 ms;
    // node 0's requests to it still arrive.
    c.net.disconnect(&name(1), &name(0)).unwrap();
    let net = c.net.clone();
    let (replica, coordinator) = (name(1), name(0));
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        net.reconnect(&replica, &coordinator).unwrap();
    });
    let key = key_on(&c, 1);
    let start = Instant::now();
    c.node(0)
        .put(put(&key, "v", Some(Quorum::All)))
        .await
        .expect("w = all: node 1's reply came after its link returned");
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
    let got = c.node(0).get(get(&key, Some(Quorum::All))).await.unwrap();
    assert_eq!(values(&got), vec![b"v".to_vec()]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_lost_link_to_the_coordinating_replica_moves_the_put_to_another() {
    let c = SimCluster::new(2, 4).await;
    let key = (0..)
        .map(|k| format!("k{k}"))
        .find(|k| !owners(&c, k).contains(&name(0)))
        .unwrap();
    let first = owners(&c, &key)[0].clone();
    let x = (0..c.size()).position(|i| name(i) == first).unwrap();
    slow(&c, 0, x);
    let start = Instant::now();
    let node = c.node(0);
    let (written, ()) = tokio::join!(
        node.put(put(&key, "v", None)),
        disconnect_after(&c, 0, x, Duration::from_millis(100)),
    );
    written.expect("w = quorum from the two other replicas");
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
    let got = c.node(0).get(get(&key, None)).await.unwrap();
    assert_eq!(values(&got), vec![b"v".to_vec()]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_get_that_needs_a_replica_whose_link_is_lost_fails_at_once() {
    let c = SimCluster::new(3, 3).await;
    let key = key_on(&c, 2);
    c.node(0)
        .put(put(&key, "v", Some(Quorum::All)))
        .await
        .unwrap();
    slow(&c, 0, 2);
    let start = Instant::now();
    let node = c.node(0);
    let (got, ()) = tokio::join!(
        node.get(get(&key, Some(Quorum::All))),
        disconnect_after(&c, 0, 2, Duration::from_millis(100)),
    );
    let err = got.expect_err("r = all cannot be met without node 2");
    assert!(!matches!(err, KvError::Timeout), "{err}");
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
    // r = quorum is met by the two others.
    let start = Instant::now();
    let got = c.node(0).get(get(&key, None)).await.unwrap();
    assert_eq!(values(&got), vec![b"v".to_vec()]);
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
}

/// The messages delivered from node `from` to node `to` so far.
fn delivered(c: &SimCluster, from: usize, to: usize) -> usize {
    c.net
        .trace()
        .iter()
        .filter(|e| e.from == name(from) && e.to == name(to))
        .filter(|e| e.fate == eddy_net::sim::Fate::Delivered)
        .count()
}

/// Multi-key requests over the simulated network: each node gets one
/// batched message per request (a multi-put's replication included, its
/// keys coordinated here or on another node), and a link lost while a
/// batch is in flight fails that batch's items at once, so each key
/// answers long before the deadline: from its other replicas at r =
/// quorum, and as unmet at r = all if it has a replica on that node.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn multi_key_requests_send_one_batch_per_node_and_survive_a_lost_link() {
    let c = SimCluster::new(3, 4).await;
    let keys: Vec<Vec<u8>> = (0..60).map(|k| format!("m{k}").into_bytes()).collect();
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
            timeout_ms: Some(DEADLINE_MS),
            ..PutOptions::default()
        },
    };
    let written = c.node(0).multi_put(req).await.unwrap();
    assert!(written.iter().all(Result::is_ok), "{written:?}");
    let get = MultiGetRequest {
        bucket: bucket(),
        keys: keys.clone(),
        options: GetOptions {
            r: Some(Quorum::All),
            timeout_ms: Some(DEADLINE_MS),
            ..GetOptions::default()
        },
    };
    let before: Vec<usize> = (1..4).map(|i| delivered(&c, 0, i)).collect();
    let got = c.node(0).multi_get(get.clone()).await.unwrap();
    for (key, result) in keys.iter().zip(&got) {
        assert_eq!(values(result.as_ref().unwrap()), vec![key.clone()]);
    }
    let after: Vec<usize> = (1..4).map(|i| delivered(&c, 0, i)).collect();
    let sent: Vec<usize> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(sent, [1, 1, 1], "one batch to each other node");
    // Node 1's batch is in flight when node 0's link to it goes.
    slow(&c, 0, 1);
    let start = Instant::now();
    let node = c.node(0);
    let (got, ()) = tokio::join!(
        node.multi_get(get.clone()),
        disconnect_after(&c, 0, 1, Duration::from_millis(100)),
    );
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
    let mut unmet = 0;
    for (key, result) in keys.iter().zip(got.unwrap()) {
        let k = std::str::from_utf8(key).unwrap();
        match owners(&c, k).contains(&name(1)) {
            true => {
                unmet += 1;
                assert!(
                    matches!(result, Err(KvError::ReadQuorum { which: "r", .. })),
                    "{k}: {result:?}"
                );
            }
            false => assert_eq!(values(&result.unwrap()), vec![key.clone()]),
        }
    }
    assert!(unmet > 0, "some keys have a replica on node 1");
    let quorum = MultiGetRequest {
        options: GetOptions {
            timeout_ms: Some(DEADLINE_MS),
            ..GetOptions::default()
        },
        ..get
    };
    let got = c.node(0).multi_get(quorum).await.unwrap();
    assert!(start.elapsed() < PROMPT, "took {:?}", start.elapsed());
    for (key, result) in keys.iter().zip(got) {
        assert_eq!(values(&result.unwrap()), vec![key.clone()]);
    }
}
