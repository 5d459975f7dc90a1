//! A vnode's [`KvError`] on the wire: a kind byte and the fields the API
//! maps to status codes; each kind decodes to the closest [`KvError`].
//!
//! Errors a vnode never returns (quorum, registry, limits checked at the
//! coordinator) travel as `other` with their text. The text of `other`
//! and `storage` decodes into a [`StorageError::Engine`] error named
//! [`OTHER_ENGINE`] or [`STORAGE_ENGINE`], which encodes back to the same
//! kind and text, so a decoded error re-encodes to the same bytes (but
//! for a `too_large` naming a field this code does not know, which
//! becomes `other`, and the retired kind [`INDEX_FULL_RETIRED`], which
//! becomes `storage`).

use eddy_object::DecodeError;
use eddy_storage::{Resource, StorageError};

use super::{TEXT_BYTES_MAX, WireError};
use crate::codec::{Reader, Writer};
use eddy_model::error::KvError;
use eddy_model::error::Signal;

const OTHER: u8 = 0;
const EXHAUSTED: u8 = 1;
const MATCH_FOUND: u8 = 2;
const MODIFIED: u8 = 3;
const TOO_MANY_SIBLINGS: u8 = 4;
const DAMAGED: u8 = 5;
const SHUTTING_DOWN: u8 = 6;
const SYNC_FAILED: u8 = 7;
const CORRUPT: u8 = 8;
const STORAGE: u8 = 9;
const POISONED: u8 = 10;
const UNREACHABLE: u8 = 11;
const TIMEOUT: u8 = 12;
const TOO_LARGE: u8 = 13;
const NOT_HOSTED: u8 = 14;
const VNODE_START: u8 = 15;
const CLOSED: u8 = 16;
const PROPS_NEWER: u8 = 17;
/// Retired, never written and never given another meaning: `index_full`
/// (`u64 bytes, u64 max`), sent by nodes whose bitcask bounded an index
/// kept in memory. Such a node's reply still decodes, into a `storage`
/// error saying what it refused.
const INDEX_FULL_RETIRED: u8 = 18;
const BEHIND: u8 = 19;

pub use eddy_model::error::{OTHER_ENGINE, STORAGE_ENGINE};

/// What `TooLarge` names, as the storage and kv layers spell it.
const TOO_LARGE_WHATS: &[&str] = &[
    "bucket",
    "key",
    "value",
    "object",
    "index specs",
    "index field",
    "index term",
    "usermeta",
    "links",
    "index entries",
    "record",
];

pub(super) fn encode(w: &mut Writer, e: &KvError) {
    match e {
        KvError::Storage(s) => storage(w, s),
        KvError::MatchFound => w.u8(MATCH_FOUND),
        KvError::Modified => w.u8(MODIFIED),
        KvError::TooManySiblings { count, max } => {
            w.u8(TOO_MANY_SIBLINGS);
            w.u64(*count as u64);
            w.u64(*max as u64);
        }
        KvError::Damaged(p) => {
            w.u8(DAMAGED);
            w.u32(*p);
        }
        KvError::Signal(Signal::NotHosted(p)) => {
            w.u8(NOT_HOSTED);
            w.u32(*p);
        }
        KvError::VnodeStart(m) => text(w, VNODE_START, m),
        KvError::ShuttingDown => w.u8(SHUTTING_DOWN),
        KvError::SyncFailed(m) => text(w, SYNC_FAILED, m),
        KvError::Corrupt(d) => corrupt(w, d),
        KvError::Unreachable(m) => text(w, UNREACHABLE, m),
        KvError::Timeout => w.u8(TIMEOUT),
        KvError::Signal(Signal::Behind) => w.u8(BEHIND),
        KvError::TooLarge { what, size, max } => too_large(w, what, *size, *max),
        KvError::Signal(Signal::PropsNewer(entries)) if super::props::fits(entries) => {
            w.u8(PROPS_NEWER);
            // Cannot fail: `fits` checked every length.
            let _ = super::props::encode(w, entries);
        }
        other => text(w, OTHER, &other.to_string()),
    }
}

fn storage(w: &mut Writer, e: &StorageError) {
    match e {
        StorageError::Exhausted { resource, detail } => {
            w.u8(EXHAUSTED);
            w.u8(resource_code(*resource));
            w.text(detail, TEXT_BYTES_MAX);
        }
        StorageError::Poisoned(m) => text(w, POISONED, m),
        StorageError::Closed => w.u8(CLOSED),
        StorageError::TooLarge { what, size, max } => too_large(w, what, *size, *max),
        StorageError::Engine { engine, source } if *engine == OTHER_ENGINE => {
            text(w, OTHER, &source.to_string());
        }
        StorageError::Engine { engine, source } if *engine == STORAGE_ENGINE => {
            text(w, STORAGE, &source.to_string());
        }
        other => text(w, STORAGE, &other.to_string()),
    }
}

