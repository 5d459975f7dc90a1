//! Running a parsed filter on one key. Evaluation never fails: a
//! transform that cannot apply (a kind it does not take, text that is not
//! a number, a token past the last) makes the key not match, and so does
//! such a failure inside `and`, `or` or `not` (as a crash of the filter
//! fun would drop the key in Riak).
//!
//! Kinds compare as Erlang orders terms: numbers by value (integer and
//! float numerically, exactly), any number before any string, strings
//! byte by byte. Strings are bytes: keys need not be UTF-8, and `to_upper`
//! and `to_lower` change ASCII letters only.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::{Comparison, Pipeline, Predicate, Transform};

/// The value passed from step to step.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Value<'a> {
    /// A string: the key, a token of it, …
    Bytes(Cow<'a, [u8]>),
    Int(i64),
    Float(f64),
}

/// A filter's own argument (a value it compares with).
pub(super) type Term = Value<'static>;

impl<'a> Value<'a> {
    /// A key, borrowed.
    pub(super) fn key(key: &'a [u8]) -> Value<'a> {
        Value::Bytes(Cow::Borrowed(key))
    }

    /// The same value, borrowing this one's bytes.
    fn reborrow(&self) -> Value<'_> {
        match self {
            Value::Bytes(b) => Value::Bytes(Cow::Borrowed(b)),
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
        }
    }
}

impl Pipeline {
    /// Whether `value` passes this list; `None` when a transform failed.
    pub(super) fn run(&self, mut value: Value<'_>) -> Option<bool> {
        for t in &self.transforms {
            value = t.apply(value)?;
        }
        match &self.predicate {
            None => Some(true),
            Some(p) => p.test(&value),
        }
    }
}

impl Transform {
    /// The transformed value; `None` if this transform cannot apply.
    fn apply<'a>(&self, value: Value<'a>) -> Option<Value<'a>> {
        let text = |s: String| Some(Value::Bytes(Cow::Owned(s.into_bytes())));
        match (self, value) {
            (Transform::IntToString, Value::Int(i)) => text(i.to_string()),
            (Transform::FloatToString, Value::Float(f)) => text(erlang_float_text(f)),
            (Transform::StringToInt, Value::Bytes(b)) => {
                let s = std::str::from_utf8(&b).ok()?;
                s.parse().ok().map(Value::Int)
            }
            (Transform::StringToFloat, Value::Bytes(b)) => parse_erlang_float(&b).map(Value::Float),
            (Transform::ToUpper, Value::Bytes(b)) => Some(map_bytes(b, u8::to_ascii_uppercase)),
            (Transform::ToLower, Value::Bytes(b)) => Some(map_bytes(b, u8::to_ascii_lowercase)),
            (Transform::Tokenize { separators, index }, Value::Bytes(b)) => {
                Some(Value::Bytes(match b {
                    Cow::Borrowed(s) => Cow::Borrowed(nth_token(s, separators, *index)?),
                    Cow::Owned(v) => Cow::Owned(nth_token(&v, separators, *index)?.to_vec()),
                }))
            }
            (Transform::UrlDecode, Value::Bytes(b)) => Some(Value::Bytes(url_decode(b))),
            _ => None,
        }
    }
}

impl Predicate {
    /// Whether `value` passes; `None` when a transform inside a logical
    /// step failed.
    fn test(&self, value: &Value<'_>) -> Option<bool> {
        let bytes = || match value {
            Value::Bytes(b) => Some(&**b),
            _ => None,
        };
        Some(match self {
            Predicate::Compare(c, term) => {
                let order = compare(value, term);
                match c {
                    Comparison::GreaterThan => order == Ordering::Greater,
                    Comparison::LessThan => order == Ordering::Less,
                    Comparison::GreaterThanEq => order != Ordering::Less,
                    Comparison::LessThanEq => order != Ordering::Greater,
                    Comparison::Eq => order == Ordering::Equal,
                    Comparison::Neq => order != Ordering::Equal,
                }
            }
            Predicate::Between {
                low,
                high,
                inclusive,
            } => {
                let (from_low, to_high) = (compare(value, low), compare(value, high));
                match inclusive {
                    true => from_low != Ordering::Less && to_high != Ordering::Greater,
                    false => from_low == Ordering::Greater && to_high == Ordering::Less,
                }
            }
            Predicate::Matches(re) => bytes().is_some_and(|b| re.is_match(b)),
            Predicate::SetMember(members) => {
                members.iter().any(|m| compare(value, m) == Ordering::Equal)
            }
            Predicate::SimilarTo { target, distance } => {
                bytes().is_some_and(|b| within_distance(b, target, *distance))
            }
            Predicate::StartsWith(prefix) => bytes().is_some_and(|b| b.starts_with(prefix)),
            Predicate::EndsWith(suffix) => bytes().is_some_and(|b| b.ends_with(suffix)),
            Predicate::And(lists) => {
                for list in lists {
                    if !list.run(value.reborrow())? {
                        return Some(false);
                    }
                }
                true
            }
            Predicate::Or(lists) => {
                for list in lists {
                    if list.run(value.reborrow())? {
                        return Some(true);
                    }
                }
                false
            }
            Predicate::Not(list) => !list.run(value.reborrow())?,
        })
    }
}

