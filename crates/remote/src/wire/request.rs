//! Requests to a vnode: put (coordinate or replicate), get, reap, fold.
//!
//! A filtered key listing's key filter travels as its JSON text, kept as
//! received, so a decoded request re-encodes to the same bytes; so does a
//! map fold's filter, and its phase travels as the JSON text it is.
//!
//! A put that carries its coordinator's bucket props entries is written
//! with the ops `coordinate with props` and `replicate with props`; one
//! without them with the ops of the first format, which still decode.
//!
//! A coordinated put's client write (context and content) travels as an
//! object in eddy_object's format with one sibling whose dot is 0.0: the
//! object's version vector is the context. Version vectors travel in
//! eddy_object's format too.

use std::sync::Arc;

use bytes::Bytes;
use eddy_object::{Actor, Dot, RiakObject, Sibling, VersionVector, codec};
use eddy_storage::limits::{
    BUCKET_BYTES_MAX, INDEX_FIELD_BYTES_MAX, INDEX_TERM_BYTES_MAX, KEY_BYTES_MAX,
};

use super::WireError;
use crate::codec::{Reader, Writer};
use eddy_ring::Partition;

use eddy_model::index::query::{IndexScan, REGEX_BYTES_MAX, ScanField};
use eddy_model::keyfilter::{self, KeyFilter};
use eddy_vnode::mapphase::MAP_PHASE_BYTES_MAX;
use eddy_vnode::msg::{
    Conditions, Coordinate, DtDelta, FoldKind, FoldRequest, IndexMapFold, MapFold, PutKind,
    PutRequest, StorageKey, SyncLevel, VnodeRequest, WritePolicy,
};

const OP_COORDINATE: u8 = 1;
const OP_REPLICATE: u8 = 2;
const OP_GET: u8 = 3;
const OP_REAP: u8 = 4;
const OP_FOLD: u8 = 5;
const OP_COORDINATE_PROPS: u8 = 6;
const OP_REPLICATE_PROPS: u8 = 7;
const OP_DT_DELTA: u8 = 11;
const OP_DT_DELTA_PROPS: u8 = 12;
const FOLD_KEYS: u8 = 1;
const FOLD_BUCKETS: u8 = 2;
const FOLD_INDEX: u8 = 3;
const FOLD_FILTERED_KEYS: u8 = 4;
const FOLD_MAP: u8 = 5;
const FOLD_INDEX_MAP: u8 = 6;
const SCAN_BUCKET: u8 = 0;
const SCAN_KEY: u8 = 1;
const SCAN_TERM: u8 = 2;
/// Longest bound of a 2i scan: a term, or a key for `$key`.
const TERM_MAX: usize = if INDEX_TERM_BYTES_MAX > KEY_BYTES_MAX {
    INDEX_TERM_BYTES_MAX
} else {
    KEY_BYTES_MAX
};
/// Longest bucket type name in a fold request.
const BUCKET_TYPE_BYTES_MAX: usize = 4096;

const POLICY_ALLOW_MULT: u8 = 1;
const POLICY_LWW: u8 = 2;
const POLICY_WRITE_ONCE: u8 = 4;
/// A ttl (u64 seconds) follows the sibling limit.
const POLICY_TTL: u8 = 8;
const IF_NONE_MATCH: u8 = 1;
const IF_NOT_MODIFIED: u8 = 2;
const DT_UPDATE: u8 = 4;

pub(super) fn is_put_op(op: u8) -> bool {
    matches!(
        op,
        OP_COORDINATE | OP_REPLICATE | OP_COORDINATE_PROPS | OP_REPLICATE_PROPS
    )
}

pub(super) fn is_get_op(op: u8) -> bool {
    op == OP_GET
}

pub(super) fn is_fold_op(op: u8) -> bool {
    op == OP_FOLD
}

