//! NetRemote over the simulated network: node `a` sends vnode requests
//! to real vnodes (memory backends) on node `b`, which runs them inline
//! on the network's driver, so a seed replays exactly.

mod remote_support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eddy_kv::router::RemoteVnodes;
use eddy_model::KvError;
use eddy_model::error::Signal;
use eddy_net::Lane;
use eddy_net::sim::{LinkFaults, SimNetwork};
use eddy_object::Content;
use eddy_remote::{Executor, Inline, NetRemote, RemoteConfig, Work, wire};
use eddy_ring::Partition;
use eddy_vnode::msg::{BatchItem, PutAck, VnodeId, VnodeReply, VnodeRequest};
use eddy_vnode::reply::{KeyedReply, Reply, ReplyTo};
use remote_support::*;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

const WAIT: Duration = Duration::from_secs(5);

/// Default limits, and request ids from 1: a simulation replays exactly.
fn fixed() -> RemoteConfig {
    RemoteConfig {
        request_id_start: 1,
        ..RemoteConfig::default()
    }
}

struct Sim {
    net: SimNetwork,
    a: Arc<NetRemote>,
    b: Arc<NetRemote>,
}

fn sim(seed: u64, config: RemoteConfig, executor: Arc<dyn Executor>) -> Sim {
    let net = SimNetwork::new(seed);
    let a = NetRemote::new(net.add_node(node("a")).unwrap(), config.clone());
    let b = NetRemote::new(net.add_node(node("b")).unwrap(), config);
    a.install().unwrap();
    b.install().unwrap();
    b.serve(inbound(vnodes(4)), executor).unwrap();
    tokio::spawn(a.watch_peers());
    Sim { net, a, b }
}

fn two_nodes() -> Sim {
    sim(1, fixed(), Arc::new(Inline))
}

fn on_b(p: u32) -> VnodeId {
    VnodeId {
        partition: Partition(p),
        node: node("b"),
    }
}

/// Sends `req` to partition `p` on `b`; its replies come on the receiver.
fn send(from: &NetRemote, p: u32, req: VnodeRequest) -> UnboundedReceiver<Reply> {
    let (tx, rx) = unbounded_channel();
    from.send(&on_b(p), req, ReplyTo::Local(tx));
    rx
}

async fn reply(rx: &mut UnboundedReceiver<Reply>) -> VnodeReply {
    next(rx, WAIT)
        .await
        .expect("a reply before the deadline")
        .reply
}

/// Writes `value` under `key` at partition `p` through the network and
/// returns the stored object's encoding.
async fn write(s: &Sim, p: u32, key: &str, value: &[u8]) -> Bytes {
    let mut rx = send(&s.a, p, coordinate(key, value, false));
    let VnodeReply::Coordinated {
        encoded, siblings, ..
    } = reply(&mut rx).await
    else {
        panic!("no coordinated object");
    };
    assert_eq!(siblings, 1);
    let ack = reply(&mut rx).await;
    assert!(
        matches!(ack, VnodeReply::Put(Ok(PutAck { durable: false }))),
        "{ack:?}"
    );
    encoded
}

