//! The filter functions (`reduce_index_apply*`): an entry whose attribute
//! passes the test goes on whole (`all`) or with only that attribute
//! (`this`); the rest, and anything that is not an entry, are dropped.
//! Filtering again what a filter let through changes nothing, so they
//! re-reduce as they reduce.
//!
//! Where Riak would crash on a value of the wrong kind (a regex over an
//! integer, a mask over a binary), the entry is dropped instead.

use regex::bytes::Regex;
use serde_json::{Map, Value};

use super::args::{Args, Keep};
use super::item::{self, Shape, bytes, entry, int, order};

#[derive(Debug)]
enum Test {
    /// `low <= value <= high`, in Erlang's term order.
    Range(Value, Value),
    /// The binary value matches somewhere.
    Regex(Regex),
    /// The integer value has every bit of the mask set.
    Mask(i128),
}

#[derive(Debug)]
pub struct Filter {
    input: String,
    keep: Keep,
    test: Test,
}

impl Filter {
    /// `{input, keep, low, high}`.
    pub fn range(a: &Args) -> Result<Filter, String> {
        let test = Test::Range(a.value(2)?.clone(), a.value(3)?.clone());
        Filter::new(a, test)
    }

    /// `{input, keep, regex}`.
    pub fn regex(a: &Args) -> Result<Filter, String> {
        Filter::new(a, Test::Regex(a.regex(2)?))
    }

    /// `{input, keep, mask}`.
    pub fn mask(a: &Args) -> Result<Filter, String> {
        Filter::new(a, Test::Mask(a.int(2)?))
    }

    fn new(a: &Args, test: Test) -> Result<Filter, String> {
        Ok(Filter {
            input: a.attr(0)?,
            keep: a.keep(1)?,
            test,
        })
    }

    /// The entry as it passes, or `None` to drop the input.
    pub fn apply(&self, v: &Value) -> Option<Value> {
        let Shape::Entry { bucket, key, attrs } = item::shape(v) else {
            return None;
        };
        let value = attrs.get(&self.input)?;
        let passes = match &self.test {
            Test::Range(low, high) => order(value, low).is_ge() && order(value, high).is_le(),
            Test::Regex(re) => bytes(value).is_some_and(|b| re.is_match(&b)),
            Test::Mask(mask) => int(value).is_some_and(|n| n & mask == *mask),
        };
        if !passes {
            return None;
        }
        Some(match self.keep {
            Keep::All => v.clone(),
            Keep::This => {
                let mut only = Map::new();
                only.insert(self.input.clone(), value.clone());
                entry(bucket, key, only)
            }
        })
    }
}