/// Roughly the encoded size, to allocate once.
pub(super) fn size_hint(req: &VnodeRequest) -> usize {
    let key = |k: &StorageKey| 4 + k.bucket.len() + k.key.len();
    match req {
        VnodeRequest::Put(put) => {
            let body = match &put.kind {
                PutKind::Coordinate(c) => 64 + c.content.value.len(),
                PutKind::Replicate { encoded } => 4 + encoded.len(),
                PutKind::DtDelta(d) => 64 + d.object.len() + d.delta.len(),
            };
            let props = put.props.as_deref().map_or(0, super::props::size_hint);
            1 + key(&put.key) + 10 + props + body
        }
        VnodeRequest::Get { key: k } => 1 + key(k),
        VnodeRequest::Reap { key: k, .. } => 1 + key(k) + 64,
        VnodeRequest::Fold(f) => {
            let filter = match &f.kind {
                FoldKind::FilteredKeys { filter, .. } => filter.json().len(),
                FoldKind::Map(m) => {
                    m.bucket.len() + m.phase.len() + m.filter.as_ref().map_or(0, |f| f.json().len())
                }
                _ => 0,
            };
            64 + filter + 4 * f.ranges.as_ref().map_or(0, Vec::len)
        }
    }
}

pub(super) fn encode(w: &mut Writer, req: &VnodeRequest) -> Result<(), WireError> {
    match req {
        VnodeRequest::Put(put) => {
            let op = match (&put.kind, put.props.is_some()) {
                (PutKind::Coordinate(_), false) => OP_COORDINATE,
                (PutKind::Replicate { .. }, false) => OP_REPLICATE,
                (PutKind::Coordinate(_), true) => OP_COORDINATE_PROPS,
                (PutKind::Replicate { .. }, true) => OP_REPLICATE_PROPS,
                (PutKind::DtDelta(_), false) => OP_DT_DELTA,
                (PutKind::DtDelta(_), true) => OP_DT_DELTA_PROPS,
            };
            w.u8(op);
            key(w, &put.key)?;
            policy(w, put.policy);
            w.u8(put.sync as u8);
            if let Some(entries) = &put.props {
                super::props::encode(w, entries)?;
            }
            match &put.kind {
                PutKind::Coordinate(c) => coordinate(w, c),
                PutKind::Replicate { encoded } => Ok(w.blob("replicated object", encoded)?),
                PutKind::DtDelta(d) => dt_delta(w, d),
            }
        }
        VnodeRequest::Get { key: k } => {
            w.u8(OP_GET);
            key(w, k)
        }
        VnodeRequest::Reap { key: k, tombstone } => {
            w.u8(OP_REAP);
            key(w, k)?;
            Ok(w.blob("tombstone version vector", &codec::encode_vv(tombstone))?)
        }
        VnodeRequest::Fold(f) => {
            w.u8(OP_FOLD);
            fold(w, f)
        }
    }
}

fn fold(w: &mut Writer, f: &FoldRequest) -> Result<(), WireError> {
    w.u32(f.ring_size);
    match &f.kind {
        FoldKind::Keys { bucket } => {
            w.u8(FOLD_KEYS);
            w.short("bucket", bucket, BUCKET_BYTES_MAX)?;
        }
        FoldKind::Buckets { bucket_type } => {
            w.u8(FOLD_BUCKETS);
            w.short("bucket type", bucket_type.as_bytes(), BUCKET_TYPE_BYTES_MAX)?;
        }
        FoldKind::Index(scan) => {
            w.u8(FOLD_INDEX);
            index_scan(w, scan)?;
        }
        FoldKind::FilteredKeys { bucket, filter } => {
            w.u8(FOLD_FILTERED_KEYS);
            w.short("bucket", bucket, BUCKET_BYTES_MAX)?;
            let json = filter.json().as_bytes();
            w.short("key filter", json, keyfilter::JSON_BYTES_MAX)?;
        }
        FoldKind::Map(map) => {
            w.u8(FOLD_MAP);
            map_fold(w, map)?;
        }
        FoldKind::IndexMap(map) => {
            w.u8(FOLD_INDEX_MAP);
            index_scan(w, &map.scan)?;
            check_phase(map.phase.len())?;
            w.blob("map phase", &map.phase)?;
        }
    }
    match &f.ranges {
        None => w.flag(false),
        Some(ranges) => {
            w.flag(true);
            check_ranges(ranges.len())?;
            w.u32(ranges.len() as u32);
            ranges.iter().for_each(|p| w.u32(p.0));
        }
    }
    Ok(())
}

