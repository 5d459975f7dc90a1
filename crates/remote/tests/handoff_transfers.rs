//! Handoff between nodes in one process over a simulated network: hinted
//! handoff drops the fallback, ownership handoff with writes during the
//! fold loses none (and a handed vnode's writes reach the new owner before
//! the ring changes), merges never overwrite newer versions, tombstones stay
//! tombstones, and the transfer limit holds.

mod handoff_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use eddy_remote::handoff::{Completed, Kind, TransferState};
use eddy_ring::Partition;
use handoff_support::*;
use parking_lot::Mutex;

async fn hinted_handoff_moves_everything_and_drops_the_fallback(engine: Engine) {
    let root = tempfile::tempdir().unwrap();
    let (_net, fallback, owner) = pair(7, engine, &root);
    let b = bucket(false);
    let keys = keys(&b, 1500);
    for (i, k) in keys.iter().enumerate() {
        fallback.put(&b, k, format!("v{i}").as_bytes()).await;
    }
    fallback
        .handoffs
        .start(P, Kind::Hinted, owner.name.clone())
        .unwrap();
    until("the fallback is dropped", || {
        fallback.state() == Some(TransferState::Dropped)
    })
    .await;

    for (i, k) in keys.iter().enumerate() {
        assert_eq!(owner.values(&b, k), vec![format!("v{i}").into_bytes()]);
    }
    assert!(fallback.node.partition_backend(P).is_none(), "vnode gone");
    assert_eq!(
        fallback
            .store
            .destroyed
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert!(!fallback.store.has_data_dir(P), "data destroyed");
    assert!(!fallback.handoffs.is_pending(P));
    let status = &fallback.handoffs.transfers()[0];
    assert_eq!(status.objects, keys.len() as u64);
    assert_eq!(status.last_error, None);

    let sent = fallback.handoffs.figures().of(Kind::Hinted);
    let counts = (sent.started.get(), sent.completed.get(), sent.failed.get());
    assert_eq!(counts, (1, 1, 0));
    assert_eq!(sent.objects_sent.get(), keys.len() as u64);
    assert_eq!(sent.bytes_sent.get(), status.bytes);
    assert_eq!(sent.outbound_running.get(), 0, "the transfer is over");
    let other = fallback.handoffs.figures().of(Kind::Ownership);
    assert_eq!(other.started.get(), 0);
    let received = owner.handoffs.figures().of(Kind::Hinted);
    assert_eq!(received.objects_received.get(), keys.len() as u64);
    assert_eq!(received.bytes_received.get(), status.bytes);
    assert_eq!(received.inbound_running.get(), 0, "finished");
    assert_eq!(owner.handoffs.figures().rejected.get(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn hinted_handoff_over_memory() {
    hinted_handoff_moves_everything_and_drops_the_fallback(Engine::Memory).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn hinted_handoff_over_bitcask() {
    hinted_handoff_moves_everything_and_drops_the_fallback(Engine::Bitcask).await;
}

/// Writes to `keys` (updating with the stored context, so each key holds
/// one value) and to new keys, recording the last value of each.
async fn write_some(
    m: &Member,
    b: &eddy_model::BucketRef,
    keys: &[Vec<u8>],
    fresh: &[Vec<u8>],
    round: usize,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) {
    for (i, k) in keys.iter().enumerate().skip(round % 7).step_by(7).take(40) {
        let value = format!("u{round}-{i}").into_bytes();
        let context = m.stored(b, k).map(|o| o.vv);
        m.put_with(b, k, &value, context).await;
        model.insert(k.clone(), value);
    }
    if let Some(k) = fresh.get(round) {
        let value = format!("new{round}").into_bytes();
        m.put(b, k, &value).await;
        model.insert(k.clone(), value);
    }
}

async fn ownership_handoff_with_writes_during_the_fold_loses_none(engine: Engine) {
    let root = tempfile::tempdir().unwrap();
    let (_net, old, new) = pair(7, engine, &root);
    let b = bucket(true);
    let all = keys(&b, 10_300);
    let (keys, fresh) = all.split_at(10_000);
    let mut model = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let value = format!("v{i}").into_bytes();
        old.put(&b, k, &value).await;
        model.insert(k.clone(), value);
    }
    let completed = Arc::new(Mutex::new(Vec::new()));
    let seen = completed.clone();
    old.handoffs
        .on_complete(Arc::new(move |c| seen.lock().push(c)));
    old.handoffs
        .start(P, Kind::Ownership, new.name.clone())
        .unwrap();

    let mut round = 0;
    let mut received = 0;
    while old.state() != Some(TransferState::Handed) {
        if let Some(s) = new.handoffs.inbound().first() {
            assert_eq!((s.partition, &s.from), (P, &old.name));
            received = received.max(s.objects);
        }
        write_some(&old, &b, keys, fresh, round, &mut model).await;
        round += 1;
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    assert!(
        round > 10,
        "writes ran during the transfer ({round} rounds)"
    );
    assert_eq!(
        *completed.lock(),
        vec![Completed {
            partition: P,
            from: old.name.clone(),
            to: new.name.clone(),
        }]
    );
    // Writes go on until the ring changes, and reach the new owner before
    // it (in the handed vnode's rounds); then the old owner is dropped.
    for _ in 0..5 {
        write_some(&old, &b, keys, fresh, round, &mut model).await;
        round += 1;
    }
    until("the new owner has the handed vnode's writes", || {
        model
            .iter()
            .all(|(k, v)| new.values(&b, k) == vec![v.clone()])
    })
    .await;
    assert_eq!(old.state(), Some(TransferState::Handed));
    assert_eq!(
        old.handoffs.drop_handed_off(P),
        Err(eddy_remote::handoff::HandoffError::StillOwner(P.0))
    );
    old.node.set_ring(ring(&old.name, &new.name));
    old.handoffs.drop_handed_off(P).unwrap();
    until("the old owner is dropped", || {
        old.state() == Some(TransferState::Dropped)
    })
    .await;

    for (k, value) in &model {
        assert_eq!(new.values(&b, k), vec![value.clone()], "key {k:?}");
    }
    assert!(old.node.partition_backend(P).is_none());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn ownership_handoff_with_writes_over_memory() {
    ownership_handoff_with_writes_during_the_fold_loses_none(Engine::Memory).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn ownership_handoff_with_writes_over_bitcask() {
    ownership_handoff_with_writes_during_the_fold_loses_none(Engine::Bitcask).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn merges_keep_newer_versions_and_siblings_and_tombstones() {
    let root = tempfile::tempdir().unwrap();
    let (_net, sender, receiver) = pair(7, Engine::Bitcask, &root);
    let b = bucket(true);
    let k = keys(&b, 4);
    let (newer, concurrent, deleted, plain) = (&k[0], &k[1], &k[2], &k[3]);

    // The receiver holds a version that descends the sender's.
    sender.put(&b, newer, b"old").await;
    let old_vv = sender.stored(&b, newer).unwrap().vv;
    receiver.put_with(&b, newer, b"newer", Some(old_vv)).await;
    // Both hold concurrent writes.
    sender.put(&b, concurrent, b"from-sender").await;
    receiver.put(&b, concurrent, b"from-receiver").await;
    // The sender deleted a key the receiver never saw.
    sender.put(&b, deleted, b"doomed").await;
    sender.delete(&b, deleted).await;
    sender.put(&b, plain, b"plain").await;

    sender
        .handoffs
        .start(P, Kind::Ownership, receiver.name.clone())
        .unwrap();
    until("handed", || sender.state() == Some(TransferState::Handed)).await;

    assert_eq!(receiver.values(&b, newer), vec![b"newer".to_vec()]);
    assert_eq!(
        receiver.values(&b, concurrent),
        vec![b"from-receiver".to_vec(), b"from-sender".to_vec()]
    );
    let tomb = receiver
        .stored(&b, deleted)
        .expect("the tombstone was handed off");
    assert!(tomb.is_deleted());
    assert_eq!(tomb, sender.stored(&b, deleted).unwrap());
    assert_eq!(receiver.values(&b, plain), vec![b"plain".to_vec()]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_transfer_limit_holds_and_changes_at_run_time() {
    let root = tempfile::tempdir().unwrap();
    let (_net, mut transports) = network(11, 2);
    let t1 = transports.pop().unwrap();
    let t0 = transports.pop().unwrap();
    let partitions: Vec<Partition> = (0..6).map(Partition).collect();
    // The fallback believes it owns every partition, so it takes writes.
    let all_mine = eddy_ring::Ring::single(RING, name(0)).unwrap();
    let fallback = start(
        name(0),
        t0,
        Engine::Memory,
        root.path().join("n0"),
        all_mine,
        &partitions,
        1000,
    );
    let owner = start(
        name(1),
        t1,
        Engine::Memory,
        root.path().join("n1"),
        ring(&name(1), &name(1)),
        &[],
        2000,
    );
    let b = bucket(false);
    for p in &partitions {
        for k in keys_in(&b, *p, 600) {
            fallback.put(&b, &k, b"x").await;
        }
    }
    assert_eq!(fallback.handoffs.transfer_limit(), 2);
    for p in &partitions {
        fallback
            .handoffs
            .start(*p, Kind::Hinted, owner.name.clone())
            .unwrap();
    }
    let running = || {
        let t = fallback.handoffs.transfers();
        let count = |s: TransferState| t.iter().filter(|t| t.state == s).count();
        (
            count(TransferState::Running) + count(TransferState::Dropping),
            count(TransferState::Dropped),
        )
    };
    until("two transfers are done", || running().1 >= 2).await;
    assert_eq!(fallback.handoffs.outbound_peak(), 2);
    fallback.handoffs.set_transfer_limit(3);
    owner.handoffs.set_transfer_limit(3);
    until("three run", || {
        running().0 == 3 || running().1 == partitions.len()
    })
    .await;
    until("all are done", || running().1 == partitions.len()).await;
    assert_eq!(fallback.handoffs.outbound_peak(), 3);
    let sent = fallback.handoffs.figures().of(Kind::Hinted);
    assert_eq!(sent.started.get(), partitions.len() as u64);
    assert_eq!(sent.completed.get(), partitions.len() as u64);
    assert_eq!(sent.outbound_running.get(), 0);
    for p in &partitions {
        assert!(fallback.node.partition_backend(*p).is_none());
        assert!(owner.node.partition_backend(*p).is_some());
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_receiver_at_its_limit_rejects_a_transfer_and_counts_it() {
    let root = tempfile::tempdir().unwrap();
    let (_net, mut transports) = network(13, 2);
    let t1 = transports.pop().unwrap();
    let t0 = transports.pop().unwrap();
    let partitions: Vec<Partition> = (0..2).map(Partition).collect();
    let all_mine = eddy_ring::Ring::single(RING, name(0)).unwrap();
    let path = |i: usize| root.path().join(format!("n{i}"));
    let fallback = start(
        name(0),
        t0,
        Engine::Memory,
        path(0),
        all_mine,
        &partitions,
        1000,
    );
    let owner_ring = ring(&name(1), &name(1));
    let owner = start(name(1), t1, Engine::Memory, path(1), owner_ring, &[], 2000);
    owner.handoffs.set_transfer_limit(1);
    let b = bucket(false);
    for p in &partitions {
        for k in keys_in(&b, *p, 600) {
            fallback.put(&b, &k, b"x").await;
        }
    }
    for p in &partitions {
        fallback
            .handoffs
            .start(*p, Kind::Hinted, owner.name.clone())
            .unwrap();
    }
    let dropped = || {
        let t = fallback.handoffs.transfers();
        t.iter()
            .filter(|t| t.state == TransferState::Dropped)
            .count()
    };
    until("both are done", || dropped() == partitions.len()).await;
    let figures = owner.handoffs.figures();
    assert!(figures.rejected.get() >= 1, "one waited for the other");
    let received = figures.of(Kind::Hinted).objects_received.get();
    assert_eq!(received, 2 * 600);
    assert_eq!(fallback.handoffs.figures().of(Kind::Hinted).failed.get(), 0);
}

/// A vnode its node's ring still calls a fallback, into which an ownership
/// transfer runs or just finished, is not handed back (and dropped): the
/// sender's ring is ahead of the receiver's, and a drop would lose what the
/// transfer acknowledged. Past the hold, with no ring naming the node, the
/// vnode is a fallback again.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_vnode_an_ownership_transfer_moves_here_is_no_fallback() {
    let root = tempfile::tempdir().unwrap();
    let (_net, mut transports) = network(7, 2);
    let (t1, t0) = (transports.pop().unwrap(), transports.pop().unwrap());
    let lagging = ring(&name(0), &name(0));
    let dir = |i: usize| root.path().join(format!("n{i}"));
    let old = start(
        name(0),
        t0,
        Engine::Memory,
        dir(0),
        lagging.clone(),
        &[P],
        1000,
    );
    let new = start(name(1), t1, Engine::Memory, dir(1), lagging, &[P], 2000);
    let b = bucket(false);
    let keys = keys(&b, 300);
    for k in &keys {
        old.put(&b, k, b"v").await;
    }
    let moving_here = Err(eddy_remote::handoff::HandoffError::MovingHere(P.0));
    let hand_back = || new.handoffs.start(P, Kind::Hinted, old.name.clone());

    old.handoffs
        .start(P, Kind::Ownership, new.name.clone())
        .unwrap();
    until("the transfer runs into the receiver", || {
        !new.handoffs.inbound().is_empty()
    })
    .await;
    assert_eq!(hand_back(), moving_here, "while the transfer runs");
    until("the transfer is handed", || {
        old.state() == Some(TransferState::Handed)
    })
    .await;
    assert_eq!(hand_back(), moving_here, "after it finished");
    for k in &keys {
        assert_eq!(new.values(&b, k), vec![b"v".to_vec()]);
    }

    tokio::time::sleep(eddy_remote::handoff::MOVED_HERE_HOLD).await;
    hand_back().expect("a fallback again once the hold is over");
}
