//! The TCP transport between real sockets on loopback.

mod peer;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eddy_net::handshake::Versions;
use eddy_net::{CallError, Incoming, Lane, NetConfig, NodeName, PeerState, SendError, Transport};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

fn name(s: &str) -> NodeName {
    NodeName(format!("{s}@127.0.0.1"))
}

async fn start(n: &str, config: NetConfig) -> Transport {
    let addr = "127.0.0.1:0".parse().unwrap();
    Transport::tcp(name(n), addr, config).await.unwrap()
}

fn introduce(nodes: &[&Transport]) {
    for a in nodes {
        for b in nodes {
            a.set_peer_address(b.local().clone(), b.listen_addr().unwrap());
        }
    }
}

/// Replies to calls with `<node>:<body>`; one-ways go to the returned channel.
fn echo(t: &Transport) -> mpsc::UnboundedReceiver<(NodeName, Lane, Bytes)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let me = t.local().0.clone();
    let handler = move |m: Incoming| match m.responder {
        Some(r) => {
            let mut out = format!("{me}:").into_bytes();
            out.extend_from_slice(&m.body);
            r.reply(out.into()).unwrap();
        }
        None => {
            let _ = tx.send((m.from, m.lane, m.body));
        }
    };
    t.set_handler(Arc::new(handler)).unwrap();
    rx
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

#[tokio::test]
async fn calls_and_one_ways_between_three_nodes() {
    let nodes = [
        start("a", NetConfig::default()).await,
        start("b", NetConfig::default()).await,
        start("c", NetConfig::default()).await,
    ];
    introduce(&nodes.iter().collect::<Vec<_>>());
    let mut inboxes: Vec<_> = nodes.iter().map(echo).collect();
    for from in &nodes {
        for (to, inbox) in nodes.iter().zip(&mut inboxes) {
            for lane in [Lane::Control, Lane::Bulk] {
                let body = Bytes::from(format!("hi from {}", from.local()));
                let reply = from
                    .call(to.local(), lane, body.clone(), soon())
                    .await
                    .unwrap();
                assert_eq!(reply, format!("{}:hi from {}", to.local(), from.local()));
                from.send(to.local(), lane, body.clone()).await.unwrap();
                assert_eq!(
                    inbox.recv().await.unwrap(),
                    (from.local().clone(), lane, body)
                );
            }
        }
    }
}

