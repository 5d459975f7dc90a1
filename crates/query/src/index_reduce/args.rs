//! A phase's `arg` for an index function, in the three JSON forms Eddy
//! reads (design note 017, "Index functions"):
//!
//! - a list, Riak's tuple form: the parameters in Riak's order
//!   (`["term", "extint", "all", 1, 32]` for `{term, extint, all, 1, 32}`);
//!   a function of one parameter also takes it bare (`"term"`);
//! - `{"args": tuple, "reduce_phase_batch_size": N}`, Riak's proplist
//!   form (`[{args, Tuple}, {reduce_phase_batch_size, N}]`);
//! - an object naming the parameters (`{"input": "term", "output":
//!   "extint", ...}`), which may also carry `reduce_phase_batch_size`.
//!
//! Each getter checks one parameter and says, naming the function and the
//! parameter, what is wrong with it.

use regex::bytes::Regex;
use serde_json::{Map, Value};

use super::item;

/// Riak's proplist key for the re-reduce batch size.
pub const BATCH_FIELD: &str = "reduce_phase_batch_size";
/// The largest batch a phase may ask for.
pub const BATCH_MAX: u64 = 100_000;

/// `all` or `this`: whether an entry keeps its other attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    All,
    This,
}

/// A function's parameters, by position.
pub struct Args<'a> {
    func: &'static str,
    names: &'static [&'static str],
    values: Vec<Option<&'a Value>>,
    /// `reduce_phase_batch_size`, if given.
    pub batch: Option<usize>,
}

