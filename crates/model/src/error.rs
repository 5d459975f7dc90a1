//! Errors of the key-value layer. Each maps to one HTTP status and one PB
//! error text at the API edge.

use crate::keyfilter::KeyFilterError;
use crate::metadata::entries::PropsEntries;
use crate::quorum::QuorumError;
use crate::types::RegistryError;

/// The engine a storage error names when it is another node's vnode's
/// error of kind `other` (its text is the remote error's text).
pub const OTHER_ENGINE: &str = "remote vnode";
/// The engine a storage error names when it is another node's vnode's
/// storage error.
pub const STORAGE_ENGINE: &str = "remote storage";

/// Why a key-value operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KvError {
    /// The bucket type does not exist or is not active, or props are bad.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A quorum value is malformed or exceeds n_val.
    #[error(transparent)]
    Quorum(#[from] QuorumError),
    /// Fewer replies than `r` (or `pr`) arrived.
    #[error("{which} value unsatisfied: needed {needed}, got {got}")]
    ReadQuorum {
        which: &'static str,
        needed: u32,
        got: u32,
    },
    /// A write did not reach its w, dw or pw quorum.
    #[error("write quorum unsatisfied: {0:?}")]
    WriteQuorum(PutFailure),
    /// The request did not complete within its timeout.
    #[error("timeout")]
    Timeout,
    /// `if_none_match` found a live object.
    #[error("match_found")]
    MatchFound,
    /// `if_not_modified` found a different version.
    #[error("modified")]
    Modified,
    /// The key, value or metadata exceeds a limit.
    #[error("{what} of {size} bytes exceeds the limit of {max}")]
    TooLarge {
        what: &'static str,
        size: usize,
        max: usize,
    },
    /// The object carries more entries of a kind (usermeta, links, index
    /// entries) than allowed.
    #[error("too many {what}: {count} exceeds the limit of {max}")]
    TooMany {
        what: &'static str,
        count: usize,
        max: usize,
    },
    /// The write would leave more siblings than allowed.
    #[error("too many siblings: {count} exceeds the limit of {max}")]
    TooManySiblings { count: usize, max: usize },
    /// The key is empty (Riak refuses empty keys and buckets).
    #[error("{0} must not be empty")]
    Empty(&'static str),
    /// The storage layer failed.
    #[error("storage: {0}")]
    Storage(#[from] eddy_storage::StorageError),
    /// A stored object could not be decoded (it is not returned).
    #[error("stored object is corrupt: {0}")]
    Corrupt(#[from] eddy_object::DecodeError),
    /// A vnode applied the write but the sync that was to make it durable
    /// failed (the write may or may not survive a crash).
    #[error("write applied but not made durable: {0}")]
    SyncFailed(String),
    /// The replica's partition is marked damaged and its copy might bring
    /// back lost history, so it is not used (design note 009).
    #[error("partition {0} awaits repair; its copy was not used")]
    Damaged(u32),
    /// Some key range has no vnode up to answer a coverage query for it
    /// (Riak's `insufficient_vnodes_available`).
    #[error("insufficient_vnodes_available: {0}")]
    InsufficientVnodes(String),
    /// A vnode could not be started on this node.
    #[error("cannot start vnode: {0}")]
    VnodeStart(String),
    /// The node holding a replica cannot be reached.
    #[error("node {0} is unreachable")]
    Unreachable(String),
    /// A query (2i, key filters, and later MapReduce) is malformed:
    /// Riak's "Invalid query" answers, worded as Riak words them.
    #[error("{0}")]
    BadQuery(String),
    /// The node is shutting down.
    #[error("node is shutting down")]
    ShuttingDown,
    /// A multi-key answer already holds as many object bytes as it may
    /// (design note 016): this key's object was left out; ask again.
    #[error(
        "answer_too_large: the answer already holds {max} bytes of objects; ask for this key again"
    )]
    AnswerTooLarge { max: usize },
    /// A data type operation was refused (a precondition, an overflow, an
    /// operation of the wrong type, nesting too deep): nothing changed.
    #[error("{0}")]
    Datatype(#[from] eddy_dt::DtError),
    /// A data type operation's context is corrupt or from another key.
    #[error("{0}")]
    DatatypeContext(#[from] eddy_dt::ContextError),
    /// A stored data type value could not be decoded (it is not used).
    #[error("stored object is corrupt: {0}")]
    DatatypeCorrupt(#[from] eddy_dt::DecodeError),
    /// The bucket cannot take this data type request.
    #[error("{0}")]
    DatatypeBucket(#[from] DatatypeBucketError),
    /// What a vnode tells its coordinator rather than a failure of the
    /// request ([`Signal`]).
    #[error(transparent)]
    Signal(#[from] Signal),
}

/// What a vnode (or the router in front of it) tells a coordinator that is
/// not a failure of the client's request: the coordinator acts on it —
/// routes to another replica, applies newer props and puts again, sends the
/// whole object — and a client sees one only when acting on it did not
/// help (a put still refused for newer props after a few tries). Kept apart
/// from the errors clients see so that every match on those is about them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Signal {
    /// This node runs no vnode for the partition a request named.
    #[error("partition {0} has no vnode on this node")]
    NotHosted(u32),
    /// A replica holds newer bucket props than the put's coordinator
    /// resolved (design note 010 §2): its entries, which the coordinator
    /// applies before it puts again.
    #[error("bucket props changed while the put was coordinated; try again")]
    PropsNewer(Box<PropsEntries>),
    /// A replica does not hold the version a set or map operation's delta
    /// was applied to: it needs the whole object (the coordinator sends it).
    #[error("the replica is behind the coordinated version")]
    Behind,
}

/// Why a bucket cannot take a data type request (design note 020), each
/// worded as Riak words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatatypeBucketError {
    /// A data type request on a bucket type without `allow_mult`.
    #[error("Bucket must be allow_mult=true")]
    NotAllowMult,
    /// A data type request on a bucket type without (or with an unknown)
    /// `datatype`.
    #[error("Bucket datatype '{0}' is not a supported type.")]
    NoDatatype(String),
    /// A legacy counter on a bucket without `allow_mult`.
    #[error("Counters require bucket property 'allow_mult=true'")]
    CountersNeedAllowMult,
    /// A data type operation other than a counter's on a `default` bucket.
    #[error("non-counter operation on default bucket")]
    NonCounterOnDefault,
    /// A plain object write into a bucket of a data type.
    #[error(
        "bucket type `{bucket_type}` holds {datatype} values: write them with data type operations, not a plain object put"
    )]
    PlainPut {
        bucket_type: String,
        datatype: &'static str,
    },
}

/// A malformed key filter is a bad query, its message naming the filter.
impl From<KeyFilterError> for KvError {
    fn from(e: KeyFilterError) -> KvError {
        KvError::BadQuery(e.to_string())
    }
}

/// Why a put did not reach its quorums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutFailure {
    /// Fewer than `w` vnodes applied the write.
    W { needed: u32, got: u32 },
    /// Fewer than `dw` vnodes made it durable.
    Dw { needed: u32, got: u32 },
    /// Fewer than `pw` primaries applied it.
    Pw { needed: u32, got: u32 },
    /// Fewer than `node_confirms` distinct nodes applied it.
    NodeConfirms { needed: u32, got: u32 },
}
