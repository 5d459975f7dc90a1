//! What coordinators and vnodes say to each other: plain data only.
//!
//! These are the messages a cluster carries between nodes (design note
//! 010): no channel, handle or node-local log position is part of one. A
//! vnode is addressed by [`VnodeId`], and where its replies go is the
//! envelope's business ([`super::reply::ReplyTo`]), not the message's.
//! An object travels as its encoded bytes ([`Bytes`]), which every hop
//! passes on untouched.

use std::sync::Arc;

use bytes::Bytes;
use eddy_object::{Content, VersionVector};
use eddy_ring::{NodeName, Partition};

use eddy_model::error::KvError;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::metadata::entries::PropsEntries;

/// A vnode's address: its partition and the node it runs on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VnodeId {
    pub partition: Partition,
    pub node: NodeName,
}

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
    /// A `write_once` bucket: no read before a write without index
    /// entries, and one version kept whatever the concurrency.
    pub write_once: bool,
    /// The bucket's ttl (0: none): a write stamps its object with an
    /// expiry this long after its newest sibling's last write.
    pub ttl_secs: u64,
}

/// When a vnode answers a put.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum SyncLevel {
    /// Once written (the request's dw is 0).
    #[default]
    Written,
    /// Once durable as the commit log's strategy says (dw > 0).
    Durable,
    /// Once on stable storage whatever the strategy (`sync_on_write`).
    Disk,
}

/// Conditions a coordinated put checks atomically before writing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// Fail if a live object exists.
    pub if_none_match: bool,
    /// Fail unless the stored version vector equals this one.
    pub if_not_modified: Option<VersionVector>,
}

/// A client's write, as the coordinating vnode applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coordinate {
    pub context: VersionVector,
    pub content: Content,
    pub conditions: Conditions,
    /// A data type operation (design note 020): the vnode merges the
    /// stored value's states, applies this as its actor and writes the
    /// result as `content`'s value, superseding every sibling it read.
    pub update: Option<Box<DtUpdate>>,
}

/// A data type operation for the coordinating vnode to apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtUpdate {
    pub op: eddy_dt::Op,
    /// The bucket's data type (the op's must match it).
    pub datatype: eddy_dt::DataType,
    /// The bucket's `hll_precision` (HLLs only).
    pub hll_precision: u8,
    /// The clock of the context the client sent, already checked.
    pub context: Option<VersionVector>,
}

/// What a put does at the vnode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutKind {
    /// Apply a client's write as this vnode's actor (the coordinating
    /// vnode); it answers [`VnodeReply::Coordinated`] with the new object
    /// as soon as it is written, then [`VnodeReply::Put`].
    Coordinate(Box<Coordinate>),
    /// Merge an object another vnode produced (the other replicas, read
    /// repair): its encoding, stored as is when the merge is that object.
    Replicate { encoded: Bytes },
    /// Take in a set or map operation a coordinating vnode applied to a
    /// segmented value (design note 020 §6), without the whole value: only a
    /// replica holding exactly the version the operation was applied to
    /// can; any other answers [`Signal::Behind`] and is sent the whole
    /// object.
    DtDelta(Box<DtDelta>),
}

/// A set or map operation as its replicas take it in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtDelta {
    /// The version vector of the object the operation was applied to.
    pub before: VersionVector,
    /// The new version, encoded, its one content's value empty.
    pub object: Bytes,
    /// What the operation changed (`eddy_dt::Delta`: an `OrswotDelta` or
    /// a `MapDelta`, encoded).
    pub delta: Bytes,
}

/// A write to one vnode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutRequest {
    pub key: StorageKey,
    pub kind: PutKind,
    pub policy: WritePolicy,
    /// When to reply.
    pub sync: SyncLevel,
    /// The stamped bucket props entries the coordinator resolved the
    /// policy from, for a vnode on another node to check its own against
    /// (design note 010 §2); `None`: no check (a vnode of the
    /// coordinator's own node, read repair, handoff).
    pub props: Option<Arc<PropsEntries>>,
}

/// One request to a vnode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VnodeRequest {
    Put(PutRequest),
    /// Read the stored object.
    Get {
        key: StorageKey,
    },
    /// Remove the key if it still holds exactly this tombstone.
    Reap {
        key: StorageKey,
        tombstone: VersionVector,
    },
    /// List what the vnode holds, for a coverage plan.
    Fold(FoldRequest),
}