fn read_fold(r: &mut Reader<'_>) -> Result<FoldRequest, WireError> {
    let ring_size = r.u32()?;
    let kind = match r.u8()? {
        FOLD_KEYS => FoldKind::Keys {
            bucket: r.short("bucket", BUCKET_BYTES_MAX)?,
        },
        FOLD_BUCKETS => FoldKind::Buckets {
            bucket_type: r.text("bucket type", BUCKET_TYPE_BYTES_MAX)?,
        },
        FOLD_INDEX => FoldKind::Index(read_index_scan(r)?),
        FOLD_FILTERED_KEYS => FoldKind::FilteredKeys {
            bucket: r.short("bucket", BUCKET_BYTES_MAX)?,
            filter: read_key_filter(r)?,
        },
        FOLD_MAP => FoldKind::Map(read_map_fold(r)?),
        FOLD_INDEX_MAP => {
            let scan = read_index_scan(r)?;
            let phase = r.blob("map phase")?;
            check_phase(phase.len())?;
            FoldKind::IndexMap(IndexMapFold { scan, phase })
        }
        value => {
            return Err(WireError::BadByte {
                what: "fold kind",
                value,
            });
        }
    };
    let ranges = match r.flag()? {
        false => None,
        true => {
            let n = r.u32()? as usize;
            check_ranges(n)?;
            Some(
                (0..n)
                    .map(|_| r.u32().map(Partition))
                    .collect::<Result<_, _>>()?,
            )
        }
    };
    Ok(FoldRequest {
        kind,
        ring_size,
        ranges,
    })
}

/// A key filter as its JSON text, parsed and checked as the API layer
/// parses a client's (the sender's parse is not trusted).
fn read_key_filter(r: &mut Reader<'_>) -> Result<Arc<KeyFilter>, WireError> {
    let json = r.text("key filter", keyfilter::JSON_BYTES_MAX)?;
    KeyFilter::from_json_text(&json)
        .map(Arc::new)
        .map_err(|e| WireError::BadKeyFilter(e.to_string()))
}

fn map_fold(w: &mut Writer, map: &MapFold) -> Result<(), WireError> {
    w.short("bucket", &map.bucket, BUCKET_BYTES_MAX)?;
    match &map.filter {
        None => w.flag(false),
        Some(filter) => {
            w.flag(true);
            let json = filter.json().as_bytes();
            w.short("key filter", json, keyfilter::JSON_BYTES_MAX)?;
        }
    }
    check_phase(map.phase.len())?;
    Ok(w.blob("map phase", &map.phase)?)
}

fn read_map_fold(r: &mut Reader<'_>) -> Result<MapFold, WireError> {
    let bucket = r.short("bucket", BUCKET_BYTES_MAX)?;
    let filter = match r.flag()? {
        false => None,
        true => Some(read_key_filter(r)?),
    };
    let phase = r.blob("map phase")?;
    check_phase(phase.len())?;
    Ok(MapFold {
        bucket,
        filter,
        phase,
    })
}

fn check_phase(len: usize) -> Result<(), WireError> {
    match len <= MAP_PHASE_BYTES_MAX {
        true => Ok(()),
        false => Err(WireError::TooLong {
            what: "map phase",
            len,
            max: MAP_PHASE_BYTES_MAX,
        }),
    }
}

/// A fold names at most a whole ring's ranges.
fn check_ranges(n: usize) -> Result<(), WireError> {
    let max = eddy_ring::RING_SIZE_MAX as usize;
    match n <= max {
        true => Ok(()),
        false => Err(WireError::TooLong {
            what: "fold ranges",
            len: n,
            max,
        }),
    }
}

/// A set or map operation's delta: the version it applied to, the new version
/// (its value empty) and the delta.
pub(super) fn dt_delta(w: &mut Writer, d: &DtDelta) -> Result<(), WireError> {
    w.blob("delta version", &codec::encode_vv(&d.before))?;
    w.blob("delta object", &d.object)?;
    Ok(w.blob("delta", &d.delta)?)
}

pub(super) fn read_dt_delta(r: &mut Reader<'_>) -> Result<DtDelta, WireError> {
    let before = r.blob("delta version")?;
    let before = codec::decode_vv(&before).map_err(|_| WireError::Malformed("delta version"))?;
    Ok(DtDelta {
        before,
        object: r.blob("delta object")?,
        delta: r.blob("delta")?,
    })
}

