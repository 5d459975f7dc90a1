//! The simulated network, on a current-thread runtime with paused time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use eddy_net::sim::{Fate, LinkFaults, SimNetwork, TraceEvent, TraceKind};
use eddy_net::{CallError, Incoming, Lane, NetConfig, NodeName, PeerState, SendError, Transport};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

fn name(s: &str) -> NodeName {
    NodeName(format!("{s}@sim"))
}

/// Replies `<node>:<body>`; one-ways go to the returned channel.
fn echo(t: &Transport) -> mpsc::UnboundedReceiver<(NodeName, Lane, Bytes)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let me = t.local().0.clone();
    let handler = move |m: Incoming| match m.responder {
        Some(r) => r
            .reply(format!("{me}:{}", String::from_utf8_lossy(&m.body)).into())
            .unwrap(),
        None => {
            let _ = tx.send((m.from, m.lane, m.body));
        }
    };
    t.set_handler(Arc::new(handler)).unwrap();
    rx
}

fn nodes(net: &SimNetwork, names: &[&str]) -> Vec<Transport> {
    names
        .iter()
        .map(|n| net.add_node(name(n)).unwrap())
        .collect()
}

fn in_ms(ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(ms)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn calls_and_one_ways_reach_every_node() {
    let net = SimNetwork::new(1);
    let all = nodes(&net, &["a", "b", "c"]);
    let mut inboxes: Vec<_> = all.iter().map(echo).collect();
    for from in &all {
        for (to, inbox) in all.iter().zip(&mut inboxes) {
            for lane in [Lane::Control, Lane::Bulk] {
                let reply = from.call(to.local(), lane, "hi".into(), in_ms(100)).await;
                assert_eq!(reply.unwrap(), format!("{}:hi", to.local()));
                from.send(to.local(), lane, "note".into()).await.unwrap();
                assert_eq!(
                    inbox.recv().await.unwrap(),
                    (from.local().clone(), lane, "note".into())
                );
            }
        }
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_drop_rate_gives_timeouts_exactly_where_messages_were_lost() {
    let net = SimNetwork::new(7);
    let all = nodes(&net, &["a", "b"]);
    echo(&all[1]);
    net.set_default_faults(LinkFaults {
        drop_probability: 0.3,
        ..LinkFaults::default()
    });
    let mut outcomes = Vec::new();
    for i in 0..300 {
        let deadline = in_ms(50);
        let result = all[0]
            .call(
                all[1].local(),
                Lane::Control,
                format!("{i}").into(),
                deadline,
            )
            .await;
        if result == Err(CallError::Timeout) {
            assert_eq!(Instant::now(), deadline, "a lost call ends at its deadline");
        }
        outcomes.push(result.is_ok());
    }
    // Model: a call succeeds exactly when its request and its reply were delivered.
    let mut delivered: BTreeMap<u64, usize> = BTreeMap::new();
    for e in net.trace() {
        if let (TraceKind::Request(id) | TraceKind::Reply(id), Fate::Delivered) = (e.kind, e.fate) {
            *delivered.entry(id).or_default() += 1;
        }
    }
    let expected: Vec<bool> = (1..=300).map(|id| delivered.get(&id) == Some(&2)).collect();
    assert_eq!(outcomes, expected);
    let ok = outcomes.iter().filter(|ok| **ok).count();
    assert!(
        (100..260).contains(&ok),
        "{ok} of 300 calls succeeded at a 30% drop rate"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn partitions_block_exactly_the_cut_links() {
    let net = SimNetwork::new(3);
    let all = nodes(&net, &["a", "b", "c", "d"]);
    let mut inboxes: Vec<_> = all.iter().map(echo).collect();
    let side = |i: usize| i < 2;
    net.partition(&[name("a"), name("b")], &[name("c"), name("d")]);
    for (i, from) in all.iter().enumerate() {
        for (j, to) in all.iter().enumerate() {
            let reply = from
                .call(to.local(), Lane::Control, "x".into(), in_ms(100))
                .await;
            assert_eq!(reply.is_ok(), side(i) == side(j), "{i} -> {j}: {reply:?}");
        }
    }
    net.heal();
    net.partition_one_way(&[name("a")], &[name("c")]);
    // a -> c is cut: a's request is lost, and so is the reply to c's request.
    assert_eq!(
        all[0]
            .call(all[2].local(), Lane::Control, "x".into(), in_ms(100))
            .await,
        Err(CallError::Timeout)
    );
    assert_eq!(
        all[2]
            .call(all[0].local(), Lane::Control, "x".into(), in_ms(100))
            .await,
        Err(CallError::Timeout)
    );
    all[2]
        .send(all[0].local(), Lane::Control, "c to a".into())
        .await
        .unwrap();
    assert_eq!(inboxes[0].recv().await.unwrap().2, "c to a");
    all[0]
        .send(all[2].local(), Lane::Control, "a to c".into())
        .await
        .unwrap();
    all[0]
        .send(all[3].local(), Lane::Control, "a to d".into())
        .await
        .unwrap();
    assert_eq!(inboxes[3].recv().await.unwrap().2, "a to d");
    assert!(inboxes[2].try_recv().is_err());
    net.heal();
    assert!(
        all[0]
            .call(all[2].local(), Lane::Control, "x".into(), in_ms(100))
            .await
            .is_ok()
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_crashed_node_is_unreachable_at_once_and_fails_calls_in_flight() {
    let net = SimNetwork::new(5);
    let all = nodes(&net, &["a", "b"]);
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    all[1]
        .set_handler(Arc::new(move |m: Incoming| keep.lock().push(m.responder)))
        .unwrap();
    let mut events = all[0].peer_events();
    let (a, to) = (all[0].clone(), name("b"));
    let waiting =
        tokio::spawn(async move { a.call(&to, Lane::Control, "x".into(), in_ms(1000)).await });
    while held.lock().is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    net.crash(&name("b")).unwrap();
    assert_eq!(waiting.await.unwrap(), Err(CallError::Disconnected));
    assert!(matches!(
        events.recv().await.unwrap().state,
        PeerState::Lost(_)
    ));
    let before = Instant::now();
    let refused = all[0]
        .call(&name("b"), Lane::Control, "x".into(), in_ms(1000))
        .await;
    assert!(
        matches!(refused, Err(CallError::Unreachable(_))),
        "{refused:?}"
    );
    assert_eq!(Instant::now(), before);
    assert!(matches!(
        all[0].try_send(&name("b"), Lane::Bulk, "x".into()),
        Err(SendError::Unreachable(_))
    ));
    // The held responders belong to the crashed incarnation: answering does nothing.
    for r in held.lock().drain(..).flatten() {
        r.reply("late".into()).unwrap();
    }
    net.restore(&name("b")).unwrap();
    let (a, to) = (all[0].clone(), name("b"));
    let after =
        tokio::spawn(async move { a.call(&to, Lane::Control, "y".into(), in_ms(100)).await });
    while held.lock().is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    held.lock()
        .pop()
        .flatten()
        .unwrap()
        .reply("back".into())
        .unwrap();
    assert_eq!(after.await.unwrap().unwrap(), "back");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_disconnected_link_fails_one_way_until_reconnected() {
    let net = SimNetwork::new(6);
    let all = nodes(&net, &["a", "b"]);
    let mut inboxes: Vec<_> = all.iter().map(echo).collect();
    let slow = LinkFaults {
        delay_min: Duration::from_millis(50),
        delay_max: Duration::from_millis(50),
        ..LinkFaults::default()
    };
    net.set_link_faults(&name("a"), &name("b"), slow);
    let mut events = all[0].peer_events();
    all[0]
        .send(&name("b"), Lane::Control, "in flight".into())
        .await
        .unwrap();
    let (a, to) = (all[0].clone(), name("b"));
    let waiting =
        tokio::spawn(async move { a.call(&to, Lane::Control, "x".into(), in_ms(1000)).await });
    tokio::task::yield_now().await;
    net.disconnect(&name("a"), &name("b")).unwrap();
    assert_eq!(waiting.await.unwrap(), Err(CallError::Disconnected));
    for lane in [Lane::Control, Lane::Bulk] {
        let event = events.recv().await.unwrap();
        assert_eq!((&event.peer, event.lane), (&name("b"), lane));
        assert!(matches!(event.state, PeerState::Lost(_)), "{event:?}");
    }
    assert!(matches!(
        all[0].try_send(&name("b"), Lane::Control, "x".into()),
        Err(SendError::Unreachable(_))
    ));
    // The other direction is another connection: it still works.
    all[1]
        .send(&name("a"), Lane::Control, "back".into())
        .await
        .unwrap();
    assert_eq!(inboxes[0].recv().await.unwrap().2, "back");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        inboxes[1].try_recv().is_err(),
        "the message in flight was lost"
    );
    net.reconnect(&name("a"), &name("b")).unwrap();
    let event = events.recv().await.unwrap();
    assert_eq!(event.state, PeerState::Connected);
    let reply = all[0]
        .call(&name("b"), Lane::Control, "y".into(), in_ms(1000))
        .await;
    assert_eq!(reply.unwrap(), "b@sim:y");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_restarted_node_has_a_fresh_transport() {
    let net = SimNetwork::new(9);
    let all = nodes(&net, &["a", "b"]);
    echo(&all[1]);
    let b2 = net.restart(&name("b")).unwrap();
    let before_handler = all[0]
        .call(&name("b"), Lane::Control, "x".into(), in_ms(100))
        .await;
    assert!(
        matches!(before_handler, Err(CallError::NoReply(_))),
        "{before_handler:?}"
    );
    echo(&b2);
    assert_eq!(
        all[0]
            .call(&name("b"), Lane::Control, "x".into(), in_ms(100))
            .await
            .unwrap(),
        "b@sim:x"
    );
    let old = all[1].send(&name("a"), Lane::Control, "x".into()).await;
    assert_eq!(old, Err(SendError::Shutdown));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_delay_range_reorders_and_a_fixed_delay_keeps_order() {
    for (faults, reorders) in [
        (LinkFaults::default(), false),
        (
            LinkFaults {
                drop_probability: 0.0,
                delay_min: Duration::from_millis(1),
                delay_max: Duration::from_millis(20),
            },
            true,
        ),
    ] {
        let net = SimNetwork::new(11);
        let all = nodes(&net, &["a", "b"]);
        let mut inbox = echo(&all[1]);
        net.set_link_faults(&name("a"), &name("b"), faults);
        for i in 0..50u8 {
            all[0]
                .send(&name("b"), Lane::Control, vec![i].into())
                .await
                .unwrap();
        }
        let mut order = Vec::new();
        for _ in 0..50 {
            order.push(inbox.recv().await.unwrap().2[0]);
        }
        assert_eq!(order.windows(2).any(|w| w[0] > w[1]), reorders, "{order:?}");
        order.sort_unstable();
        assert_eq!(order, (0..50).collect::<Vec<_>>());
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn oversized_messages_are_refused() {
    let config = NetConfig {
        frame_body_bytes_max: 16,
        ..NetConfig::default()
    };
    let net = SimNetwork::with_config(1, config);
    let all = nodes(&net, &["a", "b"]);
    all[1]
        .set_handler(Arc::new(|m: Incoming| {
            let _ = m.responder.unwrap().reply(vec![0; 17].into());
        }))
        .unwrap();
    let big = Bytes::from(vec![0; 17]);
    assert!(matches!(
        all[0]
            .call(&name("b"), Lane::Control, big.clone(), in_ms(10))
            .await,
        Err(CallError::TooLarge(_))
    ));
    assert!(matches!(
        all[0].try_send(&name("b"), Lane::Control, big),
        Err(SendError::TooLarge { .. })
    ));
    assert!(matches!(
        all[0]
            .call(&name("b"), Lane::Control, "ok".into(), in_ms(10))
            .await,
        Err(CallError::TooLarge(_))
    ));
}

/// A busy scenario: several nodes calling each other concurrently through
/// drops, delay ranges, a partition and a crash; returns the trace.
async fn scenario(seed: u64) -> Vec<TraceEvent> {
    let net = SimNetwork::new(seed);
    let names = ["a", "b", "c", "d"];
    let all = nodes(&net, &names);
    for t in &all {
        echo(t);
    }
    net.set_default_faults(LinkFaults {
        drop_probability: 0.1,
        delay_min: Duration::from_millis(1),
        delay_max: Duration::from_millis(30),
    });
    let mut tasks = tokio::task::JoinSet::new();
    for (i, t) in all.iter().enumerate() {
        let t = t.clone();
        tasks.spawn(async move {
            for round in 0..40usize {
                let to = name(names[(i + round) % names.len()]);
                let _ = t
                    .call(&to, Lane::Control, format!("{round}").into(), in_ms(50))
                    .await;
                let _ = t.send(&to, Lane::Bulk, "bulk".into()).await;
            }
        });
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    net.partition(&[name("a")], &[name("b"), name("c")]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    net.crash(&name("d")).unwrap();
    net.heal();
    tokio::time::sleep(Duration::from_millis(300)).await;
    net.restore(&name("d")).unwrap();
    while tasks.join_next().await.is_some() {}
    net.trace()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_same_seed_gives_the_same_trace_and_another_seed_does_not() {
    let first = scenario(42).await;
    let again = scenario(42).await;
    let other = scenario(43).await;
    assert!(first.len() > 500, "{} events", first.len());
    for fate in [Fate::Dropped, Fate::Cut, Fate::Lost, Fate::Delivered] {
        assert!(
            first.iter().any(|e| e.fate == fate),
            "no {fate:?} in the trace"
        );
    }
    assert_eq!(first, again);
    assert_ne!(first, other);
}
