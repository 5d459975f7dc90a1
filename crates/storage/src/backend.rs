//! The [`Backend`] trait: what a partition's store must offer.
//!
//! Methods take `&self` so one instance can serve concurrent readers and
//! writers; each backend does its own locking. Folds and scans call back into
//! the caller for each entry and stop when the callback returns
//! [`FoldControl::Stop`]. All methods are blocking: async callers run them on
//! a blocking thread.

use crate::fold::{KeyVisitor, ObjectVisitor};
use crate::{
    BackendStatus, FoldOptions, IndexQuery, StorageError, WriteBatch, WriteOptions, batch::BatchOp,
    index::IndexSpec,
};

/// What a backend can do; upper layers choose query plans by these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Folds yield keys in `(bucket, key)` byte order, and key ranges are scans.
    pub ordered: bool,
    /// Secondary-index entries are stored and scanned (all of Eddy's but
    /// bitcask).
    pub indexes: bool,
    /// Per-object and instance-wide expiry are honoured.
    pub ttl: bool,
    /// Large values are stored apart from keys (cheap compaction for big values).
    pub kv_separation: bool,
    /// Data survives closing and reopening the instance.
    pub persistent: bool,
    /// A record can vanish without a delete: an instance-wide expiry is
    /// set, or a memory bound evicts. Whatever must stay together (a
    /// data type's root and segments) is not split across records here.
    pub expires: bool,
}

/// The store of one partition. See the crate docs for the invariants.
pub trait Backend: Send + Sync {
    /// Short engine name (`"bitcask"`, `"lsm"`, `"memory"`, `"multi"`).
    fn name(&self) -> &'static str;

    /// What this backend can do. For `multi`, see [`Backend::capabilities_for`].
    fn capabilities(&self) -> Capabilities;

    /// The capabilities that apply to one bucket (differs only for `multi`).
    fn capabilities_for(&self, _bucket: &[u8]) -> Capabilities {
        self.capabilities()
    }

    /// The live value stored under `(bucket, key)`, if any.
    fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError>;

    /// Applies a batch of puts and deletes in order. Each op is atomic with its
    /// index entries; with `opts.sync` the call returns only once every op is
    /// durable.
    fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<(), StorageError>;

    /// Stores `value` under `(bucket, key)` and applies `indexes` to the key's
    /// index entries, atomically.
    fn put(
        &self,
        bucket: &[u8],
        key: &[u8],
        value: &[u8],
        indexes: &[IndexSpec],
        opts: WriteOptions,
    ) -> Result<(), StorageError> {
        let mut batch = WriteBatch::default();
        batch.put(bucket, key, value, indexes.to_vec(), None);
        self.write(batch, opts)
    }

    /// Removes `(bucket, key)` and all its index entries. Deleting a missing
    /// key is not an error.
    fn delete(&self, bucket: &[u8], key: &[u8], opts: WriteOptions) -> Result<(), StorageError> {
        let batch = WriteBatch {
            ops: vec![BatchOp::Delete {
                bucket: bucket.to_vec(),
                key: key.to_vec(),
            }],
        };
        self.write(batch, opts)
    }

    /// Calls `f(bucket, key)` for each live key selected by `opts`, in
    /// `(bucket, key)` order when the backend is ordered.
    fn fold_keys(&self, opts: &FoldOptions, f: &mut KeyVisitor<'_>) -> Result<(), StorageError>;

    /// Calls `f(bucket, key, value)` for each live object selected by `opts`,
    /// in `(bucket, key)` order when the backend is ordered.
    fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError>;

    /// Calls `f(term, key)` for each index entry of `query.bucket` and
    /// `query.field` with `query.start <= term <= query.end`, in `(term, key)`
    /// order on every backend, starting after `query.start_after` if given.
    /// Only entries of live objects are returned.
    fn index_range(&self, query: &IndexQuery, f: &mut KeyVisitor<'_>) -> Result<(), StorageError>;

    /// Removes every object and index entry of `bucket`, faster than key by key.
    fn drop_bucket(&self, bucket: &[u8]) -> Result<(), StorageError>;

    /// True when no live object is stored.
    fn is_empty(&self) -> Result<bool, StorageError>;

    /// Makes every write so far durable.
    fn sync(&self) -> Result<(), StorageError>;

    /// Keys, bytes and files, for `/stats` and operators.
    fn status(&self) -> Result<BackendStatus, StorageError>;

    /// What the open of this instance found damaged and worked around;
    /// clean for backends that do not rebuild state from files.
    fn recovery_report(&self) -> crate::RecoveryReport {
        crate::RecoveryReport::default()
    }

    /// Closes the instance cleanly (syncs and releases files). Further calls
    /// fail with [`StorageError::Closed`].
    fn close(&self) -> Result<(), StorageError>;

    /// Closes the instance whose data is about to be destroyed (a
    /// handed-off partition): nothing it holds needs to be made durable or
    /// quick to reopen, so backends that do work on close (syncs, hint
    /// files) skip it. Further calls fail as after [`Backend::close`].
    fn close_discarding(&self) -> Result<(), StorageError> {
        self.close()
    }

    /// Destroys the partition: closes it and deletes all of its data,
    /// crash-atomically. The destruction is made durable in one step first
    /// (a rename of the directory, [`crate::destroy`], or a durable marker),
    /// then the data is deleted; an open after a crash at any point finds
    /// all of the data or none, and finishes the job.
    fn destroy(self: Box<Self>) -> Result<(), StorageError>;
}
