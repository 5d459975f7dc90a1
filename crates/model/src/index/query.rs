//! A 2i query as a client asks it ([`IndexRequest`]), the scan each vnode
//! runs for it ([`IndexScan`], plain data that crosses the wire), and the
//! page that answers it ([`IndexPage`]).
//!
//! Riak's rules, kept here in one place: field names are lowercased;
//! `$bucket` lists every live key of the bucket and `$key` ranges over
//! keys; an equality query is a range of one term; terms come back only
//! for range queries on `_bin`/`_int` fields and only when asked; a
//! regular expression filters terms (keys for `$key`/`$bucket`) and is
//! refused on `_int` fields; results are ordered by (term, key), `_int`
//! terms numerically; a continuation is issued when a page holds exactly
//! `max_results` entries.
//!
//! Invariant: the pages of a query, each started from the continuation of
//! the one before, list every matching entry present throughout exactly
//! once, in order.

use std::time::Duration;

use eddy_storage::limits::{INDEX_FIELD_BYTES_MAX, INDEX_TERM_BYTES_MAX, KEY_BYTES_MAX};

use super::continuation::{self, Continuation};
use super::term::{self, FieldKind, int_bytes, parse_int};
use crate::error::KvError;
use crate::request::BucketRef;

/// The most entries a query without `max_results` may return; past it
/// the query is refused and asks for pagination.
pub const UNPAGED_RESULTS_MAX: usize = 2_000_000;
/// The longest regular expression accepted, in bytes.
pub const REGEX_BYTES_MAX: usize = 1024;
/// The memory a compiled regular expression may take.
pub const REGEX_COMPILED_MAX: usize = 1 << 20;

/// The pseudo-field of every key in a bucket.
pub const BUCKET_FIELD: &[u8] = b"$bucket";
/// The pseudo-field ranging over keys.
pub const KEY_FIELD: &[u8] = b"$key";

/// A 2i query as a client sends it (HTTP path and parameters, or
/// `RpbIndexReq`), terms as the client spells them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexRequest {
    pub field: Vec<u8>,
    /// The term of an equality query, or the low end of a range.
    pub start: Vec<u8>,
    /// The high end of a range; `None` for an equality query.
    pub end: Option<Vec<u8>>,
    pub return_terms: bool,
    pub max_results: Option<u32>,
    pub continuation: Option<Vec<u8>>,
    pub term_regex: Option<String>,
    /// `None`: the node's default; zero: no limit (as Riak reads 0).
    pub timeout: Option<Duration>,
}

/// Which entries a vnode scans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanField {
    /// Every live key of the bucket (the term is the key).
    Bucket,
    /// Live keys in `start..=end` (the term is the key).
    Key,
    /// Index entries of this field.
    Term(Vec<u8>),
}

/// What one vnode scans for a query: plain data, terms as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexScan {
    /// The storage bucket.
    pub bucket: Vec<u8>,
    pub field: ScanField,
    /// Inclusive bounds, as stored (ignored for [`ScanField::Bucket`]).
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    /// Only entries strictly after this (term, key).
    pub after: Option<(Vec<u8>, Vec<u8>)>,
    /// Entries whose term (or key) this matches, unanchored.
    pub regex: Option<String>,
    /// At most this many entries (the smallest).
    pub max: Option<u32>,
}

/// A query ready to run: its scan and how to answer.
#[derive(Clone, Debug)]
pub struct PreparedQuery {
    pub scan: IndexScan,
    pub return_terms: bool,
    pub timeout: Option<Duration>,
    fingerprint: u64,
}

/// One page of answers, terms as a client reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexPage {
    /// `(term, key)` in order; the term is empty unless terms were asked
    /// for and the query returns them.
    pub results: Vec<(Vec<u8>, Vec<u8>)>,
    pub return_terms: bool,
    /// Where the next page starts, when this one is full.
    pub continuation: Option<Vec<u8>>,
}

impl IndexRequest {
    /// Checks the request and turns it into the scan vnodes run.
    pub fn prepare(&self, bucket: &BucketRef, generation: u64) -> Result<PreparedQuery, KvError> {
        self.check_sizes()?;
        let field = self.field.to_ascii_lowercase();
        let (scan_field, start, end) = self.bounds(&field)?;
        if let Some(re) = &self.term_regex {
            check_regex(&scan_field, re)?;
        }
        if self.max_results == Some(0) {
            return Err(bad("max_results must be a positive integer"));
        }
        let is_range = self.end.is_some();
        let return_terms =
            self.return_terms && is_range && matches!(scan_field, ScanField::Term(_));
        let mut scan = IndexScan {
            bucket: bucket.storage_bucket_at(generation),
            field: scan_field,
            start,
            end,
            after: None,
            regex: self.term_regex.clone(),
            max: self.max_results,
        };
        let fingerprint = continuation::fingerprint(&scan);
        if let Some(raw) = &self.continuation {
            let c = Continuation::decode(raw).map_err(bad)?;
            if c.fingerprint != fingerprint {
                return Err(bad("the continuation belongs to another query"));
            }
            scan.after = Some((c.term, c.key));
        }
        Ok(PreparedQuery {
            scan,
            return_terms,
            timeout: self.timeout,
            fingerprint,
        })
    }

