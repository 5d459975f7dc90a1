//! The opaque context a client reads with a set or map and sends back with
//! its removes: the value's clock, bound to the value's key and type, with
//! a checksum (docs/formats/datatypes.md "Context").
//!
//! Layout: format version (1), the binding (8 bytes big-endian: a hash the
//! node computes from the bucket type, bucket, key and data type), an
//! actor table and the clock as the stored encoding writes them, then a
//! CRC-32 (big-endian) of everything before it.
//!
//! Invariants: a context decodes only under the binding it was made for,
//! so one read from another key (or type) is refused, not misapplied; a
//! corrupt or oversized context is refused, never partly used.

use std::fmt;

use eddy_object::VersionVector;

use crate::codec::{Reader, Writer};

/// The context format's version.
const CONTEXT_VERSION: u8 = 1;

/// The largest context accepted (a clock of thousands of actors).
pub const CONTEXT_MAX: usize = 64 * 1024;

/// Why a client's context was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextError {
    /// Not a context this node made, or damaged on the way.
    Corrupt,
    /// A context read from another key or data type.
    OtherKey,
    /// Longer than [`CONTEXT_MAX`].
    TooLarge,
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContextError::Corrupt => "invalid context: it is corrupt or was not made by Eddy",
            ContextError::OtherKey => "invalid context: it was read from another key",
            ContextError::TooLarge => "invalid context: it is too large",
        })
    }
}

impl std::error::Error for ContextError {}

/// The context of a value whose clock is `clock`, bound to `binding`.
pub fn encode_context(clock: &VersionVector, binding: u64) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(CONTEXT_VERSION);
    w.u64_be(binding);
    w.clock_alone(clock);
    let crc = crc32fast::hash(&w.buf);
    w.buf.extend_from_slice(&crc.to_be_bytes());
    w.buf
}

/// The clock `bytes` carries, if they are a context made for `binding`.
pub fn decode_context(bytes: &[u8], binding: u64) -> Result<VersionVector, ContextError> {
    if bytes.len() > CONTEXT_MAX {
        return Err(ContextError::TooLarge);
    }
    let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
        return Err(ContextError::Corrupt);
    };
    if crc32fast::hash(body) != u32::from_be_bytes(*crc) {
        return Err(ContextError::Corrupt);
    }
    let mut r = Reader::new(body);
    let corrupt = |_| ContextError::Corrupt;
    if r.u8().map_err(corrupt)? != CONTEXT_VERSION {
        return Err(ContextError::Corrupt);
    }
    if r.u64_be().map_err(corrupt)? != binding {
        return Err(ContextError::OtherKey);
    }
    let clock = r.clock_alone().map_err(corrupt)?;
    r.finish().map_err(corrupt)?;
    Ok(clock)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::Actor;

    #[test]
    fn a_context_reads_back_only_under_its_binding() {
        let clock = VersionVector::from_entries([(Actor(3), 9), (Actor(1), 2)]);
        let bytes = encode_context(&clock, 42);
        assert_eq!(decode_context(&bytes, 42), Ok(clock));
        assert_eq!(decode_context(&bytes, 43), Err(ContextError::OtherKey));
        assert_eq!(decode_context(&[], 42), Err(ContextError::Corrupt), "empty");
    }

    #[test]
    fn every_flipped_byte_and_truncation_is_refused() {
        let clock = VersionVector::from_entries([(Actor(u64::MAX), 1 << 40)]);
        let bytes = encode_context(&clock, 7);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode_context(&bad, 7).is_err(), "flip at {i}");
            assert!(decode_context(&bytes[..i], 7).is_err(), "cut at {i}");
        }
        let huge = vec![0u8; CONTEXT_MAX + 1];
        assert_eq!(decode_context(&huge, 7), Err(ContextError::TooLarge));
    }
}