pub(super) fn decode(r: &mut Reader<'_>) -> Result<VnodeRequest, WireError> {
    let op = r.u8()?;
    match op {
        OP_COORDINATE | OP_REPLICATE | OP_COORDINATE_PROPS | OP_REPLICATE_PROPS | OP_DT_DELTA
        | OP_DT_DELTA_PROPS => {
            let key = read_key(r)?;
            let policy = read_policy(r)?;
            let sync = read_sync(r)?;
            let props = match op {
                OP_COORDINATE_PROPS | OP_REPLICATE_PROPS | OP_DT_DELTA_PROPS => {
                    Some(Arc::new(super::props::decode(r)?))
                }
                _ => None,
            };
            let kind = match op {
                OP_COORDINATE | OP_COORDINATE_PROPS => {
                    PutKind::Coordinate(Box::new(read_coordinate(r)?))
                }
                OP_DT_DELTA | OP_DT_DELTA_PROPS => PutKind::DtDelta(Box::new(read_dt_delta(r)?)),
                _ => PutKind::Replicate {
                    encoded: r.blob("replicated object")?,
                },
            };
            Ok(VnodeRequest::Put(PutRequest {
                key,
                kind,
                policy,
                sync,
                props,
            }))
        }
        OP_GET => Ok(VnodeRequest::Get { key: read_key(r)? }),
        OP_REAP => {
            let key = read_key(r)?;
            let tombstone = read_vv(r, "tombstone version vector")?;
            Ok(VnodeRequest::Reap { key, tombstone })
        }
        OP_FOLD => Ok(VnodeRequest::Fold(read_fold(r)?)),
        value => Err(WireError::BadByte { what: "op", value }),
    }
}

fn key(w: &mut Writer, k: &StorageKey) -> Result<(), WireError> {
    w.short("bucket", &k.bucket, BUCKET_BYTES_MAX)?;
    Ok(w.short("key", &k.key, KEY_BYTES_MAX)?)
}

fn read_key(r: &mut Reader<'_>) -> Result<StorageKey, WireError> {
    Ok(StorageKey {
        bucket: r.short("bucket", BUCKET_BYTES_MAX)?,
        key: r.short("key", KEY_BYTES_MAX)?,
    })
}

fn policy(w: &mut Writer, p: WritePolicy) {
    let mut flags = 0;
    if p.allow_mult {
        flags |= POLICY_ALLOW_MULT;
    }
    if p.last_write_wins {
        flags |= POLICY_LWW;
    }
    if p.write_once {
        flags |= POLICY_WRITE_ONCE;
    }
    if p.ttl_secs != 0 {
        flags |= POLICY_TTL;
    }
    w.u8(flags);
    w.u64(p.max_siblings as u64);
    if p.ttl_secs != 0 {
        w.u64(p.ttl_secs);
    }
}

fn read_policy(r: &mut Reader<'_>) -> Result<WritePolicy, WireError> {
    let flags = r.u8()?;
    if flags & !(POLICY_ALLOW_MULT | POLICY_LWW | POLICY_WRITE_ONCE | POLICY_TTL) != 0 {
        return Err(WireError::BadByte {
            what: "policy flags",
            value: flags,
        });
    }
    Ok(WritePolicy {
        allow_mult: flags & POLICY_ALLOW_MULT != 0,
        last_write_wins: flags & POLICY_LWW != 0,
        write_once: flags & POLICY_WRITE_ONCE != 0,
        max_siblings: r.count()?,
        ttl_secs: match flags & POLICY_TTL {
            0 => 0,
            _ => r.u64()?,
        },
    })
}

fn coordinate(w: &mut Writer, c: &Coordinate) -> Result<(), WireError> {
    let write = RiakObject {
        vv: c.context.clone(),
        siblings: vec![Sibling {
            dot: NO_DOT,
            content: c.content.clone(),
        }],
    };
    w.blob("client write", &codec::encode(&write))?;
    let mut flags = 0;
    if c.conditions.if_none_match {
        flags |= IF_NONE_MATCH;
    }
    if c.conditions.if_not_modified.is_some() {
        flags |= IF_NOT_MODIFIED;
    }
    if c.update.is_some() {
        flags |= DT_UPDATE;
    }
    w.u8(flags);
    if let Some(vv) = &c.conditions.if_not_modified {
        w.blob("if_not_modified version vector", &codec::encode_vv(vv))?;
    }
    match &c.update {
        Some(u) => Ok(w.blob("data type update", &super::dt_update::encode(u))?),
        None => Ok(()),
    }
}

/// The dot of a client's write, which has none until a vnode applies it.
const NO_DOT: Dot = Dot {
    actor: Actor(0),
    counter: 0,
};

