//! Riak's key-filter JSON into a [`Pipeline`]: every name, arity and
//! argument checked, regexes compiled, limits enforced, before any key is
//! seen. Argument shapes follow Riak's key filters reference: `tokenize`
//! takes a separator and a 1-based index, `between` two bounds and an
//! optional inclusive flag (default true), `set_member` any number of
//! values, `similar_to` a string and a distance, `and`/`or` two or more
//! filter lists, `not` one.

use std::borrow::Cow;

use serde_json::Value as Json;

use super::eval::Term;
use super::{
    Comparison, DEPTH_MAX, KeyFilterError, Pipeline, Predicate, REGEX_BYTES_MAX,
    REGEX_COMPILED_MAX, SET_MEMBERS_MAX, SIMILAR_TO_BYTES_MAX, STEPS_MAX, Transform,
};

/// Every filter's name, as JSON spells it.
const NAMES: [&str; 23] = [
    "int_to_string",
    "string_to_int",
    "float_to_string",
    "string_to_float",
    "to_upper",
    "to_lower",
    "tokenize",
    "urldecode",
    "greater_than",
    "less_than",
    "greater_than_eq",
    "less_than_eq",
    "between",
    "matches",
    "neq",
    "eq",
    "set_member",
    "similar_to",
    "starts_with",
    "ends_with",
    "and",
    "or",
    "not",
];

/// Longest excerpt of a bad value quoted in an error.
const QUOTE_BYTES_MAX: usize = 64;

/// Parses a whole filter (the top-level list).
pub(super) fn filter(json: &Json) -> Result<Pipeline, KeyFilterError> {
    let mut steps = 0;
    pipeline(json, 1, &mut steps)
}

/// One parsed step.
enum Step {
    Transform(Transform),
    Predicate(&'static str, Predicate),
}

/// A filter list at nesting `depth`; `steps` counts the filter's steps so
/// far.
fn pipeline(json: &Json, depth: usize, steps: &mut usize) -> Result<Pipeline, KeyFilterError> {
    limit("key filter nesting depth", depth, DEPTH_MAX)?;
    let list = json
        .as_array()
        .ok_or_else(|| KeyFilterError::NotAList(quote(json)))?;
    limit("key filter steps", *steps + list.len(), STEPS_MAX)?;
    let mut out = Pipeline {
        transforms: Vec::new(),
        predicate: None,
    };
    let mut last_predicate = None;
    for item in list {
        if let Some(name) = last_predicate {
            return Err(KeyFilterError::PredicateNotLast(name));
        }
        *steps += 1;
        limit("key filter steps", *steps, STEPS_MAX)?;
        match step(item, depth, steps)? {
            Step::Transform(t) => out.transforms.push(t),
            Step::Predicate(name, p) => {
                last_predicate = Some(name);
                out.predicate = Some(p);
            }
        }
    }
    Ok(out)
}

fn step(json: &Json, depth: usize, steps: &mut usize) -> Result<Step, KeyFilterError> {
    let not_a_filter = || KeyFilterError::NotAFilter(quote(json));
    let (name, args) = json
        .as_array()
        .and_then(|a| a.split_first())
        .ok_or_else(not_a_filter)?;
    let name = name.as_str().ok_or_else(not_a_filter)?;
    let name = NAMES
        .iter()
        .copied()
        .find(|n| *n == name)
        .ok_or_else(|| KeyFilterError::Unknown(name.to_string()))?;
    let a = Args { name, args };
    if let Some(t) = transform(&a)? {
        return Ok(Step::Transform(t));
    }
    Ok(Step::Predicate(name, predicate(&a, depth, steps)?))
}

/// The transform `a` names, if it names one.
fn transform(a: &Args<'_>) -> Result<Option<Transform>, KeyFilterError> {
    let plain = |t: Transform| a.arity(0, 0, "no arguments").map(|()| Some(t));
    match a.name {
        "int_to_string" => plain(Transform::IntToString),
        "string_to_int" => plain(Transform::StringToInt),
        "float_to_string" => plain(Transform::FloatToString),
        "string_to_float" => plain(Transform::StringToFloat),
        "to_upper" => plain(Transform::ToUpper),
        "to_lower" => plain(Transform::ToLower),
        "urldecode" => plain(Transform::UrlDecode),
        "tokenize" => {
            a.arity(2, 2, "2 arguments (separator, index)")?;
            let separators = a.string(1)?.as_bytes().to_vec();
            let index = a.uint(2, "a positive integer")?;
            let index = usize::try_from(index)
                .ok()
                .filter(|i| *i >= 1)
                .ok_or_else(|| a.bad(2, "a positive integer"))?;
            Ok(Some(Transform::Tokenize { separators, index }))
        }
        _ => Ok(None),
    }
}

fn predicate(a: &Args<'_>, depth: usize, steps: &mut usize) -> Result<Predicate, KeyFilterError> {
    let compare = |c: Comparison| {
        a.arity(1, 1, "1 argument")?;
        Ok(Predicate::Compare(c, a.term(1)?))
    };
    match a.name {
        "greater_than" => compare(Comparison::GreaterThan),
        "less_than" => compare(Comparison::LessThan),
        "greater_than_eq" => compare(Comparison::GreaterThanEq),
        "less_than_eq" => compare(Comparison::LessThanEq),
        "eq" => compare(Comparison::Eq),
        "neq" => compare(Comparison::Neq),
        "between" => {
            a.arity(2, 3, "2 or 3 arguments (low, high, inclusive)")?;
            let inclusive = match a.args.len() {
                3 => a.boolean(3)?,
                _ => true,
            };
            Ok(Predicate::Between {
                low: a.term(1)?,
                high: a.term(2)?,
                inclusive,
            })
        }
        "matches" => {
            a.arity(1, 1, "1 argument (a regular expression)")?;
            Ok(Predicate::Matches(regex(a.string(1)?)?))
        }
        "set_member" => {
            limit(
                "key filter \"set_member\" members",
                a.args.len(),
                SET_MEMBERS_MAX,
            )?;
            let members = (1..=a.args.len()).map(|i| a.term(i));
            Ok(Predicate::SetMember(members.collect::<Result<_, _>>()?))
        }
        "similar_to" => {
            a.arity(2, 2, "2 arguments (string, distance)")?;
            let target = a.string(1)?.as_bytes().to_vec();
            let what = "key filter \"similar_to\" string bytes";
            limit(what, target.len(), SIMILAR_TO_BYTES_MAX)?;
            let distance = a.uint(2, "a non-negative integer")?;
            Ok(Predicate::SimilarTo { target, distance })
        }
        "starts_with" => {
            a.arity(1, 1, "1 argument (a string)")?;
            Ok(Predicate::StartsWith(a.string(1)?.as_bytes().to_vec()))
        }
        "ends_with" => {
            a.arity(1, 1, "1 argument (a string)")?;
            Ok(Predicate::EndsWith(a.string(1)?.as_bytes().to_vec()))
        }
        "and" | "or" => {
            a.arity(2, usize::MAX, "2 or more filter lists")?;
            let lists = a.args.iter().map(|l| pipeline(l, depth + 1, steps));
            let lists = lists.collect::<Result<Vec<_>, _>>()?;
            Ok(match a.name {
                "and" => Predicate::And(lists),
                _ => Predicate::Or(lists),
            })
        }
        "not" => {
            a.arity(1, 1, "1 filter list")?;
            Ok(Predicate::Not(Box::new(pipeline(
                a.arg(1),
                depth + 1,
                steps,
            )?)))
        }
        other => Err(KeyFilterError::Unknown(other.to_string())),
    }
}

/// A `matches` pattern, compiled to run on bytes as Erlang's `re` runs on
/// a binary: `.` is any byte but a newline, classes are ASCII; `(?u)` in
/// the pattern turns Unicode on.
fn regex(pattern: &str) -> Result<regex::bytes::Regex, KeyFilterError> {
    limit(
        "key filter \"matches\" regular expression bytes",
        pattern.len(),
        REGEX_BYTES_MAX,
    )?;
    regex::bytes::RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(REGEX_COMPILED_MAX)
        .dfa_size_limit(REGEX_COMPILED_MAX)
        .build()
        .map_err(|e| KeyFilterError::Regex {
            pattern: pattern.to_string(),
            reason: e.to_string(),
        })
}

/// A step's name and its arguments (after the name).
struct Args<'a> {
    name: &'static str,
    args: &'a [Json],
}

