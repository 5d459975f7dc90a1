//! Big sets and maps stored as a root record and segment records (design
//! note 020 §6), so that an operation on a set of 100,000 members (a map of
//! 100,000 fields) reads and writes a few kilobytes, not the whole value.
//!
//! A segmented value's key holds a **root record**: the object (its
//! version vector, its one content's metadata) in object format version 2
//! (docs/formats/object.md), whose content value is the value's
//! [`Root`] (its clock, deferred removes and table of segments). Each
//! segment is a record of the key's [`segments_bucket`] under
//! [`segment_key`] (the object key and the segment's id), holding one
//! range of the members or top-level fields ([`eddy_dt::Segment`]).
//!
//! Outside the vnode a value is always whole: every read of the backend
//! that leaves this module ([`read_object`], [`whole_bytes`]) assembles a
//! root with its segments into the one-content object it stands for, so
//! gets, read repair, handoff, repair, folds and the wire never see a root.
//! A root record does not decode as an object (its version byte is 2), so
//! a read path that forgot to assemble fails rather than returns a root.
//!
//! Invariants:
//! - a root names only segments that exist with exactly the bytes its
//!   digests name: a segment is never rewritten in place (a changed one
//!   gets a new id), the new segments are written before the root that
//!   names them and the replaced ones deleted after it, each write in
//!   the commit log in that order, so every prefix of the writes (a crash
//!   anywhere) leaves a readable value, old or new;
//! - only a value with one live content that is a set or a map is
//!   segmented, and
//!   only in a bucket whose backend persists records and never expires or
//!   evicts one (`Capabilities::expires`), where the records of one value
//!   live and die together;
//! - a segment that does not match its root's digest, or is missing, fails
//!   the read ([`KvError::DatatypeCorrupt`]), it is never skipped; a read
//!   without the key's lock whose root was replaced meanwhile reads the new
//!   root instead ([`STALE_ROOT_TRIES`]).

use eddy_dt::{DataType, DecodeError, Root, Segment, State};
use eddy_object::{RiakObject, codec};
use eddy_storage::{Backend, Capabilities};

use super::msg::StorageKey;
use eddy_model::error::KvError;
pub use eddy_model::request::{segments_bucket, segments_owner};

/// A set (map) is written in segments once it holds this many members
/// (top-level fields).
pub const SEGMENTED_MIN: usize = 2 * eddy_dt::SEGMENT_MEMBERS;

/// A segmented value stays segmented down to this many entries; below, its
/// next full write stores it whole.
pub const SEGMENTED_KEEP: u64 = eddy_dt::SEGMENT_MEMBERS as u64;

/// The object format version byte of a root record.
const ROOT_RECORD_VERSION: u8 = 2;

/// Whether stored bytes are a root record.
pub fn is_root_record(bytes: &[u8]) -> bool {
    bytes.len() > 2 && bytes[..2] == codec::MAGIC && bytes[2] == ROOT_RECORD_VERSION
}

/// A root record, decoded: the object (its content's value the encoded
/// root) and the root.
#[derive(Clone, Debug)]
pub struct StoredRoot {
    pub object: RiakObject,
    pub root: Root,
}

/// Decodes a root record ([`is_root_record`]).
pub fn decode_root_record(bytes: &[u8]) -> Result<StoredRoot, KvError> {
    let mut v1 = bytes.to_vec();
    v1[2] = codec::VERSION;
    let object = codec::decode(&v1)?;
    let root = match object.siblings.as_slice() {
        [one] if !one.content.meta.deleted => Root::decode(&one.content.value)?,
        _ => return Err(corrupt("a root record holds one live content")),
    };
    Ok(StoredRoot { object, root })
}

/// The root record of `object`, whose one content's value is an encoded
/// [`Root`].
pub fn encode_root_record(object: &RiakObject) -> Vec<u8> {
    let mut bytes = codec::encode(object);
    bytes[2] = ROOT_RECORD_VERSION;
    bytes
}

/// The key of segment `id` of the value at `key`: the key, then the id
/// (big-endian u64), so one value's segments are contiguous.
pub fn segment_key(key: &[u8], id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 8);
    out.extend_from_slice(key);
    out.extend_from_slice(&id.to_be_bytes());
    out
}

/// Whether a bucket with these capabilities may hold segmented values.
pub fn allowed(capabilities: Capabilities) -> bool {
    capabilities.persistent && !capabilities.expires
}

/// Whether `object` should be written in segments: one live content of
/// `state`'s type, a set or a map, and `state` (that content's state) big
/// enough (`keep`: it was segmented, and may stay so down to
/// [`SEGMENTED_KEEP`]).
pub fn worth_segmenting(object: &RiakObject, state: &State, keep: bool) -> bool {
    let Some(len) = state.segmentable_len() else {
        return false;
    };
    let big = match keep {
        true => len as u64 >= SEGMENTED_KEEP,
        false => len >= SEGMENTED_MIN,
    };
    big && matches!(object.siblings.as_slice(), [one] if holds(one, state.datatype()))
}

fn holds(sibling: &eddy_object::Sibling, datatype: DataType) -> bool {
    let ct = sibling
        .content
        .meta
        .content_type
        .as_deref()
        .unwrap_or_default();
    !sibling.content.meta.deleted && DataType::from_content_type(ct) == Some(datatype)
}

