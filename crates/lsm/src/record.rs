//! Value format of the lsm backend's objects (format version 1).
//!
//! Every stored value starts with an *expiry header*, so reads and the
//! compaction filter judge it without knowing anything else:
//!
//! - `0x00`: never expires (1 byte);
//! - `0x01` then the expiry as u64 big-endian Unix seconds (9 bytes).
//!
//! Any other first byte is corrupt (or from a newer format). After the
//! header come the user's value bytes.

use std::io::Read;

use fjall::UserValue;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_values_round_trip_and_damage_is_an_error() {
        for expiry in [None, Some(0), Some(9), Some(u64::MAX)] {
            assert_eq!(
                split_expiry(&object_value(expiry, b"v")),
                Ok((expiry, &b"v"[..]))
            );
        }
        assert!(split_expiry(&[7, 1, 2]).is_err());
        assert!(split_expiry(&[]).is_err());
        assert!(split_expiry(&[1, 0, 0, 0]).is_err());
    }
}
