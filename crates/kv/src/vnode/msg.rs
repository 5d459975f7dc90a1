//! Requests a vnode takes and the replies it sends. These are the messages a
//! cluster will carry between nodes; nothing here is local-only but the
//! reply channels.

use eddy_object::{Content, RiakObject, VersionVector};
use eddy_ring::Partition;
use tokio::sync::mpsc::UnboundedSender;

use crate::error::KvError;

/// A stored object's storage bucket and key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StorageKey {
    pub bucket: Vec<u8>,
    pub key: Vec<u8>,
}

/// How a bucket resolves concurrent writes, and its sibling limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WritePolicy {
    pub allow_mult: bool,
    pub last_write_wins: bool,
    pub max_siblings: usize,
}

/// Conditions a coordinated put checks atomically before writing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// Fail if a live object exists.
    pub if_none_match: bool,
    /// Fail unless the stored version vector equals this one.
    pub if_not_modified: Option<VersionVector>,
}

/// What a put does at the vnode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutKind {
    /// Apply a client's write as this vnode's actor (the coordinating vnode).
    Coordinate {
        context: VersionVector,
        content: Box<Content>,
        conditions: Conditions,
    },
    /// Merge an object a coordinating vnode produced (the other replicas).
    Replicate {
        object: RiakObject,
        /// The object's encoding, when the sender has it (a local
        /// coordinator): a replica that ends up storing the object itself
        /// stores these bytes.
        encoded: Option<std::sync::Arc<[u8]>>,
        /// Where the sender's commit-log record of these bytes starts, when
        /// it wrote one to this node's log (a local coordinator): such a
        /// replica logs a reference to it instead of the bytes again.
        logged_at: Option<crate::commitlog::Lsn>,
    },
}

/// The outcome of a put at one vnode.
pub type PutResult = Result<PutDone, KvError>;

/// A successful put at one vnode.
#[derive(Clone, Debug)]
pub struct PutDone {
    /// The object as stored after the put.
    pub object: RiakObject,
    /// Synced to stable storage before this reply.
    pub durable: bool,
}

/// Where a vnode sends its put reply, tagged with its partition.
pub type PutReplyTo = UnboundedSender<(Partition, PutResult)>;

/// One request to a vnode. Local reads need no message: they call
/// [`super::Vnode::read`] on the caller's thread.
pub enum VnodeRequest {
    Put {
        key: StorageKey,
        kind: Box<PutKind>,
        policy: WritePolicy,
        /// Sync before replying (the request's dw > 0).
        sync: bool,
        reply: PutReplyTo,
        /// Replicas to send the written object to (the coordinating vnode
        /// forwards, as Riak's does), replying to the same `reply`.
        forward: Vec<super::VnodeHandle>,
    },
    /// Remove the key if it still holds exactly this tombstone.
    Reap {
        key: StorageKey,
        tombstone: VersionVector,
    },
}
