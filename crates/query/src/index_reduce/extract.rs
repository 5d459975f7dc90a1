//! The extract functions (`reduce_index_extract*`): each reads one
//! attribute of an entry (or its key), works out new attributes from it,
//! and passes the entry on with them, with its other attributes (`all`)
//! or without (`this`). An entry the extract cannot read (the attribute
//! missing or of the wrong kind) is dropped, as is any input that is not
//! an entry.
//!
//! Re-reduce: an entry that already has every output attribute has been
//! through this extract and passes unchanged (its input attribute may be
//! gone, with `this`), as Riak's `reduce_extractfun` does.

use base64::Engine;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use regex::bytes::Regex;
use serde_json::{Map, Value};

use super::args::{Args, Keep};
use super::hash;
use super::item::{self, Shape, binary, bytes, entry, int, int_json};

/// Standard base64, padded or not (Riak's `base64:decode`).
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Where an extract reads from.
#[derive(Debug)]
enum Input {
    Attr(String),
    /// The entry's key (Riak's atom `key`, for `extracthash`).
    Key,
    /// Several attributes (`extractcoalesce`).
    Attrs(Vec<String>),
}

/// How the outputs are worked out.
#[derive(Debug)]
enum How {
    /// `bits` bits, big-endian unsigned, after `pre` bytes.
    Integer { pre: usize, bytes: usize },
    /// `size` bytes (`None`: the rest) after `pre` bytes.
    Binary { pre: usize, size: Option<usize> },
    /// The named groups of a match.
    Regex(Regex),
    /// The integer `band` the mask.
    Mask(i128),
    /// The Hamming distance to a binary of the same length.
    Hamming(Vec<u8>),
    /// `fnva` or `md5`.
    Hash(fn(&[u8]) -> u32),
    /// Base64 decoded.
    Encoded,
    /// The output of the smallest bound at least the value, sorted
    /// ascending; `default` past the last.
    Buckets {
        bounds: Vec<(Value, Value)>,
        default: Value,
    },
    /// The attributes joined by a delimiter, or (`None`) as a list.
    Coalesce(Option<Vec<u8>>),
}

#[derive(Debug)]
pub struct Extract {
    input: Input,
    outputs: Vec<String>,
    keep: Keep,
    how: How,
}

impl Extract {
    /// `{input, output, keep, pre_bytes, int_size}` (bits, whole bytes).
    pub fn integer(a: &Args) -> Result<Extract, String> {
        let bits = a.count(4, 8, 64)?;
        if bits % 8 != 0 {
            return Err(a.bad(
                4,
                format!("must be whole bytes (8, 16, ... 64 bits), not {bits}"),
            ));
        }
        let how = How::Integer {
            pre: a.count(3, 0, u32::MAX.into())? as usize,
            bytes: bits as usize / 8,
        };
        Extract::single(a, how)
    }

    /// `{input, output, keep, pre_bytes, bin_size}` (bytes, or `"all"`).
    pub fn binary(a: &Args) -> Result<Extract, String> {
        let size = match a.value(4)?.as_str() {
            Some("all") => None,
            _ => Some(a.count(4, 1, u32::MAX.into())? as usize),
        };
        let how = How::Binary {
            pre: a.count(3, 0, u32::MAX.into())? as usize,
            size,
        };
        Extract::single(a, how)
    }

    /// `{input, outputs, keep, regex}`: each output names a group.
    pub fn regex(a: &Args) -> Result<Extract, String> {
        let outputs = a.attrs(1)?;
        let re = a.regex(3)?;
        let groups: Vec<&str> = re.capture_names().flatten().collect();
        if let Some(missing) = outputs.iter().find(|o| !groups.contains(&o.as_str())) {
            return Err(a.bad(3, format!("has no group named \"{missing}\"")));
        }
        Ok(Extract {
            input: Input::Attr(a.attr(0)?),
            outputs,
            keep: a.keep(2)?,
            how: How::Regex(re),
        })
    }

    /// `{input, output, keep, mask}`.
    pub fn mask(a: &Args) -> Result<Extract, String> {
        Extract::single(a, How::Mask(a.int(3)?))
    }

    /// `{input, output, keep, comparator}`.
    pub fn hamming(a: &Args) -> Result<Extract, String> {
        Extract::single(a, How::Hamming(a.binary(3)?))
    }

    /// `{input | "key", output, keep, algorithm}`.
    pub fn hash(a: &Args) -> Result<Extract, String> {
        let f: fn(&[u8]) -> u32 = match a.choice(3, &["fnva", "md5"])? {
            "fnva" => hash::fnv1a32,
            _ => hash::md5_32,
        };
        let mut e = Extract::single(a, How::Hash(f))?;
        if matches!(&e.input, Input::Attr(n) if n == "key") {
            e.input = Input::Key;
        }
        Ok(e)
    }

    /// `{input, output, keep}`.
    pub fn encoded(a: &Args) -> Result<Extract, String> {
        Extract::single(a, How::Encoded)
    }

    /// `{input, output, keep, buckets, max_output}`; `buckets` is a list
    /// of `[bound, output]`.
    pub fn buckets(a: &Args) -> Result<Extract, String> {
        let pairs: Option<Vec<(Value, Value)>> = a.value(3)?.as_array().and_then(|l| {
            l.iter()
                .map(|p| match p.as_array().map(Vec::as_slice) {
                    Some([bound, out]) => Some((bound.clone(), out.clone())),
                    _ => None,
                })
                .collect()
        });
        let Some(mut bounds) = pairs else {
            return Err(a.bad(3, "must be a list of [bound, output] pairs"));
        };
        // Riak's ukeysort: ascending, the first of equal bounds kept.
        bounds.sort_by(|x, y| item::order(&x.0, &y.0));
        bounds.dedup_by(|later, first| item::order(&later.0, &first.0).is_eq());
        let default = a.value(4)?.clone();
        Extract::single(a, How::Buckets { bounds, default })
    }

