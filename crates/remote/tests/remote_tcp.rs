//! NetRemote as a node runs it: real TCP on loopback, requests run on a
//! worker pool's threads, replies sent from those threads (outside the
//! runtime).

mod remote_support;

use std::sync::Arc;
use std::time::Duration;

use eddy_kv::router::RemoteVnodes;
use eddy_model::KvError;
use eddy_net::{NetConfig, Transport};
use eddy_remote::{NetRemote, RemoteConfig, WorkerPool};
use eddy_ring::Partition;
use eddy_vnode::msg::{VnodeId, VnodeReply};
use eddy_vnode::reply::ReplyTo;
use remote_support::*;
use tokio::sync::mpsc::unbounded_channel;

const WAIT: Duration = Duration::from_secs(10);

async fn start(name: &str) -> Arc<NetRemote> {
    let addr = "127.0.0.1:0".parse().unwrap();
    let transport = Transport::tcp(node(name), addr, NetConfig::default())
        .await
        .unwrap();
    let remote = NetRemote::new(transport, RemoteConfig::default());
    remote.install().unwrap();
    tokio::spawn(remote.watch_peers());
    remote
}

fn introduce(a: &NetRemote, b: &NetRemote) {
    for (x, y) in [(a, b), (b, a)] {
        let addr = y.transport().listen_addr().unwrap();
        x.transport()
            .set_peer_address(y.transport().local().clone(), addr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_and_gets_over_tcp_run_on_the_worker_pool() {
    let a = start("a").await;
    let b = start("b").await;
    introduce(&a, &b);
    let pool = WorkerPool::new(2, 256).unwrap();
    b.serve(inbound(vnodes(4)), Arc::new(pool)).unwrap();
    let to = |i: u32| VnodeId {
        partition: Partition(i % 4),
        node: node("b"),
    };
    let keys = 200u32;
    let mut puts = Vec::new();
    for i in 0..keys {
        let (tx, rx) = unbounded_channel();
        let req = coordinate(&format!("k{i}"), format!("v{i}").as_bytes(), false);
        a.send(&to(i), req, ReplyTo::Local(tx));
        puts.push(rx);
    }
    for (i, rx) in puts.iter_mut().enumerate() {
        let mut replies = Vec::new();
        for _ in 0..2 {
            replies.push(next(rx, WAIT).await.expect("put reply").reply);
        }
        let coordinated = replies.iter().find_map(|r| match r {
            VnodeReply::Coordinated { encoded, .. } => Some(encoded.clone()),
            _ => None,
        });
        assert_eq!(
            values(&coordinated.unwrap()),
            vec![format!("v{i}").into_bytes()]
        );
        assert!(replies.iter().any(|r| matches!(r, VnodeReply::Put(Ok(_)))));
    }
    for i in 0..keys {
        let (tx, mut rx) = unbounded_channel();
        a.send(&to(i), get(&format!("k{i}")), ReplyTo::Local(tx));
        let VnodeReply::Get(Ok(Some(found))) = next(&mut rx, WAIT).await.unwrap().reply else {
            panic!("k{i} not found");
        };
        assert_eq!(values(&found), vec![format!("v{i}").into_bytes()]);
    }
    assert_eq!(a.pending(), 0);

    // A stopped peer: requests are answered Unreachable, not left waiting.
    b.transport().shutdown();
    for i in 0..3 {
        let (tx, mut rx) = unbounded_channel();
        a.send(&to(i), get("k0"), ReplyTo::Local(tx));
        let answer = next(&mut rx, WAIT).await.expect("answered").reply;
        assert!(
            matches!(answer, VnodeReply::Get(Err(KvError::Unreachable(_)))),
            "{answer:?}"
        );
    }
    assert_eq!(a.pending(), 0);
}

/// Durable puts to a vnode with a commit log (`o_sync`): the reply leaves
/// from the log's syncer thread once its fdatasync covered the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_replies_leave_from_the_syncer_thread() {
    use eddy_bitcask::{Bitcask, BitcaskConfig};
    use eddy_vnode::Vnode;
    use eddy_vnode::commitlog::{CommitLog, LogFigures, LogOptions, SyncPolicy};
    use eddy_vnode::msg::PutAck;

    let dir = tempfile::tempdir().unwrap();
    let opts = LogOptions {
        sync: SyncPolicy::OSync,
        segment_bytes: 1 << 20,
        ..LogOptions::default()
    };
    let log = CommitLog::open(
        &dir.path().join("log"),
        1,
        opts,
        Box::new(|| Ok(())),
        LogFigures::unregistered(),
    )
    .unwrap();
    let backend = Bitcask::open(&dir.path().join("p0"), BitcaskConfig::default()).unwrap();
    let vnode = Vnode::new(
        Partition(0),
        eddy_object::Actor(7),
        Arc::new(backend),
        Some(Arc::new(log)),
    );
    let vnodes = Arc::new([(Partition(0), vnode)].into_iter().collect());
    let a = start("a").await;
    let b = start("b").await;
    introduce(&a, &b);
    b.serve(inbound(vnodes), Arc::new(WorkerPool::new(2, 64).unwrap()))
        .unwrap();
    let to = VnodeId {
        partition: Partition(0),
        node: node("b"),
    };
    let object = eddy_object::RiakObject {
        vv: eddy_object::VersionVector::from_entries([(eddy_object::Actor(9), 1)]),
        siblings: vec![eddy_object::Sibling {
            dot: eddy_object::Dot {
                actor: eddy_object::Actor(9),
                counter: 1,
            },
            content: eddy_object::Content::new(b"durable".to_vec()),
        }],
    };
    let encoded = bytes::Bytes::from(eddy_object::codec::encode(&object));
    let mut waiting = Vec::new();
    for i in 0..50 {
        let (tx, rx) = unbounded_channel();
        a.send(
            &to,
            replicate(&format!("d{i}"), encoded.clone()),
            ReplyTo::Local(tx),
        );
        waiting.push(rx);
    }
    for rx in &mut waiting {
        let answer = next(rx, WAIT).await.expect("a durable reply").reply;
        assert!(
            matches!(answer, VnodeReply::Put(Ok(PutAck { durable: true }))),
            "{answer:?}"
        );
    }
    let (tx, mut rx) = unbounded_channel();
    a.send(&to, get("d7"), ReplyTo::Local(tx));
    let VnodeReply::Get(Ok(Some(found))) = next(&mut rx, WAIT).await.unwrap().reply else {
        panic!("d7 not stored");
    };
    assert_eq!(found, encoded, "stored as sent, byte for byte");
}

/// A filtered key listing crosses the wire as its filter's JSON text: the
/// receiving node parses it again and runs it at its vnodes, which send
/// back only the keys it matches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_key_listing_runs_its_filter_at_the_remote_vnodes() {
    use eddy_model::BucketRef;
    use eddy_model::keyfilter::KeyFilter;
    use eddy_vnode::msg::{FoldKind, FoldRequest, VnodeRequest};

    let a = start("a").await;
    let b = start("b").await;
    introduce(&a, &b);
    b.serve(
        inbound(vnodes(2)),
        Arc::new(WorkerPool::new(2, 64).unwrap()),
    )
    .unwrap();
    let to = |p: u32| VnodeId {
        partition: Partition(p),
        node: node("b"),
    };
    let bucket = BucketRef::default_type("invoices").storage_bucket();
    for i in 0..40u32 {
        let mut req = coordinate(&format!("c{}-{i}", i % 3), b"v", false);
        if let VnodeRequest::Put(put) = &mut req {
            put.key.bucket = bucket.clone();
        }
        let (tx, mut rx) = unbounded_channel();
        a.send(&to(i % 2), req, ReplyTo::Local(tx));
        for _ in 0..2 {
            next(&mut rx, WAIT).await.expect("put reply");
        }
    }
    let json = serde_json::json!([["tokenize", "-", 1], ["eq", "c1"]]);
    let filter = Arc::new(KeyFilter::parse(&json).unwrap());
    let mut got = Vec::new();
    for p in 0..2 {
        let fold = VnodeRequest::Fold(FoldRequest {
            kind: FoldKind::FilteredKeys {
                bucket: bucket.clone(),
                filter: filter.clone(),
            },
            ring_size: 64,
            ranges: None,
        });
        let (tx, mut rx) = unbounded_channel();
        a.send(&to(p), fold, ReplyTo::Local(tx));
        let VnodeReply::Fold(Ok(chunk)) = next(&mut rx, WAIT).await.expect("a chunk").reply else {
            panic!("the fold failed");
        };
        assert!(chunk.last, "a few keys come in one chunk");
        got.extend(chunk.items);
    }
    got.sort();
    let mut want: Vec<Vec<u8>> = (0..40u32)
        .filter(|i| i % 3 == 1)
        .map(|i| format!("c1-{i}").into_bytes())
        .collect();
    want.sort();
    assert_eq!(got, want);
}
