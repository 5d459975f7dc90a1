//! Requests sent to other nodes that still expect replies, by request id,
//! in the transport's one matcher ([`Waiting`]), which also gives the ids.
//!
//! An entry holds where the request's replies go (the coordinator's
//! channel) and which replies are still due: a get or a replicated put
//! ends with its one reply; a coordinated put with both `Coordinated` and
//! `Put` (in either order, as a network may reorder them), or with a
//! `Put` error that is not a sync failure, which a vnode sends only when
//! it refused before writing. A batch's entry holds each item's `ReplyTo`
//! and ends once every item got its one reply (replies come in one or
//! more batch replies, in any order) or the batch was refused.
//!
//! Invariants: the table never holds more than its limit; an entry leaves
//! with its last expected reply, when its peer is lost, or at a sweep once
//! its coordinator stopped listening (dropped its receiver) or it is
//! older than the age limit. Sweeps run as inserts pass a threshold that
//! doubles with the table, so their cost is amortised.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eddy_net::Waiting;
use eddy_ring::{NodeName, Partition};
use tokio::time::Instant;

use eddy_model::error::KvError;
use eddy_vnode::msg::VnodeReply;
use eddy_vnode::reply::ReplyTo;

/// Entries at which the first automatic sweep runs.
const SWEEP_AT_MIN: usize = 1024;

/// What replies a request still expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Due {
    /// A get's one reply.
    Get,
    /// A replicated put's one reply.
    Put,
    /// A coordinated put's two replies; `true` once seen.
    Coordinated { coordinated: bool, put: bool },
    /// A fold's numbered chunks: how many came, and how many there are
    /// once the last one came (chunks may come in any order).
    Fold { received: u32, total: Option<u32> },
}

/// One request awaiting replies.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) peer: NodeName,
    waiting: Awaiting,
    sent_at: Instant,
}

/// Who waits for an entry's replies.
#[derive(Debug)]
enum Awaiting {
    /// A request to one vnode.
    One(Slot),
    /// A batch: each item's slot, emptied by its reply.
    Batch(Vec<Option<Slot>>),
}

/// Where one request's replies go, and which are still due.
#[derive(Debug)]
pub(super) struct Slot {
    pub(super) partition: Partition,
    pub(super) reply: ReplyTo,
    pub(super) due: Due,
}

impl Slot {
    /// Answers the request with `e`, as the vnode would have.
    pub(super) fn fail(self, e: KvError) {
        let answer = match self.due {
            Due::Get => VnodeReply::Get(Err(e)),
            Due::Put | Due::Coordinated { .. } => VnodeReply::Put(Err(e)),
            Due::Fold { .. } => VnodeReply::Fold(Err(e)),
        };
        self.reply.send(self.partition, answer, Default::default());
    }
}

impl Entry {
    pub(super) fn new(peer: NodeName, partition: Partition, reply: ReplyTo, due: Due) -> Entry {
        let slot = Slot {
            partition,
            reply,
            due,
        };
        Entry {
            peer,
            waiting: Awaiting::One(slot),
            sent_at: Instant::now(),
        }
    }

    /// A batch's entry: one slot per item, in the batch's order.
    pub(super) fn batch(peer: NodeName, slots: Vec<Slot>) -> Entry {
        Entry {
            peer,
            waiting: Awaiting::Batch(slots.into_iter().map(Some).collect()),
            sent_at: Instant::now(),
        }
    }

    /// Answers every request still waiting with `e`, as the vnodes would
    /// have.
    pub(super) fn fail(self, e: KvError) {
        match self.waiting {
            Awaiting::One(slot) => slot.fail(e),
            Awaiting::Batch(slots) => {
                for slot in slots.into_iter().flatten() {
                    slot.fail(super::wire::copy_error(&e));
                }
            }
        }
    }

    /// True once nobody listens for the replies.
    fn abandoned(&self) -> bool {
        match &self.waiting {
            Awaiting::One(slot) => slot.reply.abandoned(),
            Awaiting::Batch(slots) => slots.iter().flatten().all(|s| s.reply.abandoned()),
        }
    }

    /// Notes `reply` to a request to one vnode; true when it was the last
    /// one due (and always for a batch, which takes no such reply).
    fn note(&mut self, reply: &VnodeReply) -> bool {
        let Awaiting::One(slot) = &mut self.waiting else {
            return true;
        };
        match (&mut slot.due, reply) {
            (Due::Get, _) | (Due::Put, _) => true,
            (Due::Fold { received, total }, VnodeReply::Fold(Ok(chunk))) => {
                *received += 1;
                if chunk.last {
                    *total = Some(chunk.seq + 1);
                }
                Some(*received) == *total
            }
            (Due::Fold { .. }, _) => true,
            (Due::Coordinated { coordinated, put }, VnodeReply::Coordinated { .. }) => {
                *coordinated = true;
                *put
            }
            (Due::Coordinated { coordinated, .. }, VnodeReply::Put(Err(e)))
                if !*coordinated && !matches!(e, KvError::SyncFailed(_)) =>
            {
                true
            }
            (Due::Coordinated { coordinated, put }, _) => {
                *put = true;
                *coordinated
            }
        }
    }
}

