//! Write batches: the unit a backend applies, and the durability asked of it.

use crate::index::IndexSpec;

/// Durability asked of one write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Return only once the write is on stable storage (Riak's `dw`). Backends
    /// share one fsync among concurrent writers that ask for it (group commit).
    pub sync: bool,
}

impl WriteOptions {
    /// A write that must be durable before it is acknowledged.
    pub const SYNC: WriteOptions = WriteOptions { sync: true };
    /// A write the backend's sync strategy makes durable later.
    pub const NO_SYNC: WriteOptions = WriteOptions { sync: false };
}

/// One operation of a [`WriteBatch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    /// Store a value, apply index specs, and set or clear its expiry.
    Put {
        bucket: Vec<u8>,
        key: Vec<u8>,
        value: Vec<u8>,
        /// Index changes: removes apply before adds.
        indexes: Vec<IndexSpec>,
        /// Unix seconds after which the object is gone; `None` keeps it until
        /// the instance-wide expiry (if any) passes.
        expires_at_secs: Option<u64>,
    },
    /// Remove an object and all of its index entries.
    Delete { bucket: Vec<u8>, key: Vec<u8> },
}

impl BatchOp {
    /// The `(bucket, key)` this op writes.
    pub fn bucket_key(&self) -> (&[u8], &[u8]) {
        match self {
            BatchOp::Put { bucket, key, .. } | BatchOp::Delete { bucket, key } => (bucket, key),
        }
    }
}

/// Operations applied in order. Each op is atomic with its index entries.
/// Whether the batch as a whole is atomic across keys depends on the backend:
/// after a crash a backend may keep a prefix of an unsynced batch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub ops: Vec<BatchOp>,
}

impl WriteBatch {
    /// Appends a put.
    pub fn put(
        &mut self,
        bucket: &[u8],
        key: &[u8],
        value: &[u8],
        indexes: Vec<IndexSpec>,
        expires_at_secs: Option<u64>,
    ) -> &mut Self {
        self.ops.push(BatchOp::Put {
            bucket: bucket.to_vec(),
            key: key.to_vec(),
            value: value.to_vec(),
            indexes,
            expires_at_secs,
        });
        self
    }

    /// Appends a delete.
    pub fn delete(&mut self, bucket: &[u8], key: &[u8]) -> &mut Self {
        self.ops.push(BatchOp::Delete {
            bucket: bucket.to_vec(),
            key: key.to_vec(),
        });
        self
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}