impl Args<'_> {
    fn arity(&self, min: usize, max: usize, expected: &'static str) -> Result<(), KeyFilterError> {
        match (min..=max).contains(&self.args.len()) {
            true => Ok(()),
            false => Err(KeyFilterError::Arity {
                filter: self.name,
                expected,
                got: self.args.len(),
            }),
        }
    }

    /// Argument `position` (1-based).
    fn arg(&self, position: usize) -> &Json {
        self.args
            .get(position.wrapping_sub(1))
            .unwrap_or(&Json::Null)
    }

    fn bad(&self, position: usize, expected: &'static str) -> KeyFilterError {
        KeyFilterError::Argument {
            filter: self.name,
            position,
            expected,
            got: quote(self.arg(position)),
        }
    }

    fn string(&self, position: usize) -> Result<&str, KeyFilterError> {
        self.arg(position)
            .as_str()
            .ok_or_else(|| self.bad(position, "a string"))
    }

    fn uint(&self, position: usize, expected: &'static str) -> Result<u64, KeyFilterError> {
        self.arg(position)
            .as_u64()
            .ok_or_else(|| self.bad(position, expected))
    }

    fn boolean(&self, position: usize) -> Result<bool, KeyFilterError> {
        self.arg(position)
            .as_bool()
            .ok_or_else(|| self.bad(position, "true or false"))
    }

    /// A value to compare with: a string, an integer that fits 64 bits,
    /// or a float.
    fn term(&self, position: usize) -> Result<Term, KeyFilterError> {
        let expected = "a string or a number (integers within 64 bits)";
        match self.arg(position) {
            Json::String(s) => Ok(Term::Bytes(Cow::Owned(s.as_bytes().to_vec()))),
            Json::Number(n) if n.is_f64() => n
                .as_f64()
                .map(Term::Float)
                .ok_or_else(|| self.bad(position, expected)),
            Json::Number(n) => n
                .as_i64()
                .map(Term::Int)
                .ok_or_else(|| self.bad(position, expected)),
            _ => Err(self.bad(position, expected)),
        }
    }
}

fn limit(what: &'static str, size: usize, max: usize) -> Result<(), KeyFilterError> {
    match size <= max {
        true => Ok(()),
        false => Err(KeyFilterError::Limit { what, size, max }),
    }
}

/// `json` as text for an error message, cut short.
fn quote(json: &Json) -> String {
    let mut text = json.to_string();
    if text.len() > QUOTE_BYTES_MAX {
        let mut end = QUOTE_BYTES_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