/// Erlang's term order, loosely: numbers by value, then strings by bytes.
pub(super) fn compare(a: &Value<'_>, b: &Value<'_>) -> Ordering {
    match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => x.cmp(y),
        (Value::Bytes(_), _) => Ordering::Greater,
        (_, Value::Bytes(_)) => Ordering::Less,
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        (Value::Int(x), Value::Float(y)) => int_to_float(*x, *y),
        (Value::Float(x), Value::Int(y)) => int_to_float(*y, *x).reverse(),
    }
}

/// `i` against `f`, exactly (an `i64` does not always fit an `f64`).
fn int_to_float(i: i64, f: f64) -> Ordering {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return Ordering::Equal;
    }
    if f >= TWO_POW_63 {
        return Ordering::Less;
    }
    if f < -TWO_POW_63 {
        return Ordering::Greater;
    }
    let whole = f.trunc();
    // In range: -2^63 <= whole < 2^63, so the cast is exact.
    match i.cmp(&(whole as i64)) {
        Ordering::Equal => whole.partial_cmp(&f).unwrap_or(Ordering::Equal),
        other => other,
    }
}

/// A float as Erlang's `float_to_list/1` writes it: 20 decimals in
/// scientific notation, a signed exponent of at least two digits
/// (`1.50000000000000000000e+01`).
fn erlang_float_text(f: f64) -> String {
    let text = format!("{f:.20e}");
    let Some((mantissa, exp)) = text.split_once('e') else {
        return text;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// A float in Erlang's `list_to_float/1` syntax: optional sign, digits, a
/// point, digits, optional exponent (`1.5`, `-2.0e3`; not `1` or `.5`).
/// `None` for other text and for values too large to be finite.
fn parse_erlang_float(b: &[u8]) -> Option<f64> {
    let digits = |s: &[u8]| -> usize { s.iter().take_while(|c| c.is_ascii_digit()).count() };
    let unsigned = b.strip_prefix(b"-").or(b.strip_prefix(b"+")).unwrap_or(b);
    let whole = digits(unsigned);
    let rest = unsigned.get(whole..)?.strip_prefix(b".")?;
    let fraction = digits(rest);
    let mut rest = rest.get(fraction..)?;
    if whole == 0 || fraction == 0 {
        return None;
    }
    if let Some(exp) = rest.strip_prefix(b"e").or(rest.strip_prefix(b"E")) {
        let exp = exp
            .strip_prefix(b"-")
            .or(exp.strip_prefix(b"+"))
            .unwrap_or(exp);
        let n = digits(exp);
        if n == 0 {
            return None;
        }
        rest = exp.get(n..)?;
    }
    if !rest.is_empty() {
        return None;
    }
    let f: f64 = std::str::from_utf8(b).ok()?.parse().ok()?;
    f.is_finite().then_some(f)
}

/// Token `index` (1-based) of `s` split on any of `separators`, empty
/// tokens dropped (Erlang's `string:tokens/2`).
fn nth_token<'s>(s: &'s [u8], separators: &[u8], index: usize) -> Option<&'s [u8]> {
    s.split(|c| separators.contains(c))
        .filter(|t| !t.is_empty())
        .nth(index.checked_sub(1)?)
}

fn map_bytes(b: Cow<'_, [u8]>, f: fn(&u8) -> u8) -> Value<'_> {
    Value::Bytes(Cow::Owned(b.iter().map(f).collect()))
}

/// `%XX` to its byte and `+` to a space (form decoding, as mochiweb's
/// `unquote`); a `%` without two hex digits after it stays as it is.
fn url_decode(b: Cow<'_, [u8]>) -> Cow<'_, [u8]> {
    if !b.iter().any(|c| *c == b'%' || *c == b'+') {
        return b;
    }
    let hex = |c: Option<&u8>| c.and_then(|c| (*c as char).to_digit(16));
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match (c, hex(b.get(i + 1)), hex(b.get(i + 2))) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Cow::Owned(out)
}

/// True when the Levenshtein distance between `a` and `b` (in bytes) is
/// at most `max`. Stops as soon as a row of the table exceeds `max`.
pub(super) fn within_distance(a: &[u8], b: &[u8], max: u64) -> bool {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    if (long.len() - short.len()) as u64 > max {
        return false;
    }
    if max >= long.len() as u64 {
        return true;
    }
    let mut prev: Vec<usize> = (0..=short.len()).collect();
    let mut cur = vec![0; short.len() + 1];
    for (i, x) in long.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, y) in short.iter().enumerate() {
            let replace = prev[j] + usize::from(x != y);
            let cell = replace.min(prev[j + 1] + 1).min(cur[j] + 1);
            cur[j + 1] = cell;
            row_min = row_min.min(cell);
        }
        if row_min as u64 > max {
            return false;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[short.len()] as u64 <= max
}