/// The table was full even after a sweep.
#[derive(Debug)]
pub(super) struct Full(pub(super) Entry);

/// The table of requests awaiting replies.
pub(super) struct Pending {
    waiting: Waiting<Entry>,
    /// Entries at which the next insert sweeps first (changed under the
    /// table's lock).
    sweep_at: AtomicUsize,
    entries_max: usize,
    age_max: Duration,
}

type Entries = HashMap<u64, Entry>;

impl Pending {
    /// A table of at most `entries_max` entries whose first request id is
    /// `first_id`.
    pub(super) fn new(first_id: u64, entries_max: usize, age_max: Duration) -> Pending {
        Pending {
            waiting: Waiting::starting_at(first_id),
            sweep_at: AtomicUsize::new(SWEEP_AT_MIN.min(entries_max)),
            entries_max,
            age_max,
        }
    }

    /// A fresh request id.
    pub(super) fn next_id(&self) -> u64 {
        self.waiting.next_id()
    }

    /// Registers request `id`; sweeps first when the table has grown past
    /// the threshold. Entries swept for age are returned to be answered.
    pub(super) fn insert(&self, id: u64, entry: Entry) -> Result<Vec<Entry>, Full> {
        let (aged, refused) = self.waiting.with(|entries| {
            let mut aged = Vec::new();
            if entries.len() >= self.sweep_at.load(Ordering::Relaxed) {
                aged = self.sweep_locked(entries);
            }
            if entries.len() >= self.entries_max {
                return (aged, Some(entry));
            }
            entries.insert(id, entry);
            (aged, None)
        });
        match refused {
            None => Ok(aged),
            Some(entry) => {
                for e in aged {
                    e.fail(KvError::Timeout);
                }
                Err(Full(entry))
            }
        }
    }

    /// Removes request `id`, if it is still waiting.
    pub(super) fn remove(&self, id: u64) -> Option<Entry> {
        self.waiting.take(id)
    }

    /// Where `reply` to request `id` from `from` goes, if it is expected;
    /// the entry leaves with its last reply.
    pub(super) fn route(&self, id: u64, from: &NodeName, reply: &VnodeReply) -> Option<ReplyTo> {
        self.waiting.with(|entries| {
            let entry = entries.get_mut(&id)?;
            if entry.peer != *from || matches!(entry.waiting, Awaiting::Batch(_)) {
                return None;
            }
            if entry.note(reply) {
                return match entries.remove(&id)?.waiting {
                    Awaiting::One(slot) => Some(slot.reply),
                    Awaiting::Batch(_) => None,
                };
            }
            match &entry.waiting {
                Awaiting::One(slot) => Some(slot.reply.clone()),
                Awaiting::Batch(_) => None,
            }
        })
    }

    /// Where the replies to items `indexes` of batch `id` from `from` go:
    /// each item's slot, once (an item answered already, or not in the
    /// batch, gives `None`). The entry leaves with its last item's reply.
    pub(super) fn route_batch(
        &self,
        id: u64,
        from: &NodeName,
        indexes: impl Iterator<Item = u32>,
    ) -> Vec<Option<Slot>> {
        self.waiting.with(|entries| {
            let Some(entry) = entries.get_mut(&id) else {
                return indexes.map(|_| None).collect();
            };
            let Awaiting::Batch(slots) = &mut entry.waiting else {
                return indexes.map(|_| None).collect();
            };
            if entry.peer != *from {
                return indexes.map(|_| None).collect();
            }
            let taken = indexes
                .map(|i| slots.get_mut(i as usize).and_then(Option::take))
                .collect();
            if slots.iter().all(Option::is_none) {
                entries.remove(&id);
            }
            taken
        })
    }

    /// Removes batch `id` from `from`, if it is still waiting.
    pub(super) fn remove_from(&self, id: u64, from: &NodeName) -> Option<Entry> {
        self.waiting.with(|entries| match entries.get(&id) {
            Some(e) if e.peer == *from => entries.remove(&id),
            _ => None,
        })
    }

