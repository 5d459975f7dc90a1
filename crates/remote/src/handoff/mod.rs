//! Handoff: moving a partition's data from a vnode on this node to another
//! node, resumably, while the partition stays readable and writable
//! (design note 010 §5 and its section "Handoff, as built").
//!
//! A transfer is [`Kind::Ownership`] (the ring's next owner takes the
//! partition) or [`Kind::Hinted`] (a fallback gives the owner back what it
//! took for it). The sender reads the partition in `(bucket, key)` order a
//! chunk at a time ([`order`]) and streams batches over the bulk lane, one
//! in flight while the next is read; the receiver merges each object as a
//! replica would, makes the batch durable, records how far it got (its
//! [`checkpoint`]) and only then acknowledges. After a failure on either
//! side the sender asks the receiver for its checkpoint and goes on after
//! it. Keys written to the sender while it runs are recorded ([`watch`])
//! and sent again after the fold; a sender that restarted, and so lost that
//! record, first asks the receiver which of the keys before the checkpoint
//! it lacks (version-vector digests). When the receiver has everything
//! durable, an ownership transfer is reported to the cluster layer, and a
//! vnode that is no longer needed is sealed, its last writes sent, its drop
//! logged and its data destroyed ([`finish`]).
//!
//! Files: [`wire`] (the messages), [`order`] (key order, batches),
//! [`figures`] (what `/stats` and `/metrics` count),
//! [`checkpoint`] (the receiver's record), [`watch`] (writes during a
//! transfer), [`limit`] (`transfer_limit`), [`progress`] (what operators
//! see), `handoffs` (the node's manager), `sender`, `reader` (the blocking
//! reads), `receiver`, [`finish`] (dropping a vnode).
//!
//! Invariants:
//! - a batch is acknowledged only after the receiver merged every object
//!   of it and synced the partition's backend, and a checkpoint is written
//!   only after what it names is durable;
//! - a sender never drops data before the receiver acknowledged every key
//!   written to it, including the writes made while it sent (its backend is
//!   sealed for the last round);
//! - at most `transfer_limit` outbound and as many inbound transfers run on
//!   a node at once.

pub mod checkpoint;
pub mod figures;
pub mod finish;
mod handoffs;
pub mod limit;
pub mod order;
pub mod progress;
mod reader;
mod receiver;
mod sender;
mod underway;
pub mod watch;
pub mod wire;

use std::path::PathBuf;
use std::time::Duration;

use eddy_ring::{NodeName, Partition};

pub use figures::HandoffFigures;
pub use handoffs::Handoffs;
pub use limit::DEFAULT_TRANSFER_LIMIT;
pub use progress::{TransferState, TransferStatus};
pub use receiver::{InboundStatus, MOVED_HERE_HOLD};
pub use underway::Underway;
pub use watch::Watch;
pub use wire::Kind;

/// Handoff settings.
#[derive(Clone, Debug)]
pub struct HandoffConfig {
    /// Transfers run at once, each way (Riak's `transfer_limit`).
    pub transfer_limit: usize,
    /// A batch closes once its objects reach this many bytes.
    pub batch_bytes_max: usize,
    /// ... or this many objects.
    pub batch_objects_max: usize,
    /// Keys read per key fold of the partition ([`order`]).
    pub chunk_keys_max: usize,
    /// How long one call to the receiver may take.
    pub call_timeout: Duration,
    /// The first pause after a failure; it doubles up to `retry_max`.
    pub retry_min: Duration,
    pub retry_max: Duration,
    /// Rounds of re-sending written keys before a transfer is declared
    /// handed (later writes go in the next round or the last, sealed one).
    pub drain_rounds_max: usize,
    /// Where the receiver's checkpoints live; `None`: in memory only.
    pub checkpoint_dir: Option<PathBuf>,
}

impl Default for HandoffConfig {
    fn default() -> Self {
        HandoffConfig {
            transfer_limit: DEFAULT_TRANSFER_LIMIT,
            batch_bytes_max: 1 << 20,
            batch_objects_max: 1000,
            chunk_keys_max: 1 << 16,
            call_timeout: Duration::from_secs(60),
            retry_min: Duration::from_millis(100),
            retry_max: Duration::from_secs(5),
            drain_rounds_max: 4,
            checkpoint_dir: None,
        }
    }
}

/// What handoff needs from the node's storage beyond the `Node`: the
/// composition root, which opens and names partitions, provides it.
pub trait PartitionStore: Send + Sync {
    /// Destroys partition `p`'s data on this node, crash-atomically; its
    /// vnode is closed and out of the node's table. May block.
    fn destroy(&self, p: Partition) -> Result<(), String>;
}

/// A finished ownership transfer, reported to the cluster layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    pub partition: Partition,
    pub from: NodeName,
    pub to: NodeName,
}

/// Called once per finished ownership transfer.
pub type OnComplete = std::sync::Arc<dyn Fn(Completed) + Send + Sync>;

/// Why a handoff request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandoffError {
    /// This node runs no vnode for the partition.
    #[error("partition {0} has no vnode on this node")]
    NotHosted(u32),
    /// The partition's backend was not wrapped by the node's [`Watch`].
    #[error("partition {0}'s backend is not watched: wrap it with Watch::wrap")]
    NotWatched(u32),
    /// A transfer of the partition to another node is under way.
    #[error("partition {partition} is being handed to {to}")]
    Busy { partition: u32, to: String },
    /// The partition's vnode here takes (or just took) an ownership
    /// transfer to this node: it is no fallback to hand back, whatever
    /// this node's ring says yet.
    #[error("partition {0} is moving to this node")]
    MovingHere(u32),
    /// A transfer cannot target the node itself.
    #[error("partition {0} cannot be handed to this node itself")]
    ToSelf(u32),
    /// No finished ownership transfer of the partition is waiting.
    #[error("partition {0} has no finished ownership transfer")]
    NotHanded(u32),
    /// The ring still lists this node as the partition's owner.
    #[error("the ring still names this node the owner of partition {0}")]
    StillOwner(u32),
    /// The node is gone.
    #[error("the node is shutting down")]
    ShuttingDown,
}
