//! The opaque causal context clients carry (`X-Riak-Vclock`, PB `vclock`).
//!
//! It is the object's version vector, prefixed with a format version byte
//! and base64-encoded for HTTP. Clients must treat it as opaque; Eddy
//! rejects a context it cannot decode with a clear error rather than
//! treating it as empty (which would silently create siblings).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::codec::{self, DecodeError};
use crate::vclock::VersionVector;

/// The context format version this code writes.
pub const CONTEXT_VERSION: u8 = 1;

/// Why a client's causal context was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// Not valid base64.
    #[error("causal context is not valid base64")]
    NotBase64,
    /// Empty, or a version this node does not know.
    #[error("causal context has an unknown format")]
    UnknownFormat,
    /// The payload did not decode.
    #[error("causal context is malformed: {0}")]
    Malformed(DecodeError),
}

/// The binary context (PB's `vclock` field).
pub fn to_bytes(vv: &VersionVector) -> Vec<u8> {
    let mut out = vec![CONTEXT_VERSION];
    out.extend(codec::encode_vv(vv));
    out
}

/// Parses a binary context.
pub fn from_bytes(bytes: &[u8]) -> Result<VersionVector, ContextError> {
    match bytes.split_first() {
        Some((&CONTEXT_VERSION, rest)) => codec::decode_vv(rest).map_err(ContextError::Malformed),
        _ => Err(ContextError::UnknownFormat),
    }
}

/// The base64 context (HTTP's `X-Riak-Vclock` header).
pub fn to_base64(vv: &VersionVector) -> String {
    STANDARD.encode(to_bytes(vv))
}

/// Parses a base64 context.
pub fn from_base64(text: &str) -> Result<VersionVector, ContextError> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|_| ContextError::NotBase64)?;
    from_bytes(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vclock::Actor;

    #[test]
    fn roundtrips_and_rejects_garbage() {
        let vv = VersionVector::from_entries([(Actor(3), 9), (Actor(1), 2)]);
        assert_eq!(from_base64(&to_base64(&vv)), Ok(vv.clone()));
        assert_eq!(from_bytes(&to_bytes(&vv)), Ok(vv));
        assert_eq!(from_base64("!!!"), Err(ContextError::NotBase64));
        assert_eq!(from_base64(""), Err(ContextError::UnknownFormat));
        assert!(matches!(
            from_bytes(&[1, 5]),
            Err(ContextError::Malformed(_))
        ));
    }
}