impl<'a> Args<'a> {
    /// Reads `arg` for `func`, whose parameters are `names`.
    pub fn parse(
        func: &'static str,
        names: &'static [&'static str],
        arg: &'a Value,
    ) -> Result<Args<'a>, String> {
        let mut args = Args {
            func,
            names,
            values: vec![None; names.len()],
            batch: None,
        };
        let tuple = match arg {
            Value::Object(m) if m.contains_key("args") => {
                args.batch_from(m, &["args"])?;
                &m["args"]
            }
            Value::Object(m) => {
                args.batch_from(m, names)?;
                for (i, name) in names.iter().enumerate() {
                    args.values[i] = m.get(*name);
                }
                return Ok(args);
            }
            other => other,
        };
        match tuple {
            Value::Array(l) if l.len() == names.len() => {
                args.values = l.iter().map(Some).collect();
            }
            Value::Array(_) | Value::Object(_) => return Err(args.shape_error(tuple)),
            Value::Null if names.len() == 1 => {}
            scalar if names.len() == 1 => args.values[0] = Some(scalar),
            other => return Err(args.shape_error(other)),
        }
        Ok(args)
    }

    /// Reads the batch size from an object form and refuses unknown fields.
    fn batch_from(&mut self, m: &Map<String, Value>, known: &[&str]) -> Result<(), String> {
        for (k, v) in m {
            if k == BATCH_FIELD {
                let n = v.as_u64().filter(|n| (1..=BATCH_MAX).contains(n));
                let n = n.ok_or_else(|| {
                    format!(
                        "{}: bad arg \"{BATCH_FIELD}\": must be a whole number from 1 to \
                         {BATCH_MAX}, not {v}",
                        self.func
                    )
                })?;
                self.batch = Some(n as usize);
            } else if !known.contains(&k.as_str()) {
                return Err(format!(
                    "{}: unknown arg field \"{k}\" (it takes {})",
                    self.func,
                    self.listing()
                ));
            }
        }
        Ok(())
    }

    fn shape_error(&self, got: &Value) -> String {
        format!(
            "{}: arg must be a list of {} ({}) or an object naming them, not {got}",
            self.func,
            self.names.len(),
            self.listing()
        )
    }

    fn listing(&self) -> String {
        self.names.join(", ")
    }

    /// The `i`th parameter, which must be given.
    pub fn value(&self, i: usize) -> Result<&'a Value, String> {
        self.values
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| format!("{}: missing arg \"{}\"", self.func, self.names[i]))
    }

    /// An error about the `i`th parameter.
    pub fn bad(&self, i: usize, why: impl std::fmt::Display) -> String {
        format!("{}: bad arg \"{}\": {why}", self.func, self.names[i])
    }

    fn check<T>(&self, i: usize, want: &str, got: Option<T>) -> Result<T, String> {
        let v = self.value(i)?;
        got.ok_or_else(|| self.bad(i, format!("must be {want}, not {v}")))
    }

    /// An attribute name: a non-empty string.
    pub fn attr(&self, i: usize) -> Result<String, String> {
        let v = self.value(i)?;
        let s = v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        self.check(i, "an attribute name", s)
    }

    /// An attribute name, or none (`null`, `"none"`, `"undefined"`, absent).
    pub fn opt_attr(&self, i: usize) -> Result<Option<String>, String> {
        match self.values.get(i).copied().flatten() {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s == "none" || s == "undefined" => Ok(None),
            Some(_) => self.attr(i).map(Some),
        }
    }

    /// A non-empty list of distinct attribute names.
    pub fn attrs(&self, i: usize) -> Result<Vec<String>, String> {
        let v = self.value(i)?;
        let names: Option<Vec<String>> = v.as_array().and_then(|l| {
            l.iter()
                .map(|n| n.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
                .collect()
        });
        let names = names.filter(|n| !n.is_empty() && distinct(n));
        self.check(i, "a list of distinct attribute names", names)
    }

    pub fn keep(&self, i: usize) -> Result<Keep, String> {
        let keep = match self.value(i)?.as_str() {
            Some("all") => Some(Keep::All),
            Some("this") => Some(Keep::This),
            _ => None,
        };
        self.check(i, "\"all\" or \"this\"", keep)
    }

    /// One of `choices`.
    pub fn choice(&self, i: usize, choices: &[&'static str]) -> Result<&'static str, String> {
        let v = self.value(i)?;
        let found = choices.iter().copied().find(|c| v.as_str() == Some(c));
        let want = choices
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(" or ");
        self.check(i, &want, found)
    }

    /// A whole number from `min` to `max`.
    pub fn count(&self, i: usize, min: u64, max: u64) -> Result<u64, String> {
        let n = self.value(i)?.as_u64().filter(|n| (min..=max).contains(n));
        self.check(i, &format!("a whole number from {min} to {max}"), n)
    }

    /// Any integer JSON holds.
    pub fn int(&self, i: usize) -> Result<i128, String> {
        self.check(i, "an integer", item::int(self.value(i)?))
    }

    /// A binary (a string, or `{"base64": ..}`), not empty.
    pub fn binary(&self, i: usize) -> Result<Vec<u8>, String> {
        let b = item::bytes(self.value(i)?).filter(|b| !b.is_empty());
        self.check(i, "a non-empty binary", b.map(|b| b.into_owned()))
    }

    /// A regular expression, within the limits 2i queries have.
    pub fn regex(&self, i: usize) -> Result<Regex, String> {
        let v = self.value(i)?;
        let text = self.check(i, "a regular expression", v.as_str())?;
        eddy_model::index::query::compile_regex(text).map_err(|e| self.bad(i, e))
    }
}

fn distinct(names: &[String]) -> bool {
    let mut seen: Vec<&String> = names.iter().collect();
    seen.sort();
    seen.windows(2).all(|w| w[0] != w[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NAMES: &[&str] = &["attribute", "count"];

    #[test]
    fn the_three_forms_read_alike() {
        for arg in [
            json!(["int", 2]),
            json!({"args": ["int", 2]}),
            json!({"attribute": "int", "count": 2}),
        ] {
            let a = Args::parse("f", NAMES, &arg).unwrap();
            assert_eq!(a.attr(0).unwrap(), "int");
            assert_eq!(a.count(1, 1, 9).unwrap(), 2);
            assert_eq!(a.batch, None);
        }
        let proplist = json!({"args": ["int", 2], BATCH_FIELD: 50});
        let a = Args::parse("f", NAMES, &proplist).unwrap();
        assert_eq!(a.batch, Some(50));
        let bare = json!("term");
        let one = Args::parse("f", &["attribute"], &bare).unwrap();
        assert_eq!(one.attr(0).unwrap(), "term");
        let none = Args::parse("f", &["attribute"], &Value::Null).unwrap();
        assert_eq!(none.opt_attr(0).unwrap(), None);
    }

    #[test]
    fn errors_name_the_function_and_the_parameter() {
        let cases = [
            (
                json!(["int"]),
                "f: arg must be a list of 2 (attribute, count)",
            ),
            (json!("int"), "f: arg must be a list of 2"),
            (
                json!({"attribute": "int", "cnt": 2}),
                "unknown arg field \"cnt\"",
            ),
            (json!({"attribute": "int"}), "f: missing arg \"count\""),
            (
                json!({"args": ["int", 1], BATCH_FIELD: 0}),
                "reduce_phase_batch_size",
            ),
        ];
        for (arg, want) in cases {
            let err = Args::parse("f", NAMES, &arg).and_then(|a| a.count(1, 1, 9));
            let err = err.unwrap_err();
            assert!(err.contains(want), "{arg}: {err}");
        }
        let bad = json!([5, 0]);
        let a = Args::parse("f", NAMES, &bad).unwrap();
        assert_eq!(
            a.attr(0).unwrap_err(),
            "f: bad arg \"attribute\": must be an attribute name, not 5"
        );
        assert!(a.count(1, 1, 9).unwrap_err().contains("from 1 to 9, not 0"));
    }
}
