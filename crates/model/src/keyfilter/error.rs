//! Why a key filter was refused. Each message names the filter (or the
//! part of the filter) at fault, in words a client can act on; the API
//! edge sends it as a bad request.

/// A malformed key filter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFilterError {
    /// The filter's text is not JSON (a filter read off the wire).
    #[error("key filter is not JSON: {0}")]
    NotJson(String),
    /// A filter list is not a JSON array.
    #[error("key filters must be a list of filters, got {0}")]
    NotAList(String),
    /// A step is not a list whose first element is a filter's name.
    #[error("a key filter must be a list starting with its name, got {0}")]
    NotAFilter(String),
    /// No filter has this name.
    #[error("unknown key filter {0:?}")]
    Unknown(String),
    /// The filter was given the wrong number of arguments.
    #[error("key filter {filter:?} takes {expected}, got {got}")]
    Arity {
        filter: &'static str,
        expected: &'static str,
        got: usize,
    },
    /// An argument is not of the type the filter takes.
    #[error("key filter {filter:?}: argument {position} must be {expected}, got {got}")]
    Argument {
        filter: &'static str,
        /// 1-based, after the name.
        position: usize,
        expected: &'static str,
        got: String,
    },
    /// A `matches` pattern does not compile.
    #[error("key filter \"matches\": invalid regular expression {pattern:?}: {reason}")]
    Regex { pattern: String, reason: String },
    /// A predicate is followed by another step in its list.
    #[error("key filter {0:?} is a predicate and must be the last step of its list")]
    PredicateNotLast(&'static str),
    /// A count or size above its limit.
    #[error("{what}: {size} exceeds the limit of {max}")]
    Limit {
        what: &'static str,
        size: usize,
        max: usize,
    },
}
