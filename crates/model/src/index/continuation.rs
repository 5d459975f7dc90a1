//! The opaque continuation of a paginated 2i query: where the last page
//! ended, and which query it belongs to.
//!
//! Format (then base64, standard alphabet): version `1` ‖ the query's
//! fingerprint (u64, big-endian) ‖ term length (u32, big-endian) ‖ term ‖
//! key. The fingerprint hashes the bucket, field, bounds and regex, so a
//! continuation handed to another query is refused instead of silently
//! skipping entries.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::query::{IndexScan, ScanField};

const VERSION: u8 = 1;
/// The longest continuation accepted, in bytes as sent.
pub const CONTINUATION_BYTES_MAX: usize = 4096;

/// Where a page ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Continuation {
    pub fingerprint: u64,
    /// The last entry's term as stored (the key for `$key`/`$bucket`).
    pub term: Vec<u8>,
    pub key: Vec<u8>,
}

impl Continuation {
    pub fn encode(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity(13 + self.term.len() + self.key.len());
        raw.push(VERSION);
        raw.extend_from_slice(&self.fingerprint.to_be_bytes());
        raw.extend_from_slice(&(self.term.len() as u32).to_be_bytes());
        raw.extend_from_slice(&self.term);
        raw.extend_from_slice(&self.key);
        STANDARD.encode(raw).into_bytes()
    }

    /// Reads a continuation a client sent back.
    pub fn decode(sent: &[u8]) -> Result<Continuation, String> {
        const BAD: &str = "Invalid continuation";
        if sent.len() > CONTINUATION_BYTES_MAX {
            return Err(format!("{BAD}: longer than {CONTINUATION_BYTES_MAX} bytes"));
        }
        let raw = STANDARD
            .decode(sent)
            .map_err(|_| format!("{BAD}: not base64"))?;
        let (&version, rest) = raw.split_first().ok_or(BAD)?;
        if version != VERSION || rest.len() < 12 {
            return Err(BAD.into());
        }
        let (fp, rest) = rest.split_at(8);
        let (len, rest) = rest.split_at(4);
        let len = u32::from_be_bytes(len.try_into().map_err(|_| BAD)?) as usize;
        if len > rest.len() {
            return Err(BAD.into());
        }
        let (term, key) = rest.split_at(len);
        Ok(Continuation {
            fingerprint: u64::from_be_bytes(fp.try_into().map_err(|_| BAD)?),
            term: term.to_vec(),
            key: key.to_vec(),
        })
    }
}

/// A hash of what makes two queries the same query (not the page size).
pub fn fingerprint(scan: &IndexScan) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut part = |b: &[u8]| {
        h.update(&(b.len() as u64).to_be_bytes());
        h.update(b);
    };
    part(&scan.bucket);
    match &scan.field {
        ScanField::Bucket => part(b"$bucket"),
        ScanField::Key => part(b"$key"),
        ScanField::Term(f) => part(f),
    }
    part(&scan.start);
    part(&scan.end);
    part(scan.regex.as_deref().unwrap_or("").as_bytes());
    h.digest()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trips(fp in any::<u64>(), term in prop::collection::vec(any::<u8>(), 0..20),
                       key in prop::collection::vec(any::<u8>(), 0..20)) {
            let c = Continuation { fingerprint: fp, term, key };
            prop_assert_eq!(Continuation::decode(&c.encode()), Ok(c));
        }

        #[test]
        fn garbage_is_refused_not_a_panic(sent in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = Continuation::decode(&sent);
        }
    }

    #[test]
    fn bad_continuations_are_refused() {
        assert!(Continuation::decode(b"!!").is_err());
        assert!(Continuation::decode(STANDARD.encode([2u8; 20]).as_bytes()).is_err());
        let mut short = vec![1u8];
        short.extend_from_slice(&[0; 8]);
        short.extend_from_slice(&9u32.to_be_bytes());
        assert!(Continuation::decode(STANDARD.encode(short).as_bytes()).is_err());
        assert!(Continuation::decode(&vec![b'A'; CONTINUATION_BYTES_MAX + 4]).is_err());
    }
}