fn read_coordinate(r: &mut Reader<'_>) -> Result<Coordinate, WireError> {
    let blob = r.blob("client write")?;
    let write = codec::decode(&blob).map_err(|source| WireError::BadObject {
        what: "client write",
        source,
    })?;
    let RiakObject { vv, mut siblings } = write;
    let content = match siblings.pop() {
        Some(s) if siblings.is_empty() && s.dot == NO_DOT => s.content,
        _ => {
            return Err(WireError::Malformed(
                "a client write has one sibling, dot 0.0",
            ));
        }
    };
    let flags = r.u8()?;
    if flags & !(IF_NONE_MATCH | IF_NOT_MODIFIED | DT_UPDATE) != 0 {
        return Err(WireError::BadByte {
            what: "condition flags",
            value: flags,
        });
    }
    let if_not_modified = match flags & IF_NOT_MODIFIED != 0 {
        true => Some(read_vv(r, "if_not_modified version vector")?),
        false => None,
    };
    let update = match flags & DT_UPDATE != 0 {
        true => Some(Box::new(super::dt_update::decode(
            &r.blob("data type update")?,
        )?)),
        false => None,
    };
    Ok(Coordinate {
        context: vv,
        content,
        conditions: Conditions {
            if_none_match: flags & IF_NONE_MATCH != 0,
            if_not_modified,
        },
        update,
    })
}

fn read_vv(r: &mut Reader<'_>, what: &'static str) -> Result<VersionVector, WireError> {
    let blob: Bytes = r.blob(what)?;
    codec::decode_vv(&blob).map_err(|source| WireError::BadObject { what, source })
}

/// The put's sync level: 0 written, 1 durable, 2 on disk.
fn read_sync(r: &mut Reader<'_>) -> Result<SyncLevel, WireError> {
    match r.u8()? {
        0 => Ok(SyncLevel::Written),
        1 => Ok(SyncLevel::Durable),
        2 => Ok(SyncLevel::Disk),
        value => Err(WireError::BadByte {
            what: "sync level",
            value,
        }),
    }
}

/// A 2i scan: bucket, field (tag, and name for an index field), bounds,
/// an optional continuation point, regex and maximum.
fn index_scan(w: &mut Writer, s: &IndexScan) -> Result<(), WireError> {
    w.short("bucket", &s.bucket, BUCKET_BYTES_MAX)?;
    match &s.field {
        ScanField::Bucket => w.u8(SCAN_BUCKET),
        ScanField::Key => w.u8(SCAN_KEY),
        ScanField::Term(f) => {
            w.u8(SCAN_TERM);
            w.short("index field", f, INDEX_FIELD_BYTES_MAX)?;
        }
    }
    w.short("index start", &s.start, TERM_MAX)?;
    w.short("index end", &s.end, TERM_MAX)?;
    w.flag(s.after.is_some());
    if let Some((t, k)) = &s.after {
        w.short("continuation term", t, TERM_MAX)?;
        w.short("continuation key", k, KEY_BYTES_MAX)?;
    }
    w.flag(s.regex.is_some());
    if let Some(re) = &s.regex {
        w.short("term regex", re.as_bytes(), REGEX_BYTES_MAX)?;
    }
    w.flag(s.max.is_some());
    w.u32(s.max.unwrap_or(0));
    Ok(())
}

fn read_index_scan(r: &mut Reader<'_>) -> Result<IndexScan, WireError> {
    let bucket = r.short("bucket", BUCKET_BYTES_MAX)?;
    let field = match r.u8()? {
        SCAN_BUCKET => ScanField::Bucket,
        SCAN_KEY => ScanField::Key,
        SCAN_TERM => ScanField::Term(r.short("index field", INDEX_FIELD_BYTES_MAX)?),
        value => {
            return Err(WireError::BadByte {
                what: "index scan field",
                value,
            });
        }
    };
    let start = r.short("index start", TERM_MAX)?;
    let end = r.short("index end", TERM_MAX)?;
    let after = match r.flag()? {
        true => Some((
            r.short("continuation term", TERM_MAX)?,
            r.short("continuation key", KEY_BYTES_MAX)?,
        )),
        false => None,
    };
    let regex = match r.flag()? {
        true => Some(r.text("term regex", REGEX_BYTES_MAX)?),
        false => None,
    };
    let has_max = r.flag()?;
    let max = r.u32()?;
    Ok(IndexScan {
        bucket,
        field,
        start,
        end,
        after,
        regex,
        max: has_max.then_some(max),
    })
}