/// One request of a batch: several requests to vnodes of one node, sent
/// as one message (multi-key requests, design note 016). A batch carries
/// only requests answered by exactly one reply: gets and replicated
/// puts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchItem {
    /// The vnode's partition on the batch's node.
    pub partition: Partition,
    pub request: VnodeRequest,
}

impl BatchItem {
    /// Whether `request` may travel in a batch: a get, or a replicated
    /// put.
    pub fn allowed(request: &VnodeRequest) -> bool {
        matches!(
            request,
            VnodeRequest::Get { .. }
                | VnodeRequest::Put(PutRequest {
                    kind: PutKind::Replicate { .. },
                    ..
                })
        )
    }
}

/// A fold of one vnode for a coverage plan: the live keys of one bucket
/// (all of them, or those a key filter matches), the buckets of one type
/// that hold a live key, a 2i scan, or a map phase's outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoldRequest {
    pub kind: FoldKind,
    /// The ring's size, to place each key in its partition's range.
    pub ring_size: u32,
    /// Answer only for keys whose hash falls in these partitions' ranges
    /// (the coverage plan's filter); `None`: every key the vnode holds.
    pub ranges: Option<Vec<Partition>>,
}

/// What a fold lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FoldKind {
    /// The live keys of a storage bucket.
    Keys { bucket: Vec<u8> },
    /// The live keys of a storage bucket that `filter` matches, the
    /// filter run at the vnode (it travels as its JSON text and is parsed
    /// again by the receiving node).
    FilteredKeys {
        bucket: Vec<u8>,
        filter: Arc<KeyFilter>,
    },
    /// The buckets (names, without their type) of a bucket type holding
    /// at least one live key.
    Buckets { bucket_type: String },
    /// The entries of a 2i scan, in (term, key) order, each item
    /// [`crate::index_fold::encode_entry`].
    Index(eddy_model::index::IndexScan),
    /// A map phase run over the live objects of a storage bucket (those
    /// whose keys `filter` matches, if any), each item the JSON text of a
    /// list of outputs ([`crate::map_fold`]).
    Map(MapFold),
    /// A map phase run over the live objects a 2i scan names, one input
    /// per matching entry, each item as [`FoldKind::Map`]'s.
    IndexMap(IndexMapFold),
}

impl FoldKind {
    /// True for the folds that run a map phase (they need the node's map
    /// runner).
    pub fn is_map(&self) -> bool {
        matches!(self, FoldKind::Map(_) | FoldKind::IndexMap(_))
    }

    /// True for the folds that read a 2i scan.
    pub fn is_index(&self) -> bool {
        matches!(self, FoldKind::Index(_) | FoldKind::IndexMap(_))
    }
}

/// A map phase for a vnode to run over the objects of a 2i scan's
/// entries (a MapReduce job's index input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexMapFold {
    /// The scan, without `max` or `after`: every matching entry.
    pub scan: eddy_model::index::IndexScan,
    /// The resolved phase as JSON text, as [`MapFold::phase`].
    pub phase: Bytes,
}

/// A map phase for a vnode to run over what it holds of one bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapFold {
    pub bucket: Vec<u8>,
    /// Only keys this key filter matches; `None`: every key.
    pub filter: Option<Arc<KeyFilter>>,
    /// The resolved phase as JSON text, for the node's
    /// [`crate::mapphase::MapRunner`].
    pub phase: Bytes,
}

/// One chunk of a fold's answer. Chunks are numbered from 0; the last one
/// says so, and may arrive before the others (a network may reorder).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoldChunk {
    pub seq: u32,
    pub last: bool,
    pub items: Vec<Vec<u8>>,
}

/// A vnode's acknowledgement of a put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PutAck {
    /// Synced to stable storage before this reply.
    pub durable: bool,
}

/// One reply from a vnode.
#[derive(Debug)]
pub enum VnodeReply {
    /// The coordinating vnode wrote the client's write: the object it
    /// stored, before any sync, so the coordinator can replicate it; or,
    /// for a set or map operation on a segmented value, the delta to replicate
    /// instead (`encoded` then empty: the whole object is the vnode's to
    /// read).
    Coordinated {
        encoded: Bytes,
        siblings: usize,
        delta: Option<Box<DtDelta>>,
    },
    /// A put's outcome at this vnode (after the sync, if it asked for one).
    Put(Result<PutAck, KvError>),
    /// A get's outcome: the stored object's encoding, if any.
    Get(Result<Option<Bytes>, KvError>),
    /// A chunk of a fold's answer, or the error that ended it.
    Fold(Result<FoldChunk, KvError>),
}
