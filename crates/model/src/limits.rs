//! Limits on the metadata a client attaches to an object: usermeta pairs,
//! links and secondary-index entries; and on multi-key requests
//! ([`MultiLimits`], design note 016).
//!
//! Invariant: every content the kv layer stores on a client's behalf has
//! passed [`MetaLimits::check`], so no stored object carries more entries or
//! bytes of each kind than the node allows, and the API front ends can
//! always render it (HTTP turns each entry into a header).

use eddy_object::Metadata;

use crate::error::KvError;

/// The most entries and bytes one kind of metadata may hold per object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub entries: usize,
    pub bytes: usize,
}

/// The default for each kind: 1000 entries and 64 KiB.
pub const DEFAULT_LIMIT: Limit = Limit {
    entries: 1000,
    bytes: 64 * 1024,
};

/// Per-object limits on usermeta, links and index entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaLimits {
    pub usermeta: Limit,
    pub links: Limit,
    pub index: Limit,
}

impl Default for MetaLimits {
    fn default() -> Self {
        MetaLimits {
            usermeta: DEFAULT_LIMIT,
            links: DEFAULT_LIMIT,
            index: DEFAULT_LIMIT,
        }
    }
}

impl MetaLimits {
    /// Refuses metadata with more entries or bytes of a kind than allowed.
    pub fn check(&self, meta: &Metadata) -> Result<(), KvError> {
        let usermeta = meta.user_meta.iter().map(|(k, v)| k.len() + v.len());
        check_kind(
            "usermeta",
            meta.user_meta.len(),
            usermeta.sum(),
            self.usermeta,
        )?;
        let links = meta
            .links
            .iter()
            .map(|l| l.bucket.len() + l.key.len() + l.tag.len());
        check_kind("links", meta.links.len(), links.sum(), self.links)?;
        let index = meta.indexes.iter().map(|(f, t)| f.len() + t.len());
        check_kind("index entries", meta.indexes.len(), index.sum(), self.index)?;
        check_index_entries(meta)
    }
}

/// Bounds on one multi-key request (design note 016).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiLimits {
    /// Most keys or objects one request may name (`multi.keys_max`).
    pub keys_max: usize,
    /// Batched vnode messages one request has in flight to each node at
    /// once (`multi.concurrency`): a wave of keys takes as many keys as
    /// need at most this many batches to each node.
    pub concurrency: usize,
    /// Object bytes (values, usermeta, index entries) one answer may hold
    /// (`multi.answer_bytes_max`); found objects past it are answered
    /// [`KvError::AnswerTooLarge`].
    pub answer_bytes_max: usize,
    /// Most vnode requests in one batched message (at most
    /// [`BATCH_ITEMS_MAX`]).
    pub batch_items_max: usize,
    /// Bytes after which a batched message takes no further request (one
    /// larger request travels alone).
    pub batch_bytes_max: usize,
}

/// Most items in one batched vnode message, and most item replies in one
/// batch reply (the node-to-node wire refuses more).
pub const BATCH_ITEMS_MAX: usize = 1024;

/// Most keys or objects a multi-key request may name by default.
pub const MULTI_KEYS_MAX: usize = 1000;

impl Default for MultiLimits {
    fn default() -> Self {
        MultiLimits {
            keys_max: MULTI_KEYS_MAX,
            concurrency: 16,
            answer_bytes_max: 64 * 1024 * 1024,
            batch_items_max: 256,
            batch_bytes_max: 4 * 1024 * 1024,
        }
    }
}

fn check_kind(what: &'static str, count: usize, size: usize, limit: Limit) -> Result<(), KvError> {
    if count > limit.entries {
        return Err(KvError::TooMany {
            what,
            count,
            max: limit.entries,
        });
    }
    if size > limit.bytes {
        return Err(KvError::TooLarge {
            what,
            size,
            max: limit.bytes,
        });
    }
    Ok(())
}

/// Each index field and term within what every backend stores.
fn check_index_entries(meta: &Metadata) -> Result<(), KvError> {
    use eddy_storage::limits::{INDEX_FIELD_BYTES_MAX, INDEX_TERM_BYTES_MAX};
    for (field, term) in &meta.indexes {
        for (what, size, max) in [
            ("index field", field.len(), INDEX_FIELD_BYTES_MAX),
            ("index term", term.len(), INDEX_TERM_BYTES_MAX),
        ] {
            if size > max {
                return Err(KvError::TooLarge { what, size, max });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::Link;

    fn limits() -> MetaLimits {
        let l = Limit {
            entries: 2,
            bytes: 12,
        };
        MetaLimits {
            usermeta: l,
            links: l,
            index: l,
        }
    }

    #[test]
    fn counts_each_kind() {
        let mut meta = Metadata {
            user_meta: vec![(b"a".to_vec(), vec![]); 3],
            ..Metadata::default()
        };
        let err = limits().check(&meta).unwrap_err();
        assert!(matches!(
            err,
            KvError::TooMany {
                what: "usermeta",
                count: 3,
                max: 2
            }
        ));
        meta.user_meta.clear();
        meta.links = vec![
            Link {
                bucket: b"b".to_vec(),
                key: b"0123456789ab".to_vec(),
                tag: vec![],
            };
            1
        ];
        let err = limits().check(&meta).unwrap_err();
        assert!(matches!(
            err,
            KvError::TooLarge {
                what: "links",
                size: 13,
                max: 12
            }
        ));
    }

    #[test]
    fn at_the_limit_is_accepted() {
        let meta = Metadata {
            indexes: vec![(b"i_bin".to_vec(), b"v".to_vec()); 2],
            user_meta: vec![(b"0123".to_vec(), b"4".to_vec()); 2],
            ..Metadata::default()
        };
        limits().check(&meta).unwrap();
    }
}
