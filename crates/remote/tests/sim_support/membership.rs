//! Membership changes in the simulation: the test plays the claimant. A
//! join or a leave computes the next owners with claim and installs a ring
//! whose transfers are pending; every process then starts the transfers
//! it has to make, as the cluster layer does (ownership to the next owner,
//! hinted back to an owner that is up, dropping a vnode once the ring
//! moved its partition), and each finished ownership transfer moves its
//! partition in the ring, which every running process gets at once.
//!
//! Invariant: one membership change at a time (a change starts on a
//! settled ring), so no transfer is ever redirected while it runs.

use std::time::Duration;

use eddy_kv::{Liveness, Node};
use eddy_remote::handoff::{Kind, TransferState};
use eddy_ring::{ClaimParams, NodeName, Partition, Ring, claim};

use super::member::Member;
use super::{SimCluster, View};

/// How long the cluster may take to settle after the workload.
const SETTLE_DEADLINE: Duration = Duration::from_secs(600);

impl SimCluster {
    /// The cluster's ring now.
    pub fn ring(&self) -> Ring {
        self.ring.borrow().clone()
    }

    /// A new node joins: it starts on an empty disk and the ring plans the
    /// transfers claim calls for. Returns its index.
    pub fn join(&self) -> usize {
        assert!(self.ring().is_settled(), "one membership change at a time");
        let i = self.add_node();
        let ring = self.ring();
        let mut members: Vec<NodeName> = ring.members().into_iter().cloned().collect();
        members.push(super::name(i));
        self.plan(&ring, &members);
        i
    }

    /// Node `i` leaves: the ring plans moving all it owns to the others.
    pub fn leave(&self, i: usize) {
        let ring = self.ring();
        assert!(ring.is_settled(), "one membership change at a time");
        let leaving = super::name(i);
        let members: Vec<NodeName> = ring
            .members()
            .into_iter()
            .filter(|m| **m != leaving)
            .cloned()
            .collect();
        self.plan(&ring, &members);
    }

    fn plan(&self, ring: &Ring, members: &[NodeName]) {
        let target = claim(ring, members, &ClaimParams::default())
            .unwrap()
            .owners;
        self.install(ring.with_target(&target).unwrap());
    }

    /// Nodes a client may send requests to: those the ring names now or
    /// after its transfers.
    pub fn serving(&self) -> Vec<usize> {
        let ring = self.ring();
        let future = ring.future();
        (0..self.size())
            .filter(|i| {
                let me = super::name(*i);
                ring.members().contains(&&me) || future.members().contains(&&me)
            })
            .collect()
    }

    /// Gives every running process `ring`, with vnodes for the partitions
    /// it owns now or will own.
    fn install(&self, ring: Ring) {
        *self.ring.borrow_mut() = ring.clone();
        for slot in self.slots.borrow().iter() {
            if let Some(member) = &slot.member {
                adopt(&member.node, &ring);
            }
        }
    }

    /// One round of the claimant and of every process's handoff decisions.
    pub fn drive_handoffs(&self) {
        self.apply_completed();
        let ring = self.ring();
        for slot in self.slots.borrow().iter() {
            if let Some(member) = &slot.member {
                decide(member, &ring, &slot.view);
            }
        }
    }

    /// Moves in the ring each partition whose ownership transfer finished.
    fn apply_completed(&self) {
        let done = std::mem::take(&mut *self.completed.lock());
        let mut ring = self.ring();
        let mut moved = false;
        for c in done {
            let p = c.partition;
            if *ring.owner(p) == c.from && ring.next_owner(p) == Some(&c.to) {
                ring = ring.with_transfer_done(p).unwrap();
                moved = true;
            }
        }
        if moved {
            self.install(ring);
        }
    }

    /// True once the ring has no pending transfer and every running
    /// process runs vnodes only for the partitions it owns.
    pub fn is_settled(&self) -> bool {
        let ring = self.ring();
        ring.is_settled()
            && self.slots.borrow().iter().all(|slot| {
                slot.member.as_ref().is_none_or(|m| {
                    let owned = ring.owned_by(&slot.name);
                    m.node.local_partitions().iter().all(|p| owned.contains(p))
                })
            })
    }

    /// True when every running process has the cluster's ring.
    pub fn rings_agree(&self) -> bool {
        let ring = self.ring();
        let slots = self.slots.borrow();
        let mut running = slots.iter().filter_map(|s| s.member.as_ref());
        running.all(|m| *m.node.ring().ring() == ring)
    }

    /// Drives handoffs until the cluster settled; panics (naming `seed`)
    /// past a long deadline of virtual time.
    pub async fn until_settled(&self, seed: u64) {
        let deadline = tokio::time::Instant::now() + SETTLE_DEADLINE;
        while !self.is_settled() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "seed {seed}: the cluster did not settle: ring {:?}, vnodes {:?}",
                self.ring(),
                self.vnodes()
            );
            self.drive_handoffs();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Every running process's vnodes (for failure messages).
    fn vnodes(&self) -> Vec<(NodeName, Vec<Partition>)> {
        let slots = self.slots.borrow();
        let running = slots.iter().filter_map(|s| Some((s, s.member.as_ref()?)));
        running
            .map(|(s, m)| (s.name.clone(), m.node.local_partitions()))
            .collect()
    }
}

/// Gives `node` the ring and starts vnodes for the partitions it owns or
/// will own once their transfers finish.
fn adopt(node: &Node, ring: &Ring) {
    node.set_ring(ring.clone());
    let me = &node.config().node_name;
    let wanted = ring
        .owned_by(me)
        .into_iter()
        .chain(ring.future().owned_by(me));
    for p in wanted {
        node.start_vnode(p).unwrap();
    }
}

/// Starts the transfers `ring` and liveness call for on one process:
/// ownership to next owners, hinted back to owners that are up, and the
/// drop of a vnode whose ownership transfer finished and moved in the ring.
fn decide(member: &Member, ring: &Ring, view: &View) {
    let node = &member.node;
    let me = &node.config().node_name;
    for t in ring.pending().filter(|t| t.from == *me) {
        let _ = member
            .handoffs
            .start(t.partition, Kind::Ownership, t.to.clone());
    }
    let handed: Vec<Partition> = member
        .handoffs
        .transfers()
        .into_iter()
        .filter(|t| t.kind == Kind::Ownership && t.state == TransferState::Handed)
        .map(|t| t.partition)
        .collect();
    for p in node.local_partitions() {
        let owner = ring.owner(p);
        if owner == me || ring.next_owner(p) == Some(me) {
            continue;
        }
        if handed.contains(&p) {
            let _ = member.handoffs.drop_handed_off(p);
        } else if view.is_up(owner) {
            let _ = member.handoffs.start(p, Kind::Hinted, owner.clone());
        }
    }
}