    /// Refuses a field or bound longer than any stored one could be.
    fn check_sizes(&self) -> Result<(), KvError> {
        let bound_max = INDEX_TERM_BYTES_MAX.max(KEY_BYTES_MAX);
        let sizes = [
            ("index field", self.field.len(), INDEX_FIELD_BYTES_MAX),
            ("range start", self.start.len(), bound_max),
            (
                "range end",
                self.end.as_ref().map_or(0, Vec::len),
                bound_max,
            ),
        ];
        match sizes.into_iter().find(|(_, len, max)| len > max) {
            Some((what, len, max)) => Err(bad(format!(
                "{what} of {len} bytes exceeds the limit of {max}"
            ))),
            None => Ok(()),
        }
    }

    /// The scanned field and its stored bounds.
    fn bounds(&self, field: &[u8]) -> Result<(ScanField, Vec<u8>, Vec<u8>), KvError> {
        let end = self.end.clone().unwrap_or_else(|| self.start.clone());
        if field == BUCKET_FIELD {
            return Ok((ScanField::Bucket, Vec::new(), Vec::new()));
        }
        if field == KEY_FIELD {
            return Ok((ScanField::Key, self.start.clone(), end));
        }
        match term::kind_of(field) {
            Some(FieldKind::Bin) => Ok((ScanField::Term(field.to_vec()), self.start.clone(), end)),
            Some(FieldKind::Int) => {
                let lo = parse_int(field, &self.start).map_err(|e| bad(e.to_string()))?;
                let hi = parse_int(field, &end).map_err(|e| bad(e.to_string()))?;
                Ok((
                    ScanField::Term(field.to_vec()),
                    int_bytes(lo).to_vec(),
                    int_bytes(hi).to_vec(),
                ))
            }
            None => Err(bad(term::TermError::UnknownField(
                String::from_utf8_lossy(field).into_owned(),
            )
            .to_string())),
        }
    }
}

impl PreparedQuery {
    /// The page for `entries` (sorted, as stored), at most `max` of them.
    pub fn page(&self, mut entries: Vec<(Vec<u8>, Vec<u8>)>) -> IndexPage {
        let full = match self.scan.max {
            Some(max) if entries.len() >= max as usize => {
                entries.truncate(max as usize);
                true
            }
            _ => false,
        };
        let continuation = match (full, entries.last()) {
            (true, Some((t, k))) => Some(
                Continuation {
                    fingerprint: self.fingerprint,
                    term: t.clone(),
                    key: k.clone(),
                }
                .encode(),
            ),
            _ => None,
        };
        let field = match &self.scan.field {
            ScanField::Term(f) => Some(f.as_slice()),
            _ => None,
        };
        let results = entries
            .into_iter()
            .map(|(t, k)| match (self.return_terms, field) {
                (true, Some(f)) => (term::display_term(f, &t), k),
                _ => (Vec::new(), k),
            })
            .collect();
        IndexPage {
            results,
            return_terms: self.return_terms,
            continuation,
        }
    }
}

impl IndexScan {
    /// True when `(term, key)` is inside the bounds and after the
    /// continuation (the regex is checked by the caller).
    pub fn admits(&self, term: &[u8], key: &[u8]) -> bool {
        let in_bounds = match self.field {
            ScanField::Bucket => true,
            _ => term >= self.start.as_slice() && term <= self.end.as_slice(),
        };
        in_bounds
            && self
                .after
                .as_ref()
                .is_none_or(|(t, k)| (term, key) > (t.as_slice(), k.as_slice()))
    }
}

/// Compiles a query's regular expression within the limits.
pub fn compile_regex(re: &str) -> Result<regex::bytes::Regex, KvError> {
    if re.len() > REGEX_BYTES_MAX {
        return Err(bad(format!(
            "term_regex of {} bytes exceeds the limit of {REGEX_BYTES_MAX}",
            re.len()
        )));
    }
    regex::bytes::RegexBuilder::new(re)
        .size_limit(REGEX_COMPILED_MAX)
        .dfa_size_limit(REGEX_COMPILED_MAX)
        .build()
        .map_err(|e| bad(format!("Invalid term regular expression {re:?} : {e}")))
}

fn check_regex(field: &ScanField, re: &str) -> Result<(), KvError> {
    if let ScanField::Term(f) = field
        && term::kind_of(f) == Some(FieldKind::Int)
    {
        return Err(bad("Can not use term regular expression in integer query"));
    }
    compile_regex(re).map(|_| ())
}

fn bad(msg: impl Into<String>) -> KvError {
    KvError::BadQuery(msg.into())
}
