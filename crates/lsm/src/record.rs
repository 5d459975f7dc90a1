//! Value formats of the lsm backend (format version 1).
//!
//! Every stored value starts with an *expiry header*, so the compaction
//! filter can judge any entry without knowing which region it is in:
//!
//! - `0x00`: never expires (1 byte);
//! - `0x01` then the expiry as u64 big-endian Unix seconds (9 bytes).
//!
//! Any other first byte is corrupt (or from a newer format). After the header:
//!
//! - object value: the user's value bytes;
//! - terms record: u32 BE count, then per entry u32 BE field length, field,
//!   u32 BE term length, term — the key's `(field, term)` set in order;
//! - index entry: nothing (the entry is all key).
//!
//! Invariant: a key's terms record, its index entries and its object carry
//! the same expiry, written in one batch, so an index entry's own header says
//! whether its object is live without a lookup.

use std::collections::BTreeSet;
use std::io::Read;

use fjall::UserValue;

/// A key's set of `(field, term)` index entries.
pub type Terms = BTreeSet<(Vec<u8>, Vec<u8>)>;

const NO_EXPIRY: u8 = 0x00;
const HAS_EXPIRY: u8 = 0x01;

/// Why a stored value could not be decoded.
pub type DecodeError = &'static str;

/// Appends the expiry header for `expires_at_secs`.
pub fn push_expiry(out: &mut Vec<u8>, expires_at_secs: Option<u64>) {
    match expires_at_secs {
        None => out.push(NO_EXPIRY),
        Some(secs) => {
            out.push(HAS_EXPIRY);
            out.extend_from_slice(&secs.to_be_bytes());
        }
    }
}

/// The expiry header alone (an index entry's value).
pub fn expiry_only(expires_at_secs: Option<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    push_expiry(&mut out, expires_at_secs);
    out
}

/// Splits a stored value into its expiry and the bytes after the header.
pub fn split_expiry(value: &[u8]) -> Result<(Option<u64>, &[u8]), DecodeError> {
    match value.split_first() {
        Some((&NO_EXPIRY, rest)) => Ok((None, rest)),
        Some((&HAS_EXPIRY, rest)) => {
            let (secs, rest) = rest
                .split_first_chunk::<8>()
                .ok_or("truncated expiry header")?;
            Ok((Some(u64::from_be_bytes(*secs)), rest))
        }
        Some(_) => Err("unknown value header"),
        None => Err("empty value"),
    }
}

/// An object value: header then the user's bytes, built straight into
/// fjall's value type so the value is copied once (a `Vec` would be copied
/// again into a `Slice`).
pub fn object_value(expires_at_secs: Option<u64>, value: &[u8]) -> UserValue {
    let mut header = Vec::with_capacity(9);
    push_expiry(&mut header, expires_at_secs);
    let len = header.len() + value.len();
    let mut bytes = header.as_slice().chain(value);
    // Reading exactly `len` bytes from two slices that hold `len` cannot fail.
    UserValue::from_reader(&mut bytes, len)
        .unwrap_or_else(|_| [header, value.to_vec()].concat().into())
}

/// A key's current index entries and the expiry they share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermsRecord {
    pub expires_at_secs: Option<u64>,
    pub terms: Terms,
}

impl TermsRecord {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let size: usize = self.terms.iter().map(|(f, t)| f.len() + t.len() + 8).sum();
        let mut out = Vec::with_capacity(size + 13);
        push_expiry(&mut out, self.expires_at_secs);
        push_u32(&mut out, self.terms.len());
        for (field, term) in &self.terms {
            push_u32(&mut out, field.len());
            out.extend_from_slice(field);
            push_u32(&mut out, term.len());
            out.extend_from_slice(term);
        }
        out
    }

    /// Parses a stored terms record.
    pub fn decode(value: &[u8]) -> Result<Self, DecodeError> {
        let (expires_at_secs, mut rest) = split_expiry(value)?;
        let count = take_u32(&mut rest)?;
        let mut terms = Terms::new();
        for _ in 0..count {
            let field = take_bytes(&mut rest)?;
            let term = take_bytes(&mut rest)?;
            terms.insert((field, term));
        }
        if !rest.is_empty() {
            return Err("trailing bytes after terms record");
        }
        Ok(TermsRecord {
            expires_at_secs,
            terms,
        })
    }
}

fn push_u32(out: &mut Vec<u8>, n: usize) {
    // Lengths are bounded by `eddy_storage::limits` far below u32::MAX.
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    out.extend_from_slice(&n.to_be_bytes());
}

fn take_u32(rest: &mut &[u8]) -> Result<usize, DecodeError> {
    let (n, tail) = rest
        .split_first_chunk::<4>()
        .ok_or("truncated terms record")?;
    *rest = tail;
    Ok(u32::from_be_bytes(*n) as usize)
}

fn take_bytes(rest: &mut &[u8]) -> Result<Vec<u8>, DecodeError> {
    let len = take_u32(rest)?;
    if rest.len() < len {
        return Err("truncated terms record");
    }
    let (bytes, tail) = rest.split_at(len);
    *rest = tail;
    Ok(bytes.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_records_round_trip() {
        let mut terms = Terms::new();
        terms.insert((b"f_bin".to_vec(), b"a\x00b".to_vec()));
        terms.insert((b"g_int".to_vec(), vec![]));
        for expires_at_secs in [None, Some(0), Some(u64::MAX)] {
            let record = TermsRecord {
                expires_at_secs,
                terms: terms.clone(),
            };
            assert_eq!(TermsRecord::decode(&record.encode()), Ok(record));
        }
    }

    #[test]
    fn damaged_values_are_errors_not_panics() {
        let record = TermsRecord {
            expires_at_secs: Some(5),
            terms: [(b"f".to_vec(), b"t".to_vec())].into(),
        };
        let encoded = record.encode();
        for cut in 0..encoded.len() {
            assert!(TermsRecord::decode(&encoded[..cut]).is_err(), "cut {cut}");
        }
        assert!(split_expiry(&[7, 1, 2]).is_err());
        assert_eq!(
            split_expiry(&object_value(Some(9), b"v")),
            Ok((Some(9), &b"v"[..]))
        );
    }
}
