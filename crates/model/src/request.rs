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
    /// `type/bucket/key` as a log line names an object: one line of
    /// printable text (bytes that are not UTF-8 replaced, control
    /// characters escaped).
    pub fn object_name(&self, key: &[u8]) -> String {
        let text = |b: &[u8]| String::from_utf8_lossy(b).escape_debug().to_string();
        let bucket_type = self.bucket_type.escape_debug();
        format!("{bucket_type}/{}/{}", text(&self.bucket), text(key))
    }

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

    /// The bucket as the storage layer names it in its first generation
    /// (never dropped): [`BucketRef::storage_bucket_at`] generation 0.
    pub fn storage_bucket(&self) -> Vec<u8> {
        self.storage_bucket_at(0)
    }

    /// The bucket as the storage layer names it in `generation` (design
    /// note 018: dropping a bucket moves it to the next generation).
    /// Generation 0 is a big-endian u16 length of the type name, the type
    /// name, then the bucket name; a later generation sets the length's
    /// top bit (type names are shorter than 2^15 bytes) and puts the
    /// generation, a big-endian u64, between the type and the bucket name.
    /// Distinct triples never collide, and one generation of a type's
    /// buckets is contiguous.
    pub fn storage_bucket_at(&self, generation: u64) -> Vec<u8> {
        let t = self.bucket_type.as_bytes();
        let mut out = Vec::with_capacity(2 + t.len() + 8 + self.bucket.len());
        let flag = if generation > 0 { GENERATION_FLAG } else { 0 };
        out.extend_from_slice(&(t.len() as u16 | flag).to_be_bytes());
        out.extend_from_slice(t);
        if generation > 0 {
            out.extend_from_slice(&generation.to_be_bytes());
        }
        out.extend_from_slice(&self.bucket);
        out
    }

    /// The bucket a storage bucket names, whatever its generation.
    pub fn from_storage_bucket(bytes: &[u8]) -> Option<BucketRef> {
        BucketRef::parse_storage_bucket(bytes).map(|(b, _)| b)
    }

    /// The inverse of [`BucketRef::storage_bucket_at`]: the bucket and
    /// its generation.
    pub fn parse_storage_bucket(bytes: &[u8]) -> Option<(BucketRef, u64)> {
        let (len, rest) = bytes.split_first_chunk::<2>()?;
        let len = u16::from_be_bytes(*len);
        if len & SEGMENTS_FLAG != 0 {
            return None;
        }
        let (len, has_generation) = (
            (len & !GENERATION_FLAG) as usize,
            len & GENERATION_FLAG != 0,
        );
        if rest.len() < len {
            return None;
        }
        let (t, rest) = rest.split_at(len);
        let (generation, bucket) = match has_generation {
            false => (0, rest),
            true => {
                let (g, bucket) = rest.split_first_chunk::<8>()?;
                let g = u64::from_be_bytes(*g);
                (g > 0).then_some(())?;
                (g, bucket)
            }
        };
        let bucket_ref = BucketRef {
            bucket_type: String::from_utf8(t.to_vec()).ok()?,
            bucket: bucket.to_vec(),
        };
        Some((bucket_ref, generation))
    }
}

/// The top bit of a storage bucket's type-name length: a generation
/// follows the type name.
const GENERATION_FLAG: u16 = 0x8000;

/// Bit 14 of a storage bucket's type-name length: the bucket holds the
/// segments of big data type values of the storage bucket without it
/// (design note 020 §6; type names are at most 255 bytes). No listing,
/// index or fold of a bucket ever names it: [`BucketRef::parse_storage_bucket`]
/// answers `None` for it.
const SEGMENTS_FLAG: u16 = 0x4000;

/// The storage bucket holding the segments of `storage_bucket`'s big data
/// type values.
pub fn segments_bucket(storage_bucket: &[u8]) -> Vec<u8> {
    let mut out = storage_bucket.to_vec();
    if let Some(first) = out.first_mut() {
        *first |= (SEGMENTS_FLAG >> 8) as u8;
    }
    out
}

/// The storage bucket whose segments `bucket` holds, if it is a segments
/// bucket ([`segments_bucket`]).
pub fn segments_owner(bucket: &[u8]) -> Option<Vec<u8>> {
    let flag = (SEGMENTS_FLAG >> 8) as u8;
    let first = *bucket.first()?;
    if first & flag == 0 {
        return None;
    }
    let mut out = bucket.to_vec();
    out[0] = first & !flag;
    BucketRef::parse_storage_bucket(&out).map(|_| out)
}

/// Bytes a generation adds to a storage bucket's name.
pub const GENERATION_BYTES: usize = 8;

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
    fn an_object_name_is_one_printable_line() {
        let b = BucketRef::typed("maps", b"b\xff".to_vec());
        assert_eq!(b.object_name(b"k\n1"), "maps/b\u{fffd}/k\\n1");
    }

    #[test]
    fn segments_buckets_are_apart_and_map_back() {
        for generation in [0, 7] {
            let b = BucketRef::typed("sets", b"b".to_vec()).storage_bucket_at(generation);
            let segments = segments_bucket(&b);
            assert_ne!(segments, b);
            assert_eq!(BucketRef::parse_storage_bucket(&segments), None);
            assert_eq!(segments_owner(&segments), Some(b.clone()));
            assert_eq!(segments_owner(&b), None);
        }
        assert_eq!(segments_owner(b"bucket"), None, "not a storage bucket");
    }

    #[test]
    fn storage_bucket_roundtrips_and_separates_types() {
        let a = BucketRef::typed("ab", b"c".to_vec());
        let b = BucketRef::typed("a", b"bc".to_vec());
        assert_ne!(a.storage_bucket(), b.storage_bucket());
        assert_eq!(BucketRef::from_storage_bucket(&a.storage_bucket()), Some(a));
        assert_eq!(BucketRef::from_storage_bucket(&[0, 9, b'x']), None);
    }

    #[test]
    fn generations_name_distinct_storage_buckets() {
        let a = BucketRef::typed("ab", b"c".to_vec());
        assert_eq!(a.storage_bucket_at(0), a.storage_bucket());
        let names: Vec<_> = (0..4).map(|g| a.storage_bucket_at(g)).collect();
        for (g, name) in names.iter().enumerate() {
            assert_eq!(
                BucketRef::parse_storage_bucket(name),
                Some((a.clone(), g as u64))
            );
            assert_eq!(name.len(), a.storage_bucket().len() + 8 * (g > 0) as usize);
        }
        let mut sorted = names.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), 4);
        // A flagged length with generation 0 is not a name any bucket has.
        let mut zero = vec![0x80, 2, b'a', b'b'];
        zero.extend_from_slice(&[0; 8]);
        assert_eq!(BucketRef::parse_storage_bucket(&zero), None);
        assert_eq!(
            BucketRef::parse_storage_bucket(&[0x80, 2, b'a', b'b', 0, 1]),
            None
        );
    }
}