    /// Removes and returns every entry waiting on `peer`, in the order
    /// they were sent, so a simulation replays the same.
    pub(super) fn take_peer(&self, peer: &NodeName) -> Vec<Entry> {
        self.waiting.take_where(|e| e.peer == *peer)
    }

    /// Drops abandoned entries and answers those past the age limit with
    /// [`KvError::Timeout`]; returns how many left.
    pub(super) fn sweep(&self) -> usize {
        let (left, aged) = self.waiting.with(|entries| {
            let before = entries.len();
            let aged = self.sweep_locked(entries);
            (before - entries.len(), aged)
        });
        for e in aged {
            e.fail(KvError::Timeout);
        }
        left
    }

    /// Requests awaiting replies.
    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }

    fn sweep_locked(&self, entries: &mut Entries) -> Vec<Entry> {
        let now = Instant::now();
        let age_max = self.age_max;
        let mut aged_ids = Vec::new();
        entries.retain(|id, e| {
            if e.abandoned() {
                return false;
            }
            if now.saturating_duration_since(e.sent_at) > age_max {
                aged_ids.push(*id);
            }
            true
        });
        aged_ids.sort_unstable();
        let aged = aged_ids
            .iter()
            .filter_map(|id| entries.remove(id))
            .collect();
        let sweep_at =
            (entries.len() * 2).clamp(SWEEP_AT_MIN.min(self.entries_max), self.entries_max);
        self.sweep_at.store(sweep_at, Ordering::Relaxed);
        aged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_vnode::msg::PutAck;
    use tokio::sync::mpsc::unbounded_channel;

    fn put_ok() -> VnodeReply {
        VnodeReply::Put(Ok(PutAck { durable: false }))
    }

    fn coordinated() -> VnodeReply {
        VnodeReply::Coordinated {
            encoded: Default::default(),
            siblings: 1,
            delta: None,
        }
    }

    fn entry(
        due: Due,
    ) -> (
        Entry,
        tokio::sync::mpsc::UnboundedReceiver<eddy_vnode::reply::Reply>,
    ) {
        let (tx, rx) = unbounded_channel();
        let e = Entry::new(NodeName("b".into()), Partition(3), ReplyTo::Local(tx), due);
        (e, rx)
    }

    fn coordinate_due() -> Due {
        Due::Coordinated {
            coordinated: false,
            put: false,
        }
    }

    #[test]
    fn a_coordinated_put_ends_with_both_replies_in_either_order() {
        for order in [[coordinated(), put_ok()], [put_ok(), coordinated()]] {
            let (mut e, _rx) = entry(coordinate_due());
            assert!(!e.note(&order[0]));
            assert!(e.note(&order[1]));
        }
    }

    #[test]
    fn a_refusal_ends_a_coordinated_put_but_a_sync_failure_waits_for_its_object() {
        let (mut e, _rx) = entry(coordinate_due());
        assert!(e.note(&VnodeReply::Put(Err(KvError::MatchFound))));
        let (mut e, _rx) = entry(coordinate_due());
        assert!(!e.note(&VnodeReply::Put(Err(KvError::SyncFailed("x".into())))));
        assert!(e.note(&coordinated()));
    }

    #[test]
    fn replies_from_another_node_are_not_routed() {
        let pending = Pending::new(1, 8, Duration::from_secs(60));
        let (e, _rx) = entry(Due::Get);
        pending.insert(1, e).unwrap();
        let get = VnodeReply::Get(Ok(None));
        assert!(pending.route(1, &NodeName("c".into()), &get).is_none());
        assert!(pending.route(1, &NodeName("b".into()), &get).is_some());
        assert_eq!(pending.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_table_sweeps_abandoned_entries_then_refuses() {
        let pending = Pending::new(1, 4, Duration::from_secs(60));
        let mut keep = Vec::new();
        for id in 0..4 {
            let (e, rx) = entry(Due::Get);
            pending.insert(id, e).unwrap();
            keep.push(rx);
        }
        let (e, _rx) = entry(Due::Get);
        assert!(pending.insert(9, e).is_err(), "every listener is alive");
        keep.truncate(1);
        let (e, _rx) = entry(Due::Get);
        pending.insert(9, e).unwrap();
        assert_eq!(pending.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn old_entries_are_answered_with_a_timeout() {
        let pending = Pending::new(1, 8, Duration::from_secs(60));
        let (e, mut rx) = entry(Due::Put);
        pending.insert(1, e).unwrap();
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(pending.sweep(), 0);
        tokio::time::advance(Duration::from_secs(31)).await;
        assert_eq!(pending.sweep(), 1);
        let reply = rx.try_recv().unwrap();
        assert!(matches!(
            reply.reply,
            VnodeReply::Put(Err(KvError::Timeout))
        ));
    }
}
