//! Riak's key filters: a pipeline of steps applied to each key of a
//! bucket, parsed from the JSON a MapReduce input carries
//! (`{"bucket": "b", "key_filters": [...]}`) and evaluated on keys at the
//! vnodes, so a filtered listing sends back only the keys that match.
//!
//! A filter is a list of steps, applied in order to a value that starts as
//! the key's bytes: transforms change the value (`string_to_int`,
//! `tokenize`, …), a predicate ends the list with true or false
//! (`less_than`, `matches`, `and`, …). [`KeyFilter::parse`] checks the
//! whole filter once; [`KeyFilter::matches`] runs it on one key.
//!
//! Invariants:
//! - a malformed filter (unknown name, wrong arity or argument type, bad
//!   regex, a predicate before the end of its list, a limit exceeded) is
//!   refused by [`KeyFilter::parse`], naming the filter; evaluation never
//!   fails;
//! - a key for which a transform fails (`string_to_int` on `"abc"`,
//!   `tokenize` past the last token) does not match, whatever encloses the
//!   transform: `not` does not turn that failure into a match;
//! - a list without a predicate matches a key when all its transforms
//!   succeed (so `[]` matches every key);
//! - `and` and `or` evaluate their lists left to right and stop at the
//!   first that decides, as Riak's `andalso`/`orelse` do; a failure met
//!   before that decides too;
//! - values of different kinds compare as Erlang orders terms: numbers by
//!   value (an integer and a float numerically, so `1` equals `1.0`), any
//!   number before any string, strings byte by byte.
//!
//! Design note 015 has the choices and how they are tested.

mod error;
mod eval;
mod parse;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_prop;

use std::fmt;

pub use error::KeyFilterError;

/// Most steps in a filter, nested lists' steps and the logical steps
/// themselves included.
pub const STEPS_MAX: usize = 64;
/// Deepest nesting of filter lists (`and`, `or`, `not`); the top-level
/// list is depth 1.
pub const DEPTH_MAX: usize = 8;
/// Longest `matches` pattern, in bytes (2i's `term_regex` limit).
pub const REGEX_BYTES_MAX: usize = crate::index::query::REGEX_BYTES_MAX;
/// The memory a compiled `matches` pattern may take.
pub const REGEX_COMPILED_MAX: usize = crate::index::query::REGEX_COMPILED_MAX;
/// Most members of one `set_member`.
pub const SET_MEMBERS_MAX: usize = 1024;
/// Longest `similar_to` string, in bytes: a key's distance to it costs
/// the product of their lengths.
pub const SIMILAR_TO_BYTES_MAX: usize = 1024;
/// Longest filter as JSON text, in bytes (what a vnode message carries).
pub const JSON_BYTES_MAX: usize = 32 * 1024;

/// A parsed key filter: the steps to run on each key, and the JSON text
/// they were parsed from (what travels to other nodes).
#[derive(Clone)]
pub struct KeyFilter {
    pipeline: Pipeline,
    json: String,
}

impl KeyFilter {
    /// Parses Riak's key-filter JSON: a list of steps, each a list whose
    /// first element is the filter's name, e.g.
    /// `[["tokenize", "-", 1], ["string_to_int"], ["less_than", 50]]`.
    pub fn parse(filter: &serde_json::Value) -> Result<KeyFilter, KeyFilterError> {
        let json = filter.to_string();
        check_json_len(&json)?;
        Ok(KeyFilter {
            pipeline: parse::filter(filter)?,
            json,
        })
    }

    /// Parses a filter from its JSON text, keeping the text as given (so
    /// that a filter read off the wire re-encodes to the same bytes).
    pub fn from_json_text(json: &str) -> Result<KeyFilter, KeyFilterError> {
        check_json_len(json)?;
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| KeyFilterError::NotJson(e.to_string()))?;
        Ok(KeyFilter {
            pipeline: parse::filter(&value)?,
            json: json.to_string(),
        })
    }

    /// True when `key` passes the filter.
    pub fn matches(&self, key: &[u8]) -> bool {
        self.pipeline.run(eval::Value::key(key)) == Some(true)
    }

    /// The filter as JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }
}

/// Two filters are equal when their JSON texts are.
impl PartialEq for KeyFilter {
    fn eq(&self, other: &KeyFilter) -> bool {
        self.json == other.json
    }
}

impl Eq for KeyFilter {}

impl fmt::Debug for KeyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("KeyFilter").field(&self.json).finish()
    }
}

fn check_json_len(json: &str) -> Result<(), KeyFilterError> {
    match json.len() <= JSON_BYTES_MAX {
        true => Ok(()),
        false => Err(KeyFilterError::Limit {
            what: "key filter JSON bytes",
            size: json.len(),
            max: JSON_BYTES_MAX,
        }),
    }
}

/// One list of steps: transforms, then at most one predicate.
#[derive(Clone, Debug)]
struct Pipeline {
    transforms: Vec<Transform>,
    predicate: Option<Predicate>,
}

/// A step that changes the value.
#[derive(Clone, Debug)]
enum Transform {
    IntToString,
    StringToInt,
    FloatToString,
    StringToFloat,
    ToUpper,
    ToLower,
    /// Split on any of the separator bytes, empty tokens dropped (Erlang's
    /// `string:tokens`); keep token `index` (1-based).
    Tokenize {
        separators: Vec<u8>,
        index: usize,
    },
    UrlDecode,
}

/// How a comparison predicate relates the value to its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comparison {
    GreaterThan,
    LessThan,
    GreaterThanEq,
    LessThanEq,
    Eq,
    Neq,
}

/// A step that ends a list with true or false.
#[derive(Clone, Debug)]
enum Predicate {
    Compare(Comparison, eval::Term),
    Between {
        low: eval::Term,
        high: eval::Term,
        inclusive: bool,
    },
    Matches(regex::bytes::Regex),
    SetMember(Vec<eval::Term>),
    SimilarTo {
        target: Vec<u8>,
        distance: u64,
    },
    StartsWith(Vec<u8>),
    EndsWith(Vec<u8>),
    And(Vec<Pipeline>),
    Or(Vec<Pipeline>),
    Not(Box<Pipeline>),
}
