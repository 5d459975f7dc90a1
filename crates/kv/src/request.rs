//! The request model: what the HTTP and PB front ends turn requests into.
//! Nothing here knows about headers or protobufs.

use eddy_object::{Content, RiakObject, VersionVector};

use crate::quorum::Quorum;
use crate::types::DEFAULT_TYPE;

/// A bucket within a bucket type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BucketRef {
    pub bucket_type: String,
    pub bucket: Vec<u8>,
}

impl BucketRef {
    /// A bucket of the `default` type.
    pub fn default_type(bucket: impl Into<Vec<u8>>) -> Self {
        BucketRef {
            bucket_type: DEFAULT_TYPE.to_string(),
            bucket: bucket.into(),
        }
    }

    /// A bucket of type `bucket_type`.
    pub fn typed(bucket_type: &str, bucket: impl Into<Vec<u8>>) -> Self {
        BucketRef {
            bucket_type: bucket_type.to_string(),
            bucket: bucket.into(),
        }
    }

    /// The bucket as the storage layer names it: a big-endian u16 length of
    /// the type name, the type name, then the bucket name. Distinct pairs
    /// never collide, and a type's buckets are contiguous.
    pub fn storage_bucket(&self) -> Vec<u8> {
        let t = self.bucket_type.as_bytes();
        let mut out = Vec::with_capacity(2 + t.len() + self.bucket.len());
        out.extend_from_slice(&(t.len() as u16).to_be_bytes());
        out.extend_from_slice(t);
        out.extend_from_slice(&self.bucket);
        out
    }

    /// The inverse of [`BucketRef::storage_bucket`].
    pub fn from_storage_bucket(bytes: &[u8]) -> Option<BucketRef> {
        let (len, rest) = bytes.split_first_chunk::<2>()?;
        let len = u16::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return None;
        }
        let (t, bucket) = rest.split_at(len);
        Some(BucketRef {
            bucket_type: String::from_utf8(t.to_vec()).ok()?,
            bucket: bucket.to_vec(),
        })
    }
}

/// Per-request read options; `None` means the bucket's value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetOptions {
    pub r: Option<Quorum>,
    pub pr: Option<Quorum>,
    pub basic_quorum: Option<bool>,
    pub notfound_ok: Option<bool>,
    /// Return a tombstone's context instead of a bare not found.
    pub deleted_vclock: bool,
    pub timeout_ms: Option<u64>,
}

/// Read one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetRequest {
    pub bucket: BucketRef,
    pub key: Vec<u8>,
    pub options: GetOptions,
}

/// The answer to a get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetResponse {
    /// The object, with one or more siblings (tombstone siblings removed
    /// unless every sibling is one).
    Found(RiakObject),
    /// Nothing live; the tombstone's context if one was found.
    NotFound {
        tombstone_context: Option<VersionVector>,
    },
}

/// Per-request write options; `None` means the bucket's value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PutOptions {
    pub w: Option<Quorum>,
    pub dw: Option<Quorum>,
    pub pw: Option<Quorum>,
    /// Answer with the stored object (all siblings).
    pub return_body: bool,
    /// Answer with the stored object's metadata but no values.
    pub return_head: bool,
    /// Fail if a live object exists (atomic on the coordinating vnode).
    pub if_none_match: bool,
    /// Fail unless the stored object's context equals the request's.
    pub if_not_modified: bool,
    pub timeout_ms: Option<u64>,
}

/// Write one object. `key: None` asks the server to make one up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutRequest {
    pub bucket: BucketRef,
    pub key: Option<Vec<u8>>,
    /// The causal context the client read; `None` for a blind write.
    pub context: Option<VersionVector>,
    pub content: Content,
    pub options: PutOptions,
}

/// The answer to a put.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PutResponse {
    /// The key written (the generated one for server-generated keys).
    pub key: Vec<u8>,
    /// The stored object, when `return_body` or `return_head` asked for it.
    pub object: Option<RiakObject>,
}

/// Per-request delete options; `None` means the bucket's value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    pub rw: Option<Quorum>,
    pub r: Option<Quorum>,
    pub w: Option<Quorum>,
    pub pr: Option<Quorum>,
    pub pw: Option<Quorum>,
    pub dw: Option<Quorum>,
    pub timeout_ms: Option<u64>,
}

/// Delete one object (write a tombstone, reaped per delete_mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteRequest {
    pub bucket: BucketRef,
    pub key: Vec<u8>,
    /// The context the client read; without one, the node reads first.
    pub context: Option<VersionVector>,
    pub options: DeleteOptions,
}

/// Read several keys of one bucket (design note 016): each key as a
/// [`GetRequest`] with these options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiGetRequest {
    pub bucket: BucketRef,
    pub keys: Vec<Vec<u8>>,
    pub options: GetOptions,
}

/// One object of a [`MultiPutRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiPutObject {
    pub key: Vec<u8>,
    /// The causal context the client read; `None` for a blind write.
    pub context: Option<VersionVector>,
    pub content: Content,
}

/// Write several objects of one bucket (design note 016): each as a
/// [`PutRequest`] with these options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiPutRequest {
    pub bucket: BucketRef,
    pub objects: Vec<MultiPutObject>,
    pub options: PutOptions,
}

/// One key of a [`MultiDeleteRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiDeleteKey {
    pub key: Vec<u8>,
    /// The context the client read; without one, the node reads first.
    pub context: Option<VersionVector>,
}

/// Delete several keys of one bucket (design note 016): each as a
/// [`DeleteRequest`] with these options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiDeleteRequest {
    pub bucket: BucketRef,
    pub keys: Vec<MultiDeleteKey>,
    pub options: DeleteOptions,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_bucket_roundtrips_and_separates_types() {
        let a = BucketRef::typed("ab", b"c".to_vec());
        let b = BucketRef::typed("a", b"bc".to_vec());
        assert_ne!(a.storage_bucket(), b.storage_bucket());
        assert_eq!(BucketRef::from_storage_bucket(&a.storage_bucket()), Some(a));
        assert_eq!(BucketRef::from_storage_bucket(&[0, 9, b'x']), None);
    }
}
