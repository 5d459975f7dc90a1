//! Faults the tests inject: partitions, pauses (a node's links cut, its
//! process intact), kills (the process gone, its writes in the page cache
//! and its commit log), power losses (the process gone with whatever its
//! disk had not synced), and the sync points that stand in for the commit
//! log's interval fdatasync. Every node's view of who is down follows them.

use std::sync::Arc;
use std::time::Duration;

use super::SimCluster;
use super::disk::Disk;

impl SimCluster {
    /// Cuts the network between two sides; each side's nodes see the
    /// other's as down.
    pub fn partition(&self, a: &[usize], b: &[usize]) {
        let names = |s: &[usize]| s.iter().map(|i| super::name(*i)).collect::<Vec<_>>();
        self.net.partition(&names(a), &names(b));
        *self.sides.borrow_mut() = Some((a.to_vec(), b.to_vec()));
        self.update_views();
    }

    /// Ends every partition.
    pub fn heal(&self) {
        self.net.heal();
        *self.sides.borrow_mut() = None;
        self.update_views();
    }

    /// Cuts every link of node `i` (its data stays: the process paused).
    pub fn crash(&self, i: usize) {
        if !self.is_powered_off(i) && self.crashed.borrow_mut().insert(i) {
            self.net.crash(&super::name(i)).unwrap();
        }
        self.update_views();
    }

    /// Node `i` loses power: its process ends and its disk keeps only
    /// what it synced. It stays off until [`SimCluster::restore_all`].
    pub fn power_off(&self, i: usize) {
        if let Some((member, disk)) = self.stop(i, true) {
            member.power_off(&disk);
        }
        self.update_views();
    }

    /// Node `i`'s process is killed: what it wrote stays in the page cache
    /// and its commit log, which the next process (at
    /// [`SimCluster::restore_all`]) replays.
    pub fn kill(&self, i: usize) {
        if let Some((member, disk)) = self.stop(i, false) {
            member.kill(&disk);
        }
        self.update_views();
    }

    /// Takes node `i`'s process out of the cluster (its links cut), with
    /// a new commit log for the next process if the last one is `lost`.
    fn stop(&self, i: usize, lost: bool) -> Option<(super::member::Member, Arc<Disk>)> {
        let (member, disk) = {
            let mut slots = self.slots.borrow_mut();
            let slot = &mut slots[i];
            let member = slot.member.take()?;
            slot.logs += u64::from(lost);
            (member, slot.disk.clone())
        };
        if !self.crashed.borrow_mut().remove(&i) {
            self.net.crash(&super::name(i)).unwrap();
        }
        Some((member, disk))
    }

    pub fn is_powered_off(&self, i: usize) -> bool {
        self.slots.borrow()[i].member.is_none()
    }

    /// Brings every paused node's links back and starts a process on
    /// every powered-off node's disk.
    pub fn restore_all(&self) {
        for i in std::mem::take(&mut *self.crashed.borrow_mut()) {
            self.net.restore(&super::name(i)).unwrap();
        }
        for i in 0..self.size() {
            if self.is_powered_off(i) {
                let transport = self.net.restart(&super::name(i)).unwrap();
                self.boot(i, transport);
            }
        }
        self.update_views();
    }

    /// Every running process syncs every vnode: what was appended before
    /// is durable from now on.
    pub fn sync_all(&self) {
        for slot in self.slots.borrow().iter() {
            if let Some(member) = &slot.member {
                member.sync();
            }
        }
    }

    pub(crate) fn update_views(&self) {
        let crashed = self.crashed.borrow();
        let sides = self.sides.borrow();
        let slots = self.slots.borrow();
        let gone = |j: usize| crashed.contains(&j) || slots[j].member.is_none();
        for (i, slot) in slots.iter().enumerate() {
            let mut down = slot.view.down.lock();
            down.clear();
            for (j, other) in slots.iter().enumerate() {
                let apart = sides.as_ref().is_some_and(|(a, b)| {
                    (a.contains(&i) && b.contains(&j)) || (b.contains(&i) && a.contains(&j))
                });
                if j != i && (gone(j) || apart) {
                    down.insert(other.name.clone());
                }
            }
        }
    }

    /// Lets every message in flight land.
    pub async fn settle(&self) {
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
}