async fn read(s: &Sim, p: u32, key: &str) -> Option<Bytes> {
    match reply(&mut send(&s.a, p, get(key))).await {
        VnodeReply::Get(Ok(found)) => found,
        other => panic!("get failed: {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn puts_gets_and_reaps_cross_the_network() {
    let s = two_nodes();
    let encoded = write(&s, 1, "k", b"v1").await;
    assert_eq!(values(&encoded), vec![b"v1".to_vec()]);
    // The other replicas merge the coordinating vnode's object as is.
    let ack = reply(&mut send(&s.a, 2, replicate("k", encoded.clone()))).await;
    assert!(
        matches!(ack, VnodeReply::Put(Ok(PutAck { durable: true }))),
        "{ack:?}"
    );
    assert_eq!(read(&s, 1, "k").await, Some(encoded.clone()));
    assert_eq!(read(&s, 2, "k").await, Some(encoded));
    assert_eq!(read(&s, 3, "k").await, None);
    // A delete writes a tombstone; reaping it with its vector removes it.
    let kept = write(&s, 1, "kept", b"").await;
    let dead = Content::tombstone(1);
    let mut rx = send(&s.a, 1, coordinate_content("dead", dead, false));
    let VnodeReply::Coordinated { encoded, .. } = reply(&mut rx).await else {
        panic!("no tombstone written");
    };
    let vv = eddy_object::codec::decode(&encoded).unwrap().vv;
    let reap = VnodeRequest::Reap {
        key: skey("dead"),
        tombstone: vv,
    };
    s.a.send(&on_b(1), reap, ReplyTo::Nobody);
    assert_eq!(read(&s, 1, "dead").await, None);
    assert_eq!(read(&s, 1, "kept").await, Some(kept));
    assert_eq!((s.a.pending(), s.b.pending()), (0, 0));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_refused_put_is_answered_with_the_vnodes_error_and_leaves_the_table() {
    let s = two_nodes();
    write(&s, 0, "k", b"v1").await;
    let mut rx = send(&s.a, 0, coordinate("k", b"v2", true));
    let refused = reply(&mut rx).await;
    assert!(
        matches!(refused, VnodeReply::Put(Err(KvError::MatchFound))),
        "{refused:?}"
    );
    assert_eq!(
        s.a.pending(),
        0,
        "a refusal is a coordinated put's last reply"
    );
    let unknown = reply(&mut send(&s.a, 9, get("k"))).await;
    assert!(
        matches!(
            unknown,
            VnodeReply::Get(Err(KvError::Signal(Signal::NotHosted(9))))
        ),
        "{unknown:?}"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_crashed_peer_is_unreachable_at_once() {
    let s = two_nodes();
    s.net.crash(&node("b")).unwrap();
    let mut rx = send(&s.a, 0, get("k"));
    let answer = rx.try_recv().expect("answered before send returned").reply;
    assert!(
        matches!(answer, VnodeReply::Get(Err(KvError::Unreachable(ref n))) if n == "b"),
        "{answer:?}"
    );
    let mut rx = send(&s.a, 0, coordinate("k", b"v", false));
    let answer = rx.try_recv().expect("answered before send returned").reply;
    assert!(
        matches!(answer, VnodeReply::Put(Err(KvError::Unreachable(_)))),
        "{answer:?}"
    );
    assert_eq!(s.a.pending(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_peer_lost_while_requests_wait_fails_them() {
    let s = two_nodes();
    let slow = LinkFaults {
        delay_min: Duration::from_secs(1),
        delay_max: Duration::from_secs(1),
        ..LinkFaults::default()
    };
    s.net.set_link_faults(&node("a"), &node("b"), slow);
    let mut put = send(&s.a, 0, coordinate("k", b"v", false));
    let mut get = send(&s.a, 1, get("k"));
    assert_eq!(s.a.pending(), 2);
    s.net.crash(&node("b")).unwrap();
    let put = tokio::time::timeout(Duration::from_millis(500), put.recv()).await;
    let get = tokio::time::timeout(Duration::from_millis(500), get.recv()).await;
    let (Ok(Some(put)), Ok(Some(get))) = (put, get) else {
        panic!("not failed when the peer was lost");
    };
    assert!(matches!(
        put.reply,
        VnodeReply::Put(Err(KvError::Unreachable(_)))
    ));
    assert!(matches!(
        get.reply,
        VnodeReply::Get(Err(KvError::Unreachable(_)))
    ));
    assert_eq!(s.a.pending(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_reply_is_retried_for_a_bounded_time_only() {
    let s = two_nodes();
    s.net.disconnect(&node("b"), &node("a")).unwrap();
    let mut early = send(&s.a, 0, get("k"));
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.net.reconnect(&node("b"), &node("a")).unwrap();
    let answer = reply(&mut early).await;
    assert!(matches!(answer, VnodeReply::Get(Ok(None))), "{answer:?}");
    // A link down for longer than the retry budget: the reply is dropped.
    s.net.disconnect(&node("b"), &node("a")).unwrap();
    let mut late = send(&s.a, 0, get("k"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    s.net.reconnect(&node("b"), &node("a")).unwrap();
    assert!(
        next(&mut late, Duration::from_secs(5)).await.is_none(),
        "the reply was given up on"
    );
    assert_eq!(s.a.pending(), 1, "left to its coordinator's deadline");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_peer_found_down_behind_a_silent_partition_fails_its_requests() {
    let s = two_nodes();
    let members = |names: &[&str]| Arc::new(names.iter().map(|n| node(n)).collect());
    let (up_tx, up) = tokio::sync::watch::channel(members(&["a", "b"]));
    tokio::spawn(s.a.watch_up(up));
    s.net.partition(&[node("a")], &[node("b")]);
    let mut rx = send(&s.a, 0, get("k"));
    assert!(next(&mut rx, Duration::from_secs(1)).await.is_none());
    up_tx.send(members(&["a"])).unwrap();
    let answer = next(&mut rx, Duration::from_millis(1))
        .await
        .expect("failed when found down")
        .reply;
    assert!(
        matches!(answer, VnodeReply::Get(Err(KvError::Unreachable(ref n))) if n == "b"),
        "{answer:?}"
    );
    assert_eq!(s.a.pending(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_partition_times_out_and_the_abandoned_entry_is_swept() {
    let s = two_nodes();
    s.net.partition(&[node("a")], &[node("b")]);
    let mut rx = send(&s.a, 0, get("k"));
    assert!(
        next(&mut rx, Duration::from_secs(2)).await.is_none(),
        "no answer across a partition"
    );
    assert_eq!(s.a.pending(), 1, "its coordinator still listens");
    assert_eq!(s.a.sweep(), 0);
    drop(rx);
    assert_eq!(s.a.sweep(), 1);
    assert_eq!(s.a.pending(), 0);
    s.net.heal();
    assert!(read(&s, 0, "k").await.is_none());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_dropped_reply_channel_frees_its_entry() {
    let s = two_nodes();
    drop(send(&s.a, 0, get("k")));
    assert_eq!(s.a.pending(), 1);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        s.a.pending(),
        0,
        "the reply ended the entry though nobody took it"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_table_stays_bounded_sweeping_abandoned_entries_first() {
    let config = RemoteConfig {
        pending_max: 8,
        ..fixed()
    };
    let s = sim(1, config, Arc::new(Inline));
    s.net.partition(&[node("a")], &[node("b")]);
    for _ in 0..8 {
        drop(send(&s.a, 0, get("k")));
    }
    assert_eq!(s.a.pending(), 8);
    let mut live: Vec<_> = (0..8).map(|_| send(&s.a, 0, get("k"))).collect();
    assert_eq!(
        s.a.pending(),
        8,
        "the full table swept the abandoned entries"
    );
    let mut refused = send(&s.a, 0, get("k"));
    let answer = refused.try_recv().expect("refused at once").reply;
    assert!(
        matches!(answer, VnodeReply::Get(Err(KvError::Unreachable(ref m))) if m.contains("too many")),
        "{answer:?}"
    );
    assert!(live.iter_mut().all(|rx| rx.try_recv().is_err()));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn old_entries_are_answered_with_a_timeout_at_a_sweep() {
    let config = RemoteConfig {
        pending_age_max: Duration::from_secs(10),
        ..fixed()
    };
    let s = sim(1, config, Arc::new(Inline));
    s.net.partition(&[node("a")], &[node("b")]);
    let mut rx = send(&s.a, 0, coordinate("k", b"v", false));
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(s.a.sweep(), 1);
    let answer = rx.try_recv().unwrap().reply;
    assert!(
        matches!(answer, VnodeReply::Put(Err(KvError::Timeout))),
        "{answer:?}"
    );
}

/// Many puts and gets in flight at once over links that reorder: every
/// reply reaches its own request, and a coordinated put's two replies
/// both arrive, in whichever order.
/// Returns the network's trace and how many puts were acknowledged before
/// their coordinated object arrived.
async fn many_at_once(seed: u64) -> (Vec<eddy_net::sim::TraceEvent>, usize) {
    let s = sim(seed, fixed(), Arc::new(Inline));
    let jitter = LinkFaults {
        delay_min: Duration::from_millis(1),
        delay_max: Duration::from_millis(30),
        ..LinkFaults::default()
    };
    s.net.set_default_faults(jitter);
    let keys = 120;
    let mut puts: Vec<_> = (0..keys)
        .map(|i| {
            send(
                &s.a,
                i % 4,
                coordinate(&format!("k{i}"), format!("v{i}").as_bytes(), false),
            )
        })
        .collect();
    let mut ack_first = 0;
    for (i, rx) in puts.iter_mut().enumerate() {
        let (mut object, mut acked) = (None, false);
        for _ in 0..2 {
            match reply(rx).await {
                VnodeReply::Coordinated { encoded, .. } => object = Some(encoded),
                VnodeReply::Put(Ok(_)) => {
                    ack_first += usize::from(object.is_none());
                    acked = true;
                }
                other => panic!("put {i}: {other:?}"),
            }
        }
        let object = object.expect("the coordinated object");
        assert_eq!(values(&object), vec![format!("v{i}").into_bytes()]);
        assert!(acked);
    }
    let mut gets: Vec<_> = (0..keys)
        .map(|i| send(&s.a, i % 4, get(&format!("k{i}"))))
        .collect();
    for (i, rx) in gets.iter_mut().enumerate() {
        let VnodeReply::Get(Ok(Some(found))) = reply(rx).await else {
            panic!("get {i} found nothing");
        };
        assert_eq!(values(&found), vec![format!("v{i}").into_bytes()]);
    }
    assert_eq!(s.a.pending(), 0);
    (s.net.trace(), ack_first)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn replies_reach_their_own_requests_among_many() {
    let (_, ack_first) = many_at_once(7).await;
    assert!(ack_first > 0, "the links reordered some puts' two replies");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_same_seed_replays_the_same_messages() {
    assert_eq!(many_at_once(11).await, many_at_once(11).await);
}

/// Refuses everything, as a full worker queue does.
#[derive(Debug)]
struct Full;

impl Executor for Full {
    fn try_execute(&self, work: Box<Work>) -> Result<(), Box<Work>> {
        Err(work)
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_overloaded_node_refuses_at_once() {
    let s = sim(1, fixed(), Arc::new(Full));
    let answer = reply(&mut send(&s.a, 0, coordinate("k", b"v", false))).await;
    let VnodeReply::Put(Err(KvError::Unreachable(why))) = answer else {
        panic!("{answer:?}");
    };
    assert_eq!(why, "b (overloaded)");
    assert_eq!(s.a.pending(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_node_not_serving_yet_refuses_and_an_undecodable_request_is_answered() {
    let net = SimNetwork::new(3);
    let a = NetRemote::new(net.add_node(node("a")).unwrap(), fixed());
    let b = NetRemote::new(net.add_node(node("b")).unwrap(), fixed());
    a.install().unwrap();
    b.install().unwrap();
    let (tx, mut rx) = unbounded_channel();
    a.send(&on_b(0), get("k"), ReplyTo::Local(tx));
    let answer = reply(&mut rx).await;
    assert!(
        matches!(answer, VnodeReply::Get(Err(KvError::Unreachable(ref m))) if m == "b (not serving yet)"),
        "{answer:?}"
    );
    // A raw node sends b a get cut short; b answers what it could read.
    let raw = net.add_node(node("raw")).unwrap();
    let (got_tx, mut got) = unbounded_channel();
    raw.set_handler(Arc::new(move |m: eddy_net::Incoming| {
        let _ = got_tx.send(m.body);
    }))
    .unwrap();
    let whole = wire::encode_request(42, Partition(0), &get("k")).unwrap();
    raw.send(&node("b"), Lane::Control, whole.slice(..whole.len() - 1))
        .await
        .unwrap();
    let body = tokio::time::timeout(WAIT, got.recv())
        .await
        .unwrap()
        .unwrap();
    let Ok(wire::Message::Reply(env)) = wire::decode(&body) else {
        panic!("no reply");
    };
    assert_eq!(env.request_id, 42);
    assert!(
        matches!(env.reply, VnodeReply::Get(Err(_))),
        "{:?}",
        env.reply
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_reply_too_large_for_a_frame_becomes_a_too_large_error() {
    let config = eddy_net::NetConfig {
        frame_body_bytes_max: 4096,
        ..eddy_net::NetConfig::default()
    };
    let net = SimNetwork::with_config(5, config);
    let a = NetRemote::new(net.add_node(node("a")).unwrap(), fixed());
    let b = NetRemote::new(net.add_node(node("b")).unwrap(), fixed());
    a.install().unwrap();
    b.install().unwrap();
    b.serve(inbound(vnodes(1)), Arc::new(Inline)).unwrap();
    let s = Sim { net, a, b };
    let value = vec![b'x'; 3000];
    write(&s, 0, "k", &value).await;
    // A second write without context makes two siblings: 6 KB to send back.
    let mut rx = send(&s.a, 0, coordinate("k", &value, false));
    let answer = reply(&mut rx).await;
    assert!(
        matches!(
            answer,
            VnodeReply::Put(Err(KvError::TooLarge { what: "object", .. }))
        ),
        "{answer:?}"
    );
    let answer = reply(&mut send(&s.a, 0, get("k"))).await;
    assert!(
        matches!(answer, VnodeReply::Get(Err(KvError::TooLarge { .. }))),
        "{answer:?}"
    );
    // A request too large for a frame is refused before it leaves.
    let mut rx = send(&s.a, 0, coordinate("big", &[0; 5000], false));
    let answer = rx.try_recv().expect("refused at once").reply;
    assert!(
        matches!(answer, VnodeReply::Put(Err(KvError::TooLarge { .. }))),
        "{answer:?}"
    );
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(s.a.pending(), 0);
}

/// Over links that lose a fifth of all messages and reorder the rest,
/// across seeds: a get is answered with its own key's value or not at
/// all, never with another's; once the coordinators give up and drop
/// their receivers, a sweep empties the table.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn lossy_links_lose_replies_but_never_misroute_them() {
    for seed in 0..16 {
        let s = sim(seed, fixed(), Arc::new(Inline));
        for i in 0..20u32 {
            write(&s, i % 4, &format!("k{i}"), format!("v{i}").as_bytes()).await;
        }
        s.net.set_default_faults(LinkFaults {
            drop_probability: 0.2,
            delay_min: Duration::from_millis(1),
            delay_max: Duration::from_millis(20),
        });
        let mut gets: Vec<_> = (0..20u32)
            .map(|i| send(&s.a, i % 4, get(&format!("k{i}"))))
            .collect();
        let mut answered = 0;
        for (i, rx) in gets.iter_mut().enumerate() {
            let Some(r) = next(rx, Duration::from_secs(1)).await else {
                continue;
            };
            let VnodeReply::Get(Ok(Some(found))) = r.reply else {
                panic!("seed {seed}, get {i}: {:?}", r.reply);
            };
            assert_eq!(values(&found), vec![format!("v{i}").into_bytes()]);
            answered += 1;
        }
        assert!(
            answered > 0 && answered < 20,
            "seed {seed}: {answered} answered"
        );
        drop(gets);
        s.a.sweep();
        assert_eq!(s.a.pending(), 0, "seed {seed}");
    }
}

/// Sends `items` (partition, request) to `b` as one batch; item `i`'s
/// reply comes tagged `i`.
fn send_batch(from: &NetRemote, items: Vec<(u32, VnodeRequest)>) -> UnboundedReceiver<KeyedReply> {
    let (tx, rx) = unbounded_channel();
    let items = items
        .into_iter()
        .enumerate()
        .map(|(i, (p, request))| {
            let item = BatchItem {
                partition: Partition(p),
                request,
            };
            let reply = ReplyTo::Keyed {
                tx: tx.clone(),
                key: i as u32,
            };
            (item, reply)
        })
        .collect();
    from.send_batch(&node("b"), items);
    rx
}

/// The replies of a batch of `n` items, by item.
async fn batch_replies(rx: &mut UnboundedReceiver<KeyedReply>, n: usize) -> Vec<VnodeReply> {
    let mut got: Vec<Option<VnodeReply>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let keyed = tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("a reply before the deadline")
            .expect("the channel open");
        let slot = &mut got[keyed.key as usize];
        assert!(slot.is_none(), "item {} answered twice", keyed.key);
        *slot = Some(keyed.reply.reply);
    }
    got.into_iter().map(Option::unwrap).collect()
}

/// The vnode messages delivered from `from` to `to` so far.
fn messages(s: &Sim, from: &str, to: &str) -> usize {
    s.net
        .trace()
        .iter()
        .filter(|e| e.from == node(from) && e.to == node(to))
        .filter(|e| e.fate == eddy_net::sim::Fate::Delivered)
        .count()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_batch_is_one_message_each_way_and_each_item_gets_its_own_reply() {
    let s = two_nodes();
    let one = write(&s, 1, "one", b"v1").await;
    write(&s, 2, "two", b"v2").await;
    let (to_b, to_a) = (messages(&s, "a", "b"), messages(&s, "b", "a"));
    let mut rx = send_batch(
        &s.a,
        vec![
            (1, get("one")),
            (2, get("two")),
            (3, get("one")),
            (3, replicate("one", one.clone())),
            (9, get("one")),
        ],
    );
    assert_eq!(s.a.pending(), 1, "one request id for the batch");
    let replies = batch_replies(&mut rx, 5).await;
    assert!(matches!(&replies[0], VnodeReply::Get(Ok(Some(o))) if *o == one));
    assert!(matches!(&replies[1], VnodeReply::Get(Ok(Some(o))) if values(o) == [b"v2".to_vec()]));
    // Items run in order: the get of partition 3 before its write.
    assert!(matches!(&replies[2], VnodeReply::Get(Ok(None))));
    assert!(matches!(&replies[3], VnodeReply::Put(Ok(_))));
    assert!(matches!(
        &replies[4],
        VnodeReply::Get(Err(KvError::Signal(Signal::NotHosted(9))))
    ));
    assert_eq!(read(&s, 3, "one").await, Some(one));
    assert_eq!(messages(&s, "a", "b"), to_b + 2, "the batch and the get");
    assert_eq!(
        messages(&s, "b", "a"),
        to_a + 2,
        "one batch reply, one reply"
    );
    assert_eq!((s.a.pending(), s.b.pending()), (0, 0));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn batch_replies_above_the_frame_limit_are_split_and_an_item_too_large_fails_alone() {
    let config = eddy_net::NetConfig {
        frame_body_bytes_max: 4096,
        ..eddy_net::NetConfig::default()
    };
    let net = SimNetwork::with_config(5, config);
    let a = NetRemote::new(net.add_node(node("a")).unwrap(), fixed());
    let b = NetRemote::new(net.add_node(node("b")).unwrap(), fixed());
    a.install().unwrap();
    b.install().unwrap();
    b.serve(inbound(vnodes(4)), Arc::new(Inline)).unwrap();
    let s = Sim { net, a, b };
    for p in 0..3 {
        write(&s, p, "k", &[b'a' + p as u8; 1500]).await;
    }
    write(&s, 3, "k", &[b'x'; 3000]).await;
    // A second write without context makes two siblings: 6 KB.
    let mut rx = send(&s.a, 3, coordinate("k", &[b'y'; 3000], false));
    reply(&mut rx).await;
    let before = messages(&s, "b", "a");
    let mut rx = send_batch(&s.a, (0..4).map(|p| (p, get("k"))).collect());
    let replies = batch_replies(&mut rx, 4).await;
    for (p, r) in replies[..3].iter().enumerate() {
        let VnodeReply::Get(Ok(Some(o))) = r else {
            panic!("item {p}: {r:?}");
        };
        assert_eq!(values(o), [vec![b'a' + p as u8; 1500]]);
    }
    assert!(
        matches!(&replies[3], VnodeReply::Get(Err(KvError::TooLarge { .. }))),
        "{:?}",
        replies[3]
    );
    assert!(messages(&s, "b", "a") - before >= 3, "split into replies");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(s.a.pending(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_refused_batch_fails_every_item() {
    // Overloaded: every item is answered with the refusal.
    let s = sim(1, fixed(), Arc::new(Full));
    let mut rx = send_batch(&s.a, vec![(0, get("k")), (1, replicate("k", Bytes::new()))]);
    for r in batch_replies(&mut rx, 2).await {
        let (VnodeReply::Get(Err(KvError::Unreachable(why)))
        | VnodeReply::Put(Err(KvError::Unreachable(why)))) = r
        else {
            panic!("{r:?}");
        };
        assert_eq!(why, "b (overloaded)");
    }
    assert_eq!(s.a.pending(), 0);
    // A batch b cannot decode is refused whole.
    let s = two_nodes();
    let raw = s.net.add_node(node("raw")).unwrap();
    let (got_tx, mut got) = unbounded_channel();
    raw.set_handler(Arc::new(move |m: eddy_net::Incoming| {
        let _ = got_tx.send(m.body);
    }))
    .unwrap();
    let item = BatchItem {
        partition: Partition(0),
        request: get("k"),
    };
    let whole = wire::encode_batch(42, &[item.clone(), item]).unwrap();
    raw.send(&node("b"), Lane::Control, whole.slice(..whole.len() - 1))
        .await
        .unwrap();
    let body = tokio::time::timeout(WAIT, got.recv())
        .await
        .unwrap()
        .unwrap();
    let Ok(wire::Message::BatchReply(env)) = wire::decode(&body) else {
        panic!("no batch reply");
    };
    assert_eq!(env.request_id, 42);
    assert!(
        matches!(env.answer, wire::BatchAnswer::Refused(_)),
        "{:?}",
        env.answer
    );
    // A crashed peer: every item fails at once, and the entry goes.
    s.net.crash(&node("b")).unwrap();
    let mut rx = send_batch(&s.a, vec![(0, get("k")), (1, get("k"))]);
    for r in batch_replies(&mut rx, 2).await {
        assert!(
            matches!(r, VnodeReply::Get(Err(KvError::Unreachable(_)))),
            "{r:?}"
        );
    }
    assert_eq!(s.a.pending(), 0);
}