fn text(w: &mut Writer, kind: u8, m: &str) {
    w.u8(kind);
    w.text(m, TEXT_BYTES_MAX);
}

fn too_large(w: &mut Writer, what: &str, size: usize, max: usize) {
    w.u8(TOO_LARGE);
    w.text(what, TEXT_BYTES_MAX);
    w.u64(size as u64);
    w.u64(max as u64);
}

fn corrupt(w: &mut Writer, d: &DecodeError) {
    let (code, version) = match d {
        DecodeError::BadMagic => (1, 0),
        DecodeError::UnknownVersion(v) => (2, *v),
        DecodeError::Truncated => (3, 0),
        DecodeError::BadVarint => (4, 0),
        DecodeError::BadFlag => (5, 0),
        DecodeError::Trailing => (6, 0),
        other => return text(w, OTHER, &KvError::Corrupt(other.clone()).to_string()),
    };
    w.u8(CORRUPT);
    w.u8(code);
    w.u8(version);
}

fn resource_code(r: Resource) -> u8 {
    match r {
        Resource::Descriptors => 1,
        Resource::Disk => 2,
        Resource::Memory => 3,
    }
}

pub(super) fn decode(r: &mut Reader<'_>) -> Result<KvError, WireError> {
    let text = |r: &mut Reader<'_>| r.text("error text", TEXT_BYTES_MAX);
    Ok(match r.u8()? {
        OTHER => engine(OTHER_ENGINE, text(r)?),
        EXHAUSTED => {
            let resource = match r.u8()? {
                1 => Resource::Descriptors,
                2 => Resource::Disk,
                3 => Resource::Memory,
                value => return Err(bad("resource", value)),
            };
            let detail = text(r)?;
            KvError::Storage(StorageError::Exhausted { resource, detail })
        }
        MATCH_FOUND => KvError::MatchFound,
        MODIFIED => KvError::Modified,
        TOO_MANY_SIBLINGS => KvError::TooManySiblings {
            count: r.count()?,
            max: r.count()?,
        },
        DAMAGED => KvError::Damaged(r.u32()?),
        SHUTTING_DOWN => KvError::ShuttingDown,
        SYNC_FAILED => KvError::SyncFailed(text(r)?),
        CORRUPT => KvError::Corrupt(decode_error(r.u8()?, r.u8()?)?),
        STORAGE => engine(STORAGE_ENGINE, text(r)?),
        POISONED => KvError::Storage(StorageError::Poisoned(text(r)?)),
        UNREACHABLE => KvError::Unreachable(text(r)?),
        TIMEOUT => KvError::Timeout,
        BEHIND => KvError::Signal(Signal::Behind),
        TOO_LARGE => {
            let (what, size, max) = (text(r)?, r.count()?, r.count()?);
            match TOO_LARGE_WHATS.iter().find(|w| **w == what) {
                Some(what) => KvError::TooLarge { what, size, max },
                None => engine(
                    OTHER_ENGINE,
                    format!("{what} of {size} bytes exceeds the limit of {max}"),
                ),
            }
        }
        NOT_HOSTED => KvError::Signal(Signal::NotHosted(r.u32()?)),
        VNODE_START => KvError::VnodeStart(text(r)?),
        CLOSED => KvError::Storage(StorageError::Closed),
        PROPS_NEWER => KvError::Signal(Signal::PropsNewer(Box::new(super::props::decode(r)?))),
        INDEX_FULL_RETIRED => {
            let (bytes, max) = (r.u64()?, r.u64()?);
            engine(
                STORAGE_ENGINE,
                format!(
                    "index memory limit reached: the term index would hold {bytes} bytes, \
                     over its limit of {max}"
                ),
            )
        }
        value => return Err(bad("error kind", value)),
    })
}

fn engine(engine: &'static str, text: String) -> KvError {
    KvError::Storage(StorageError::Engine {
        engine,
        source: text.into(),
    })
}

fn decode_error(code: u8, version: u8) -> Result<DecodeError, WireError> {
    let e = match (code, version) {
        (1, 0) => DecodeError::BadMagic,
        (2, v) => DecodeError::UnknownVersion(v),
        (3, 0) => DecodeError::Truncated,
        (4, 0) => DecodeError::BadVarint,
        (5, 0) => DecodeError::BadFlag,
        (6, 0) => DecodeError::Trailing,
        (value, _) => return Err(bad("corrupt object code", value)),
    };
    Ok(e)
}

fn bad(what: &'static str, value: u8) -> WireError {
    WireError::BadByte { what, value }
}
