//! Secondary-index specs and range queries.
//!
//! An index entry is `(bucket, field, term, key)`. Fields and terms are bytes:
//! the query layer encodes `_int` terms so that byte order is numeric order.

/// A change to one key's index entries, written with the object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IndexSpec {
    /// Add the entry `(field, term)` for the object's key.
    Add { field: Vec<u8>, term: Vec<u8> },
    /// Remove the entry `(field, term)` for the object's key, if present.
    Remove { field: Vec<u8>, term: Vec<u8> },
}

impl IndexSpec {
    /// An add spec.
    pub fn add(field: &[u8], term: &[u8]) -> Self {
        IndexSpec::Add {
            field: field.to_vec(),
            term: term.to_vec(),
        }
    }

    /// A remove spec.
    pub fn remove(field: &[u8], term: &[u8]) -> Self {
        IndexSpec::Remove {
            field: field.to_vec(),
            term: term.to_vec(),
        }
    }
}

/// A range scan over one index field of one bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexQuery {
    pub bucket: Vec<u8>,
    pub field: Vec<u8>,
    /// Lowest term, inclusive.
    pub start: Vec<u8>,
    /// Highest term, inclusive.
    pub end: Vec<u8>,
    /// Resume strictly after this `(term, key)` (a continuation).
    pub start_after: Option<(Vec<u8>, Vec<u8>)>,
}

impl IndexQuery {
    /// Entries with `start <= term <= end`.
    pub fn range(bucket: &[u8], field: &[u8], start: &[u8], end: &[u8]) -> Self {
        IndexQuery {
            bucket: bucket.to_vec(),
            field: field.to_vec(),
            start: start.to_vec(),
            end: end.to_vec(),
            start_after: None,
        }
    }

    /// Entries whose term equals `term`.
    pub fn eq(bucket: &[u8], field: &[u8], term: &[u8]) -> Self {
        Self::range(bucket, field, term, term)
    }

    /// True when `(term, key)` lies in this query's range and after its
    /// continuation point.
    pub fn admits(&self, term: &[u8], key: &[u8]) -> bool {
        if term < self.start.as_slice() || term > self.end.as_slice() {
            return false;
        }
        match &self.start_after {
            Some((t, k)) => (term, key) > (t.as_slice(), k.as_slice()),
            None => true,
        }
    }
}