    /// `{inputs, output, keep, delimiter}`; a `null` delimiter makes a list.
    pub fn coalesce(a: &Args) -> Result<Extract, String> {
        let delimiter = match a.value(3)? {
            Value::Null => None,
            v => Some(
                bytes(v)
                    .ok_or_else(|| a.bad(3, format!("must be a binary or null, not {v}")))?
                    .into_owned(),
            ),
        };
        Ok(Extract {
            input: Input::Attrs(a.attrs(0)?),
            outputs: vec![a.attr(1)?],
            keep: a.keep(2)?,
            how: How::Coalesce(delimiter),
        })
    }

    /// The common `{input, output, keep, ...}` head.
    fn single(a: &Args, how: How) -> Result<Extract, String> {
        Ok(Extract {
            input: Input::Attr(a.attr(0)?),
            outputs: vec![a.attr(1)?],
            keep: a.keep(2)?,
            how,
        })
    }

    /// The entry with its new attributes, or `None` to drop the input.
    pub fn apply(&self, v: &Value) -> Option<Value> {
        let Shape::Entry { bucket, key, attrs } = item::shape(v) else {
            return None;
        };
        if self.outputs.iter().all(|o| attrs.contains_key(o)) {
            return Some(v.clone());
        }
        let values = self.extract(key, attrs)?;
        let mut out = match self.keep {
            Keep::All => attrs.clone(),
            Keep::This => Map::new(),
        };
        // A regex's outputs do not replace attributes the entry has (Riak
        // sorts them after the old ones and keeps the first); others do.
        let replace = !matches!(self.how, How::Regex(_));
        for (name, value) in self.outputs.iter().zip(values) {
            if replace || !out.contains_key(name) {
                out.insert(name.clone(), value);
            }
        }
        Some(entry(bucket, key, out))
    }

    /// The output values, in `outputs` order.
    fn extract(&self, key: &Value, attrs: &Map<String, Value>) -> Option<Vec<Value>> {
        let value = match &self.input {
            Input::Attr(name) => attrs.get(name),
            Input::Key => Some(key),
            Input::Attrs(names) => return Some(vec![self.coalesce_of(names, attrs)]),
        }?;
        let one = match &self.how {
            How::Integer { pre, bytes: n } => {
                let b = bytes(value)?;
                let field = b.get(*pre..pre.checked_add(*n)?)?;
                int_json(field.iter().fold(0i128, |acc, x| acc << 8 | i128::from(*x)))?
            }
            How::Binary { pre, size } => {
                let b = bytes(value)?;
                let end = match size {
                    Some(n) => pre.checked_add(*n)?,
                    None => b.len(),
                };
                binary(b.get(*pre..end)?)
            }
            How::Regex(re) => return self.captures(re, &bytes(value)?),
            How::Mask(mask) => int_json(int(value)? & mask)?,
            How::Hamming(cmp) => Value::from(hamming(value, cmp)?),
            How::Hash(f) => Value::from(f(&bytes(value)?)),
            How::Encoded => binary(&BASE64.decode(bytes(value)?.as_ref()).ok()?),
            How::Buckets { bounds, default } => bounds
                .iter()
                .find(|(bound, _)| item::order(value, bound).is_le())
                .map_or(default, |(_, out)| out)
                .clone(),
            How::Coalesce(_) => return None,
        };
        Some(vec![one])
    }

    /// Each output's group; a group that took no part matches `""`.
    fn captures(&self, re: &Regex, text: &[u8]) -> Option<Vec<Value>> {
        let caps = re.captures(text)?;
        let group = |name: &String| caps.name(name).map_or(&b""[..], |m| m.as_bytes());
        Some(self.outputs.iter().map(|n| binary(group(n))).collect())
    }

    fn coalesce_of(&self, names: &[String], attrs: &Map<String, Value>) -> Value {
        let How::Coalesce(delimiter) = &self.how else {
            return Value::Null;
        };
        let Some(delimiter) = delimiter else {
            return names
                .iter()
                .map(|n| attrs.get(n).cloned().unwrap_or(Value::Null))
                .collect();
        };
        let parts: Vec<Vec<u8>> = names
            .iter()
            .map(|n| {
                attrs
                    .get(n)
                    .and_then(bytes)
                    .map(|b| b.into_owned())
                    .unwrap_or_default()
            })
            .collect();
        binary(&parts.join(delimiter.as_slice()))
    }
}

/// The bits in which `value` (an integer, taken to the comparator's
/// width, or a binary as long as it) differs from `comparator`.
fn hamming(value: &Value, comparator: &[u8]) -> Option<u32> {
    let width = comparator.len();
    let bits: Vec<u8> = match int(value) {
        // Big-endian two's complement, as `<<Int:Width/integer>>`.
        Some(n) => (0..width)
            .map(|i| (n >> ((8 * (width - 1 - i)).min(127))) as u8)
            .collect(),
        None => bytes(value).filter(|b| b.len() == width)?.into_owned(),
    };
    Some(
        bits.iter()
            .zip(comparator)
            .map(|(x, y)| (x ^ y).count_ones())
            .sum(),
    )
}
