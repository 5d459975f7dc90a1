//! The expiry sweep (design note 027, "Per-bucket TTL"): a thread per node
//! that deletes, vnode by vnode, the objects of buckets with a `ttl` that
//! expired, soonest first, as its side stores' expiry order names them
//! (`Vnode::expire_due`).
//!
//! A reader never waits for it: the backends and side stores hide an
//! expired object and its index entries from the second it expires. The
//! sweep frees what they hold. It runs in rounds of at most [`ROUND`]
//! keys a vnode and rests [`REST_FACTOR`] times as long as each round
//! took, so it takes at most a fifth of one core from the requests; when
//! nothing is due it looks again after `NodeConfig::expiry_sweep_every`.
//!
//! The same thread compacts the vnodes' change logs (design note 027,
//! "The change sequence"): whenever the sweep has nothing due, one vnode
//! whose log has at least [`CHANGES_CLOSED_MIN`] closed segments; and at
//! most every [`TRIM_EVERY`] it drops the side stores' tables of swept
//! expiry entries (`SideStore::trim_swept_order`).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use eddy_model::error::KvError;

use crate::node::Node;

/// How often the sweep looks when nothing was due.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// Keys a vnode deletes in one round.
pub const ROUND: usize = 1_000;
/// The sweep rests this many times as long as a round took.
pub const REST_FACTOR: u32 = 4;
/// How often, at most, the swept part of the expiry order is trimmed.
pub const TRIM_EVERY: Duration = Duration::from_secs(60);
/// A vnode's change log is compacted once it has this many closed
/// segments (64 MiB each).
pub const CHANGES_CLOSED_MIN: usize = 2;

impl Node {
    /// Deletes what expired by now on every vnode of this node, at most
    /// `max_per_vnode` keys each; returns how many it deleted.
    pub fn sweep_expired(&self, max_per_vnode: usize) -> Result<u64, KvError> {
        let now = self.config.clock.now_secs();
        let mut deleted = 0;
        for vnode in self.local_vnodes() {
            match vnode.expire_due(now, max_per_vnode) {
                Ok(n) => deleted += n,
                // A vnode closing (dropped, handed off) is passed over.
                Err(KvError::ShuttingDown) => {}
                Err(e) => return Err(e),
            }
        }
        self.metrics.expired.add(deleted);
        Ok(deleted)
    }

    /// Drops every local vnode's tables of swept expiry entries; returns
    /// how many vnodes' swept marks had moved since their last trim.
    pub fn trim_swept_orders(&self) -> Result<usize, KvError> {
        let mut trimmed = 0;
        for vnode in self.local_vnodes() {
            match vnode.trim_swept_order() {
                Ok(moved) => trimmed += usize::from(moved),
                Err(KvError::ShuttingDown) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(trimmed)
    }

    /// Compacts the change log of the first vnode whose log has at least
    /// `min_closed` closed segments; returns whether one did.
    pub fn compact_changes(&self, min_closed: usize) -> Result<bool, KvError> {
        for vnode in self.local_vnodes() {
            let Some((kept, dropped)) = vnode.compact_changes(min_closed)? else {
                continue;
            };
            tracing::info!(
                partition = vnode.partition.0,
                kept,
                dropped,
                "change log compacted"
            );
            return Ok(true);
        }
        Ok(false)
    }
}

/// Starts `node`'s sweep thread, if its config asks for one; the thread
/// ends once the node is gone.
pub(crate) fn start(node: &Arc<Node>) {
    let Some(every) = node.config.expiry_sweep_every else {
        return;
    };
    let node = Arc::downgrade(node);
    let started = std::thread::Builder::new()
        .name("eddy-expiry".into())
        .spawn(move || run(&node, every));
    if let Err(e) = started {
        tracing::error!("starting the expiry sweep: {e}");
    }
}

fn run(node: &Weak<Node>, every: Duration) {
    let mut trimmed_at = Instant::now();
    loop {
        std::thread::sleep(every);
        loop {
            let Some(strong) = node.upgrade() else {
                return;
            };
            let began = Instant::now();
            let deleted = match strong.sweep_expired(ROUND) {
                Ok(n) => n,
                Err(e) => {
                    tracing::warn!("expiry sweep: {e}");
                    0
                }
            };
            if deleted == 0 {
                if let Err(e) = strong.compact_changes(CHANGES_CLOSED_MIN) {
                    tracing::warn!("compacting a change log: {e}");
                }
                if trimmed_at.elapsed() >= TRIM_EVERY {
                    trimmed_at = Instant::now();
                    if let Err(e) = strong.trim_swept_orders() {
                        tracing::warn!("trimming the swept expiry order: {e}");
                    }
                }
                break;
            }
            drop(strong);
            std::thread::sleep(began.elapsed() * REST_FACTOR);
        }
    }
}
