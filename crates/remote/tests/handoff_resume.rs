//! Interrupted transfers resume from the receiver's checkpoint: after the
//! link is cut, after the receiver restarts, and after the sender restarts
//! (having lost its record of the writes made meanwhile). What the
//! receiver acknowledged is not sent again: the tests count the batches
//! the simulated network delivered.

mod handoff_support;

use std::time::Duration;

use eddy_net::Lane;
use eddy_net::sim::{Fate, SimNetwork, TraceKind};
use eddy_remote::handoff::{Kind, TransferState, TransferStatus};
use handoff_support::*;

const KEYS: usize = 3000;
/// Batches of 100 objects (the support's config).
const BATCHES: u64 = 30;

/// Batch-sized requests the receiver got from the sender.
fn batches_delivered(net: &SimNetwork) -> usize {
    net.trace()
        .iter()
        .filter(|e| {
            e.lane == Lane::Bulk
                && e.from == name(0)
                && matches!(e.kind, TraceKind::Request(_))
                && e.fate == Fate::Delivered
                && e.len > 2000
        })
        .count()
}

fn status(m: &Member) -> TransferStatus {
    m.handoffs.transfers().into_iter().next().unwrap()
}

/// A sender owning P with `KEYS` objects and a receiver without P.
async fn loaded(engine: Engine, root: &tempfile::TempDir) -> (SimNetwork, Member, Member) {
    let (net, sender, receiver) = pair(5, engine, root);
    let b = bucket(true);
    for (i, k) in keys(&b, KEYS).iter().enumerate() {
        sender.put(&b, k, format!("v{i}").as_bytes()).await;
    }
    (net, sender, receiver)
}

fn check_all_there(receiver: &Member, changed: usize) {
    let b = bucket(true);
    for (i, k) in keys(&b, KEYS).iter().enumerate() {
        let want = match i < changed {
            true => format!("changed{i}"),
            false => format!("v{i}"),
        };
        assert_eq!(receiver.values(&b, k), vec![want.into_bytes()], "key {i}");
    }
}

async fn until_acked(m: &Member, n: u64) {
    until("batches are acknowledged", || status(m).batches_acked >= n).await;
}

/// Starts handing P from `sender` to `receiver` and waits until ten
/// batches are acknowledged.
async fn hand_ten_batches(sender: &Member, receiver: &Member) {
    sender
        .handoffs
        .start(P, Kind::Ownership, receiver.name.clone())
        .unwrap();
    until_acked(sender, 10).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_cut_link_resumes_from_the_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let (net, sender, receiver) = loaded(Engine::Memory, &root).await;
    hand_ten_batches(&sender, &receiver).await;
    net.partition(&[name(0)], &[name(1)]);
    tokio::time::sleep(Duration::from_secs(12)).await;
    let stalled = status(&sender);
    assert!(
        stalled.batches_acked < BATCHES,
        "the cut stopped the transfer"
    );
    assert!(stalled.last_error.is_some());
    net.heal();
    until("handed", || sender.state() == Some(TransferState::Handed)).await;

    check_all_there(&receiver, 0);
    let done = status(&sender);
    assert!(done.resumes >= 1);
    assert!(done.batches_acked <= BATCHES);
    let figures = sender.handoffs.figures().of(Kind::Ownership);
    assert!(figures.failed.get() >= 1, "the cut failed an attempt");
    assert!(
        figures.resumed.get() >= 1,
        "the next went on from the checkpoint"
    );
    assert_eq!(figures.completed.get(), 1);
    assert_eq!(
        batches_delivered(&net),
        BATCHES as usize,
        "no batch arrived twice"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_restarted_receiver_resumes_from_its_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let (net, sender, receiver) = loaded(Engine::Bitcask, &root).await;
    hand_ten_batches(&sender, &receiver).await;
    let store = receiver.stop();
    let transport = net.restart(&name(1)).unwrap();
    let receiver = start_with_store(name(1), transport, store, ring(&name(0), &name(1)), &[P]);
    until("handed", || sender.state() == Some(TransferState::Handed)).await;

    check_all_there(&receiver, 0);
    assert!(status(&sender).resumes >= 1);
    // At most the batch in flight at the restart arrived twice.
    let delivered = batches_delivered(&net);
    assert!(
        (BATCHES as usize..=BATCHES as usize + 1).contains(&delivered),
        "{delivered} batches delivered"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_restarted_sender_resumes_and_catches_up_on_lost_writes() {
    let root = tempfile::tempdir().unwrap();
    let (net, sender, receiver) = loaded(Engine::Bitcask, &root).await;
    hand_ten_batches(&sender, &receiver).await;
    // Keys sent in the first batches change; the sender's record of that
    // dies with it.
    let b = bucket(true);
    let changed = 5;
    for (i, k) in keys(&b, changed).iter().enumerate() {
        let context = sender.stored(&b, k).map(|o| o.vv);
        sender
            .put_with(&b, k, format!("changed{i}").as_bytes(), context)
            .await;
    }
    let acked_before = status(&sender).batches_acked;
    let store = sender.stop();
    let transport = net.restart(&name(0)).unwrap();
    let sender = start_with_store(name(0), transport, store, ring(&name(0), &name(0)), &[P]);
    sender
        .handoffs
        .start(P, Kind::Ownership, receiver.name.clone())
        .unwrap();
    until("handed", || sender.state() == Some(TransferState::Handed)).await;

    check_all_there(&receiver, changed);
    let after = status(&sender);
    let rest = KEYS as u64 - 100 * acked_before;
    assert!(
        after.objects <= rest + changed as u64,
        "{} objects sent after the restart, {rest} were left",
        after.objects
    );
}
