//! One process of a simulated node: its kv node over its [`Disk`], a
//! commit log in a directory of its own, and vnode messaging and handoff
//! over one simulated transport (the bulk lane to handoff, the rest to
//! kv's remote vnodes).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eddy_kv::*;
use eddy_model::types::BucketRegistry;
use eddy_net::{Incoming, Lane, Transport};
use eddy_remote::handoff::{Completed, HandoffConfig, Handoffs, Underway, Watch};
use eddy_remote::{Inline, NetRemote, RemoteConfig, inbound_for};
use eddy_ring::{NodeName, Partition, Ring};
use eddy_storage::Clock;
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};
use parking_lot::Mutex;

use super::RING_SIZE;
use super::disk::Disk;

/// What a process starts from.
pub struct Boot {
    pub name: NodeName,
    pub transport: Transport,
    pub disk: Arc<Disk>,
    pub ring: Ring,
    pub registry: Arc<BucketRegistry>,
    pub clock: Arc<dyn Clock>,
    pub liveness: Arc<dyn Liveness>,
    /// The commit log directory: the last process's after a kill (the next
    /// process replays it), a new one after a power loss (what the last
    /// logged was never synced).
    pub log_dir: PathBuf,
    /// Told of every finished ownership transfer.
    pub completed: Arc<Mutex<Vec<Completed>>>,
    /// Which process of the node this is: request ids of different
    /// processes never meet.
    pub generation: u64,
}

/// A running process.
pub struct Member {
    pub node: Arc<Node>,
    pub handoffs: Arc<Handoffs>,
}

/// The commit log's settings: the default interval strategy (a durable
/// reply once appended), whose fdatasyncs the simulation stands in for
/// with its own sync points, so the log's own never come (no interval
/// passes, no segment fills).
fn log_options() -> LogOptions {
    LogOptions {
        sync: SyncPolicy::Interval,
        segment_bytes: 1 << 20,
        sync_interval: Duration::from_secs(24 * 3600),
        checkpoint_pace: Duration::ZERO,
    }
}

/// Handoff settings for the simulation: small batches, quick retries.
fn handoff_config() -> HandoffConfig {
    HandoffConfig {
        batch_objects_max: 4,
        call_timeout: Duration::from_secs(5),
        retry_min: Duration::from_millis(50),
        retry_max: Duration::from_millis(400),
        checkpoint_dir: None,
        ..HandoffConfig::default()
    }
}

/// Starts a process: every partition on the disk, and every one the ring
/// gives the node now or after its transfers, gets a vnode.
pub fn start(boot: Boot) -> Member {
    let watch = Watch::new();
    let future = boot.ring.future();
    let mut partitions: Vec<Partition> = boot.disk.partitions();
    partitions.extend(boot.ring.owned_by(&boot.name));
    partitions.extend(future.owned_by(&boot.name));
    partitions.sort();
    partitions.dedup();
    let config = NodeConfig {
        node_name: boot.name.clone(),
        ring_size: RING_SIZE,
        delete_mode: DeleteMode::Keep,
        clock: boot.clock.clone(),
        commit_log_dir: Some(boot.log_dir.clone()),
        commit_log: log_options(),
        blocking_inline: true,
        ..NodeConfig::default()
    };
    let remote = remote(&boot.transport, boot.generation);
    let underway = Underway::new();
    let links = NodeLinks {
        remote: Some(remote.clone()),
        vnode_factory: Some(watch.wrap_factory(boot.disk.clone())),
        liveness: Some(boot.liveness),
        transfers: Some(underway.clone()),
    };
    let (disk, w) = (boot.disk.clone(), watch.clone());
    let (registry, ring) = (boot.registry, boot.ring);
    let node = Node::start_linked(config, links, registry, ring, &partitions, move |p| {
        let parts = disk.open(p);
        VnodeParts {
            backend: w.wrap(p, parts.backend),
            side: None,
            ..parts
        }
    })
    .unwrap();
    let store = boot.disk.partition_store();
    for (p, _) in node.dropped_at_start() {
        store.destroy(*p).unwrap();
    }
    remote.serve(inbound_for(&node), Arc::new(Inline)).unwrap();
    let handoffs = Handoffs::new(
        &node,
        underway,
        boot.transport.clone(),
        store,
        watch,
        handoff_config(),
    );
    let completed = boot.completed;
    handoffs.on_complete(Arc::new(move |c| completed.lock().push(c)));
    route(&boot.transport, &remote, &handoffs);
    tokio::spawn(remote.watch_peers());
    Member { node, handoffs }
}

/// Kv's remote vnodes over `transport`, built before the node; once it
/// serves, requests run inline on the network's driver (deterministic).
fn remote(transport: &Transport, generation: u64) -> Arc<NetRemote> {
    let config = RemoteConfig {
        request_id_start: generation * 1_000_000_000 + 1,
        ..RemoteConfig::default()
    };
    NetRemote::new(transport.clone(), config)
}

/// One handler for the transport: bulk calls to handoff, the rest to kv.
fn route(transport: &Transport, remote: &Arc<NetRemote>, handoffs: &Arc<Handoffs>) {
    let (remote, handoffs) = (Arc::downgrade(remote), Arc::downgrade(handoffs));
    transport
        .set_handler(Arc::new(move |incoming: Incoming| {
            if incoming.lane == Lane::Bulk {
                if let Some(h) = handoffs.upgrade() {
                    h.handle_bulk(incoming);
                }
            } else if let Some(r) = remote.upgrade() {
                r.handle(incoming);
            }
        }))
        .unwrap();
}

impl Member {
    /// A power loss: the disk drops what it had not synced, transfers
    /// stop, the log and the vnodes close (failing: the disk is dark).
    pub fn power_off(self, disk: &Disk) {
        disk.power_off();
        self.handoffs.shutdown();
        self.node.shutdown();
    }

    /// A kill -9: the process ends, but what it wrote is in the page
    /// cache (so on the disk for the next process) and in its commit log.
    pub fn kill(self, disk: &Disk) {
        self.sync();
        self.power_off(disk);
    }

    /// Syncs every vnode's backend: the interval sync that makes
    /// everything appended so far durable.
    pub fn sync(&self) {
        for p in self.node.local_partitions() {
            if let Some(backend) = self.node.partition_backend(p) {
                let _ = backend.sync();
            }
        }
    }
}