#[tokio::test]
async fn a_bound_transport_refuses_peers_until_it_listens() {
    let addr = "127.0.0.1:0".parse().unwrap();
    let (late, listener) = Transport::tcp_bound(name("late"), addr, NetConfig::default()).unwrap();
    let _inbox = echo(&late);
    let early = start("early", NetConfig::default()).await;
    introduce(&[&early, &late]);
    let refused = early
        .call(
            late.local(),
            Lane::Control,
            Bytes::from_static(b"hi"),
            soon(),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(CallError::Unreachable(_) | CallError::Refused(_))
        ),
        "{refused:?}"
    );
    // It may send before it listens: its links are its own connects.
    let _from_early = echo(&early);
    let reply = late
        .call(
            early.local(),
            Lane::Control,
            Bytes::from_static(b"out"),
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(reply, format!("{}:out", early.local()));
    // Its connect to `early` ended the backoff of `early`'s link to it.
    listener.listen().unwrap();
    let reply = early
        .call(
            late.local(),
            Lane::Control,
            Bytes::from_static(b"hi"),
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(reply, format!("{}:hi", late.local()));
}

#[tokio::test]
async fn many_concurrent_calls_are_matched_to_their_replies() {
    let a = start("a", NetConfig::default()).await;
    let b = start("b", NetConfig::default()).await;
    introduce(&[&a, &b]);
    // Answers out of order: each reply waits a delay that depends on the body.
    b.set_handler(Arc::new(|m: Incoming| {
        let r = m.responder.unwrap();
        tokio::spawn(async move {
            let n = u64::from(m.body[0] % 7);
            tokio::time::sleep(Duration::from_millis(n)).await;
            let reversed: Vec<u8> = m.body.iter().rev().copied().collect();
            r.reply(reversed.into()).unwrap();
        });
    }))
    .unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..2000u32 {
        let a = a.clone();
        let to = b.local().clone();
        calls.spawn(async move {
            let body = Bytes::from(format!("{i}-request"));
            let reply = a
                .call(&to, Lane::Control, body.clone(), soon())
                .await
                .unwrap();
            let expected: Vec<u8> = body.iter().rev().copied().collect();
            assert_eq!(reply, expected);
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }
}

#[tokio::test]
async fn a_reply_can_come_later_from_another_thread_and_a_dropped_request_fails() {
    let a = start("a", NetConfig::default()).await;
    let b = start("b", NetConfig::default()).await;
    introduce(&[&a, &b]);
    b.set_handler(Arc::new(|m: Incoming| {
        let r = m.responder.unwrap();
        if m.body == "drop" {
            return;
        }
        std::thread::spawn(move || r.reply(Bytes::from_static(b"from a thread")).unwrap());
    }))
    .unwrap();
    let reply = a.call(b.local(), Lane::Control, "x".into(), soon()).await;
    assert_eq!(reply.unwrap(), "from a thread");
    let dropped = a
        .call(b.local(), Lane::Control, "drop".into(), soon())
        .await;
    assert!(matches!(dropped, Err(CallError::NoReply(_))), "{dropped:?}");
}

#[tokio::test]
async fn calls_to_self_reach_the_handler_without_a_socket() {
    let a = start("a", NetConfig::default()).await;
    let mut inbox = echo(&a);
    let reply = a.call(a.local(), Lane::Control, "me".into(), soon()).await;
    assert_eq!(reply.unwrap(), "a@127.0.0.1:me");
    a.try_send(a.local(), Lane::Bulk, "note".into()).unwrap();
    assert_eq!(inbox.recv().await.unwrap().2, "note");
}

#[tokio::test]
async fn a_peer_killed_mid_call_gives_disconnected_then_unreachable() {
    let a = start("a", NetConfig::default()).await;
    let b = start("b", NetConfig::default()).await;
    introduce(&[&a, &b]);
    let held = Arc::new(Mutex::new(Vec::new()));
    let (arrived_tx, mut arrived) = mpsc::unbounded_channel();
    let keep = held.clone();
    b.set_handler(Arc::new(move |m: Incoming| {
        keep.lock().push(m.responder);
        let _ = arrived_tx.send(());
    }))
    .unwrap();
    let mut events = a.peer_events();
    let caller = a.clone();
    let to = b.local().clone();
    let call =
        tokio::spawn(async move { caller.call(&to, Lane::Control, "wait".into(), soon()).await });
    arrived.recv().await.unwrap();
    assert_eq!(events.recv().await.unwrap().state, PeerState::Connected);
    b.shutdown();
    assert_eq!(call.await.unwrap(), Err(CallError::Disconnected));
    assert!(matches!(
        events.recv().await.unwrap().state,
        PeerState::Lost(_)
    ));
    // The port is closed now: the next call is refused at connect.
    let next = a
        .call(b.local(), Lane::Control, "again".into(), soon())
        .await;
    assert!(matches!(next, Err(CallError::Unreachable(_))), "{next:?}");
    assert!(matches!(
        events.recv().await.unwrap().state,
        PeerState::Unreachable(_)
    ));
}

#[tokio::test]
async fn a_link_reconnects_after_the_peer_returns() {
    let a = start("a", NetConfig::default()).await;
    let b = start("b", NetConfig::default()).await;
    introduce(&[&a, &b]);
    echo(&b);
    a.call(b.local(), Lane::Control, "1".into(), soon())
        .await
        .unwrap();
    let addr = b.listen_addr().unwrap();
    b.shutdown();
    assert!(
        a.call(b.local(), Lane::Control, "2".into(), soon())
            .await
            .is_err()
    );
    // A new process of the same node on the same port.
    let b2 = loop {
        match Transport::tcp(name("b"), addr, NetConfig::default()).await {
            Ok(t) => break t,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    echo(&b2);
    let reply = timeout(Duration::from_secs(10), async {
        loop {
            match a.call(b2.local(), Lane::Control, "3".into(), soon()).await {
                Ok(reply) => break reply,
                Err(CallError::Unreachable(_) | CallError::Disconnected) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(reply, "b@127.0.0.1:3");
}

#[tokio::test]
async fn handshakes_refuse_other_versions_clusters_and_names() {
    let a = start("a", NetConfig::default()).await;
    let newer = NetConfig {
        protocol_versions: Versions { min: 2, max: 3 },
        ..NetConfig::default()
    };
    let other_cluster = NetConfig {
        cluster_name: "other".into(),
        ..NetConfig::default()
    };
    let b = start("b", newer).await;
    let c = start("c", other_cluster).await;
    let d = start("d", NetConfig::default()).await;
    for t in [&b, &c, &d] {
        echo(t);
    }
    introduce(&[&a, &b, &c]);
    // The address book sends calls for "e" to d.
    a.set_peer_address(name("e"), d.listen_addr().unwrap());
    let cases = [
        (b.local().clone(), "no common protocol version"),
        (c.local().clone(), "cluster name"),
        (name("e"), "this is node d@127.0.0.1, not e@127.0.0.1"),
    ];
    for (to, words) in cases {
        match a.call(&to, Lane::Control, "x".into(), soon()).await {
            Err(CallError::Refused(reason)) => assert!(reason.contains(words), "{reason}"),
            other => panic!("{to}: {other:?}"),
        }
        // Refused links stay down for the backoff: sends fail at once too.
        assert!(matches!(
            a.try_send(&to, Lane::Control, "y".into()),
            Err(SendError::Refused(_))
        ));
    }
    let both = NetConfig {
        protocol_versions: Versions { min: 1, max: 2 },
        ..NetConfig::default()
    };
    let f = start("f", both).await;
    introduce(&[&b, &f]);
    echo(&f);
    assert_eq!(
        b.call(f.local(), Lane::Control, "v".into(), soon())
            .await
            .unwrap(),
        "f@127.0.0.1:v"
    );
}

#[tokio::test]
async fn oversized_messages_are_refused_on_both_sides() {
    let config = NetConfig {
        frame_body_bytes_max: 1024,
        ..NetConfig::default()
    };
    let a = start("a", config.clone()).await;
    let b = start("b", config).await;
    introduce(&[&a, &b]);
    b.set_handler(Arc::new(|m: Incoming| {
        let n = usize::from(m.body[0]) * 16;
        let _ = m.responder.unwrap().reply(vec![7; n].into());
    }))
    .unwrap();
    let big = Bytes::from(vec![0; 1025]);
    assert!(matches!(
        a.call(b.local(), Lane::Control, big.clone(), soon()).await,
        Err(CallError::TooLarge(_))
    ));
    assert!(matches!(
        a.try_send(b.local(), Lane::Control, big),
        Err(SendError::TooLarge {
            size: 1025,
            max: 1024
        })
    ));
    let fits = a
        .call(b.local(), Lane::Control, vec![64].into(), soon())
        .await;
    assert_eq!(fits.unwrap().len(), 1024);
    let too_big = a
        .call(b.local(), Lane::Control, vec![65].into(), soon())
        .await;
    assert!(
        matches!(too_big, Err(CallError::TooLarge(_))),
        "{too_big:?}"
    );
}

#[tokio::test]
async fn bad_input_from_a_peer_closes_only_its_connection() {
    let b = start("b", NetConfig::default()).await;
    echo(&b);
    let addr = b.listen_addr().unwrap();
    for (input, half_close) in peer::bad_inputs(b.local()) {
        let closed = peer::is_closed_after(addr, &input, half_close).await;
        assert!(closed, "{input:?} left the connection open");
    }
    let a = start("a", NetConfig::default()).await;
    introduce(&[&a, &b]);
    assert_eq!(
        a.call(b.local(), Lane::Control, "ok".into(), soon())
            .await
            .unwrap(),
        "b@127.0.0.1:ok"
    );
}

#[tokio::test]
async fn bad_answers_from_a_listener_fail_the_call_as_disconnected() {
    let a = start("a", NetConfig::default()).await;
    for (answer, half_close) in peer::bad_answers() {
        let fake = peer::Silent::answering(answer.clone(), half_close).await;
        a.set_peer_address(fake.name.clone(), fake.addr);
        let reply = a.call(&fake.name, Lane::Control, "x".into(), soon()).await;
        assert_eq!(reply, Err(CallError::Disconnected), "{answer:?}");
    }
}

#[tokio::test]
async fn a_peer_that_stops_reading_gives_overloaded_and_timeouts() {
    let config = NetConfig {
        control_queue_frames: 4,
        ..NetConfig::default()
    };
    let a = start("a", config).await;
    let silent = peer::Silent::start().await;
    a.set_peer_address(silent.name.clone(), silent.addr);
    let body = Bytes::from(vec![1; 64 << 10]);
    // Fill the socket buffers and then the queue, until the queue stays
    // full while the writer has time to drain it.
    let mut tries = 0;
    loop {
        tries += 1;
        assert!(tries < 100_000, "the queue never stayed full");
        if a.try_send(&silent.name, Lane::Control, body.clone()) != Err(SendError::Overloaded) {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        if a.try_send(&silent.name, Lane::Control, body.clone()) == Err(SendError::Overloaded) {
            break;
        }
    }
    let waits = timeout(
        Duration::from_millis(100),
        a.send(&silent.name, Lane::Control, body.clone()),
    );
    assert!(waits.await.is_err(), "a send into a full queue returned");
    let deadline = Instant::now() + Duration::from_millis(100);
    assert_eq!(
        a.call(&silent.name, Lane::Control, "x".into(), deadline)
            .await,
        Err(CallError::Timeout)
    );
}

#[tokio::test]
async fn bulk_transfers_never_delay_control_calls() {
    let config = NetConfig {
        bulk_queue_frames: 2,
        ..NetConfig::default()
    };
    let a = start("a", config.clone()).await;
    let b = start("b", config).await;
    introduce(&[&a, &b]);
    // b holds bulk requests unanswered, so after two its bulk reader stops.
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    b.set_handler(Arc::new(move |m: Incoming| match m.lane {
        Lane::Bulk => keep.lock().push(m.responder),
        Lane::Control => m.responder.unwrap().reply(m.body).unwrap(),
    }))
    .unwrap();
    let batch = Bytes::from(vec![2; 256 << 10]);
    let mut bulk = tokio::task::JoinSet::new();
    for _ in 0..64 {
        let (a, to, batch) = (a.clone(), b.local().clone(), batch.clone());
        let deadline = Instant::now() + Duration::from_secs(60);
        bulk.spawn(async move { a.call(&to, Lane::Bulk, batch, deadline).await });
    }
    // Wait until the bulk lane is full: a try_send there is refused.
    timeout(Duration::from_secs(10), async {
        while a.try_send(b.local(), Lane::Bulk, "probe".into()) != Err(SendError::Overloaded) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    for i in 0..100u32 {
        let body = Bytes::from(i.to_string());
        assert_eq!(
            a.call(b.local(), Lane::Control, body.clone(), soon())
                .await
                .unwrap(),
            body
        );
    }
    // Answering the held batches lets the bulk lane drain.
    let answer = |held: &Mutex<Vec<Option<eddy_net::Responder>>>| {
        for r in held.lock().drain(..).flatten() {
            r.reply("done".into()).unwrap();
        }
    };
    while !bulk.is_empty() {
        answer(&held);
        if let Ok(Some(done)) = timeout(Duration::from_millis(20), bulk.join_next()).await {
            assert_eq!(done.unwrap().unwrap(), "done");
        }
    }
}

#[tokio::test]
async fn a_new_address_is_tried_at_once_after_failed_connects() {
    let config = NetConfig {
        reconnect_backoff_min: Duration::from_secs(3600),
        reconnect_backoff_max: Duration::from_secs(3600),
        ..NetConfig::default()
    };
    let a = start("a", config).await;
    let b = start("b", NetConfig::default()).await;
    echo(&b);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    a.set_peer_address(b.local().clone(), dead_addr);
    let first = a.call(b.local(), Lane::Control, "x".into(), soon()).await;
    assert!(matches!(first, Err(CallError::Unreachable(_))), "{first:?}");
    let during_backoff = a.call(b.local(), Lane::Control, "x".into(), soon()).await;
    assert!(
        matches!(during_backoff, Err(CallError::Unreachable(_))),
        "{during_backoff:?}"
    );
    a.set_peer_address(b.local().clone(), b.listen_addr().unwrap());
    assert_eq!(
        a.call(b.local(), Lane::Control, "y".into(), soon())
            .await
            .unwrap(),
        "b@127.0.0.1:y"
    );
}
