//! Objects, siblings, contents and metadata: plain data, no behaviour beyond
//! accessors. The rules that change objects live in [`crate::merge`].

use crate::vclock::{Dot, VersionVector};

/// A link to another object (Riak's `Link` header / `RpbLink`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    pub bucket: Vec<u8>,
    pub key: Vec<u8>,
    pub tag: Vec<u8>,
}

/// Byte-string pairs: user metadata, or index entries `(field, term)`.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// What Riak keeps beside a value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Metadata {
    pub content_type: Option<Vec<u8>>,
    pub charset: Option<Vec<u8>>,
    pub content_encoding: Option<Vec<u8>>,
    /// A random tag naming this version (`vtag`, the HTTP ETag).
    pub vtag: Vec<u8>,
    /// When the write happened, in microseconds since the Unix epoch.
    pub last_modified_us: u64,
    /// `X-Riak-Meta-*` pairs, in the order given.
    pub user_meta: Pairs,
    pub links: Vec<Link>,
    /// Secondary-index entries `(field, term)`, sorted and without repeats.
    pub indexes: Pairs,
    /// A tombstone: the content of a delete.
    pub deleted: bool,
}

/// One value with its metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Content {
    pub value: Vec<u8>,
    pub meta: Metadata,
}

impl Content {
    /// A content holding `value` with default metadata.
    pub fn new(value: impl Into<Vec<u8>>) -> Self {
        Content {
            value: value.into(),
            meta: Metadata::default(),
        }
    }

    /// A tombstone written at `last_modified_us`.
    pub fn tombstone(last_modified_us: u64) -> Self {
        let meta = Metadata {
            deleted: true,
            last_modified_us,
            ..Metadata::default()
        };
        Content {
            value: Vec::new(),
            meta,
        }
    }

    /// Sorts and de-duplicates the index entries (the stored form).
    pub fn normalise_indexes(&mut self) {
        self.meta.indexes.sort();
        self.meta.indexes.dedup();
    }
}

/// A content and the write that made it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sibling {
    pub dot: Dot,
    pub content: Content,
}

/// A stored object: its siblings and its causal history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RiakObject {
    /// Every write this object has seen; covers every sibling's dot.
    pub vv: VersionVector,
    /// Concurrent values, sorted by dot. Empty only for a never-written key.
    pub siblings: Vec<Sibling>,
}

impl RiakObject {
    /// True when every sibling is a tombstone (or there is none).
    pub fn is_deleted(&self) -> bool {
        self.siblings.iter().all(|s| s.content.meta.deleted)
    }

    /// The siblings' contents.
    pub fn contents(&self) -> impl Iterator<Item = &Content> {
        self.siblings.iter().map(|s| &s.content)
    }

    /// The union of the siblings' index entries, sorted and without repeats:
    /// what the storage layer files this object under.
    pub fn index_entries(&self) -> Pairs {
        let mut all: Vec<_> = self
            .siblings
            .iter()
            .filter(|s| !s.content.meta.deleted)
            .flat_map(|s| s.content.meta.indexes.iter().cloned())
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// The newest last-modified time among the siblings.
    pub fn last_modified_us(&self) -> u64 {
        self.contents()
            .map(|c| c.meta.last_modified_us)
            .max()
            .unwrap_or(0)
    }
}