/// Reads and checks the segments of `root` at table indexes `indexes`.
pub fn read_segments(
    backend: &dyn Backend,
    key: &StorageKey,
    root: &Root,
    indexes: &[usize],
) -> Result<Vec<(usize, Segment)>, KvError> {
    let bucket = segments_bucket(&key.bucket);
    indexes
        .iter()
        .map(|&i| {
            let bytes = backend
                .get(&bucket, &segment_key(&key.key, root.id(i)))?
                .ok_or_else(|| corrupt("a segment of a stored value is missing"))?;
            Ok((i, root.decode_segment(i, &bytes)?))
        })
        .collect()
}

/// The whole value a root stands for.
pub fn assemble_state(
    backend: &dyn Backend,
    key: &StorageKey,
    root: &Root,
) -> Result<State, KvError> {
    let all: Vec<usize> = (0..root.segment_count()).collect();
    let segments = read_segments(backend, key, root, &all)?;
    Ok(root.assemble(segments.into_iter().map(|(_, s)| s).collect())?)
}

/// The whole object a root record stands for: its content's value the
/// whole value's state.
pub fn assemble(
    backend: &dyn Backend,
    key: &StorageKey,
    stored: &StoredRoot,
) -> Result<RiakObject, KvError> {
    let state = assemble_state(backend, key, &stored.root)?;
    let mut object = stored.object.clone();
    object.siblings[0].content.value = state.encode();
    Ok(object)
}

/// Stored bytes as the rest of the node knows them: a root record's whole
/// object's encoding, any other record as stored. `bytes`, if read
/// without the key's lock, may be a root a write has replaced since (see
/// [`STALE_ROOT_TRIES`]).
pub fn whole_bytes(
    backend: &dyn Backend,
    key: &StorageKey,
    bytes: Vec<u8>,
) -> Result<Vec<u8>, KvError> {
    match assemble_fresh(backend, key, bytes)? {
        Fresh::Assembled(object) => Ok(codec::encode(&object)),
        Fresh::Plain(bytes) => Ok(bytes),
        Fresh::Gone(e) => Err(e),
    }
}

/// Reads and decodes the object stored under `key`, assembled if it is
/// segmented. A record that does not decode is an error, never an object.
pub fn read_object(backend: &dyn Backend, key: &StorageKey) -> Result<Option<RiakObject>, KvError> {
    let Some(bytes) = backend.get(&key.bucket, &key.key)? else {
        return Ok(None);
    };
    match assemble_fresh(backend, key, bytes)? {
        Fresh::Assembled(object) => Ok(Some(object)),
        Fresh::Plain(bytes) => Ok(Some(codec::decode(&bytes)?)),
        Fresh::Gone(_) => Ok(None),
    }
}

/// Reads of a segmented value that run without the key's lock (gets,
/// folds, handoff, a coordinator's whole-object catch-up) race with writes
/// that replace its segments: a root read just before such a write names
/// segments the write deletes once its new root is in place. A read whose
/// segments fail reads the key again and, if the root changed, assembles
/// the new one (whose segments were written before it), at most this many
/// times; a failure with the root unchanged is the stored value's.
pub const STALE_ROOT_TRIES: usize = 8;

/// What [`assemble_fresh`] found.
enum Fresh {
    /// A root, assembled.
    Assembled(RiakObject),
    /// A record that is no root, as stored.
    Plain(Vec<u8>),
    /// The key was deleted while a stale root failed: that root's error.
    Gone(KvError),
}

/// Assembles `bytes` if they are a root, reading the key again while a
/// failure may come from a root replaced since it was read.
fn assemble_fresh(
    backend: &dyn Backend,
    key: &StorageKey,
    mut bytes: Vec<u8>,
) -> Result<Fresh, KvError> {
    let mut tries = 0;
    loop {
        if !is_root_record(&bytes) {
            return Ok(Fresh::Plain(bytes));
        }
        let failed = match assemble(backend, key, &decode_root_record(&bytes)?) {
            Ok(object) => return Ok(Fresh::Assembled(object)),
            Err(e) => e,
        };
        tries += 1;
        match backend.get(&key.bucket, &key.key)? {
            Some(now) if now != bytes && tries < STALE_ROOT_TRIES => bytes = now,
            None => return Ok(Fresh::Gone(failed)),
            _ => return Err(failed),
        }
    }
}

/// Whether a stored record is a live object (a root record always is).
pub fn is_live_record(bytes: &[u8]) -> bool {
    is_root_record(bytes) || codec::decode(bytes).is_ok_and(|o| !o.is_deleted())
}

/// The version vector of a stored object (a root record's too).
pub fn version_of(bytes: &[u8]) -> Option<eddy_object::VersionVector> {
    match is_root_record(bytes) {
        true => decode_root_record(bytes).ok().map(|r| r.object.vv),
        false => codec::decode(bytes).ok().map(|o| o.vv),
    }
}

/// The object whose index entries a stored record carries, for replay's
/// index specs: `None` for a segment record (it has none).
pub fn indexed_object(bucket: &[u8], bytes: &[u8]) -> Result<Option<RiakObject>, KvError> {
    if segments_owner(bucket).is_some() {
        return Ok(None);
    }
    match is_root_record(bytes) {
        true => Ok(Some(decode_root_record(bytes)?.object)),
        false => Ok(Some(codec::decode(bytes)?)),
    }
}

fn corrupt(what: &'static str) -> KvError {
    KvError::DatatypeCorrupt(DecodeError(what))
}
