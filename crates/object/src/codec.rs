//! The versioned binary format of an object, on disk and between nodes.
//!
//! Layout (docs/formats/object.md has it byte by byte): the magic bytes
//! `0xE0 0x0B`, a version byte (1), the version vector, then the siblings.
//! Integers are unsigned LEB128 varints; byte strings are a varint length
//! followed by the bytes; optional strings have a presence byte.
//!
//! Decoding never panics and never allocates more than the input could
//! hold: every length is checked against the bytes that remain.

use crate::object::{Content, Link, Metadata, Pairs, RiakObject, Sibling};
use crate::vclock::{Actor, Dot, VersionVector};

/// The first two bytes of every encoded object.
pub const MAGIC: [u8; 2] = [0xE0, 0x0B];
/// The format version this code writes.
pub const VERSION: u8 = 1;

/// Why bytes could not be decoded as an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The magic bytes are missing: not an object.
    #[error("not an Eddy object (bad magic)")]
    BadMagic,
    /// A version this code does not know.
    #[error("unknown object format version {0}")]
    UnknownVersion(u8),
    /// The input ended inside a field.
    #[error("object truncated")]
    Truncated,
    /// A varint longer than 64 bits.
    #[error("malformed integer")]
    BadVarint,
    /// A flag byte with an unknown value.
    #[error("malformed flag byte")]
    BadFlag,
    /// Bytes left over after the object.
    #[error("trailing bytes after object")]
    Trailing,
}

/// Encodes an object.
pub fn encode(obj: &RiakObject) -> Vec<u8> {
    let mut w = Writer::default();
    w.buf.extend_from_slice(&MAGIC);
    w.buf.push(VERSION);
    w.vv(&obj.vv);
    w.varint(obj.siblings.len() as u64);
    for s in &obj.siblings {
        w.varint(s.dot.actor.0);
        w.varint(s.dot.counter);
        w.content(&s.content);
    }
    w.buf
}

/// Decodes an object written by [`encode`] (any known version).
pub fn decode(bytes: &[u8]) -> Result<RiakObject, DecodeError> {
    let mut r = Reader { buf: bytes };
    if r.take(2)? != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    match r.byte()? {
        1 => {}
        v => return Err(DecodeError::UnknownVersion(v)),
    }
    let vv = r.vv()?;
    let n = r.count(3)?;
    let mut siblings = Vec::with_capacity(n);
    for _ in 0..n {
        let actor = Actor(r.varint()?);
        let counter = r.varint()?;
        let content = r.content()?;
        siblings.push(Sibling {
            dot: Dot { actor, counter },
            content,
        });
    }
    if !r.buf.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(RiakObject { vv, siblings })
}

/// Encodes a version vector alone (the causal context's payload).
pub fn encode_vv(vv: &VersionVector) -> Vec<u8> {
    let mut w = Writer::default();
    w.vv(vv);
    w.buf
}

/// Decodes a version vector written by [`encode_vv`].
pub fn decode_vv(bytes: &[u8]) -> Result<VersionVector, DecodeError> {
    let mut r = Reader { buf: bytes };
    let vv = r.vv()?;
    match r.buf.is_empty() {
        true => Ok(vv),
        false => Err(DecodeError::Trailing),
    }
}

#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    fn opt(&mut self, b: &Option<Vec<u8>>) {
        match b {
            Some(b) => {
                self.buf.push(1);
                self.bytes(b);
            }
            None => self.buf.push(0),
        }
    }

    fn vv(&mut self, vv: &VersionVector) {
        self.varint(vv.entries().len() as u64);
        for &(actor, counter) in vv.entries() {
            self.varint(actor.0);
            self.varint(counter);
        }
    }

    fn content(&mut self, c: &Content) {
        let m = &c.meta;
        self.buf.push(u8::from(m.deleted));
        self.bytes(&c.value);
        self.opt(&m.content_type);
        self.opt(&m.charset);
        self.opt(&m.content_encoding);
        self.bytes(&m.vtag);
        self.varint(m.last_modified_us);
        self.pairs(&m.user_meta);
        self.varint(m.links.len() as u64);
        for l in &m.links {
            self.bytes(&l.bucket);
            self.bytes(&l.key);
            self.bytes(&l.tag);
        }
        self.pairs(&m.indexes);
    }

    fn pairs(&mut self, pairs: &[(Vec<u8>, Vec<u8>)]) {
        self.varint(pairs.len() as u64);
        for (k, v) in pairs {
            self.bytes(k);
            self.bytes(v);
        }
    }
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.buf.len() {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(DecodeError::BadVarint);
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::BadVarint)
    }

    /// A count of items each at least `min_item_bytes` long, checked against
    /// the remaining input so a corrupt count cannot force a huge allocation.
    fn count(&mut self, min_item_bytes: usize) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        let max = (self.buf.len() / min_item_bytes.max(1)) as u64;
        if n > max {
            return Err(DecodeError::Truncated);
        }
        Ok(n as usize)
    }

    fn bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| DecodeError::Truncated)?;
        Ok(self.take(n)?.to_vec())
    }

    fn flag(&mut self) -> Result<bool, DecodeError> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::BadFlag),
        }
    }

    fn opt(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        match self.flag()? {
            true => Ok(Some(self.bytes()?)),
            false => Ok(None),
        }
    }

    fn vv(&mut self) -> Result<VersionVector, DecodeError> {
        let n = self.count(2)?;
        let mut pairs = Vec::with_capacity(n);
        for _ in 0..n {
            pairs.push((Actor(self.varint()?), self.varint()?));
        }
        Ok(VersionVector::from_entries(pairs))
    }

    fn pairs(&mut self) -> Result<Pairs, DecodeError> {
        let n = self.count(2)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push((self.bytes()?, self.bytes()?));
        }
        Ok(out)
    }

    fn content(&mut self) -> Result<Content, DecodeError> {
        let deleted = self.flag()?;
        let value = self.bytes()?;
        let content_type = self.opt()?;
        let charset = self.opt()?;
        let content_encoding = self.opt()?;
        let vtag = self.bytes()?;
        let last_modified_us = self.varint()?;
        let user_meta = self.pairs()?;
        let n = self.count(3)?;
        let mut links = Vec::with_capacity(n);
        for _ in 0..n {
            let (bucket, key, tag) = (self.bytes()?, self.bytes()?, self.bytes()?);
            links.push(Link { bucket, key, tag });
        }
        let indexes = self.pairs()?;
        let meta = Metadata {
            content_type,
            charset,
            content_encoding,
            vtag,
            last_modified_us,
            user_meta,
            links,
            indexes,
            deleted,
        };
        Ok(Content { value, meta })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..12)
    }

    fn content() -> impl Strategy<Value = Content> {
        let pairs = || proptest::collection::vec((bytes(), bytes()), 0..3);
        let links = proptest::collection::vec((bytes(), bytes(), bytes()), 0..3);
        let opts = (
            proptest::option::of(bytes()),
            proptest::option::of(bytes()),
            proptest::option::of(bytes()),
        );
        (
            bytes(),
            opts,
            bytes(),
            any::<u64>(),
            pairs(),
            links,
            pairs(),
            any::<bool>(),
        )
            .prop_map(
                |(value, (ct, cs, ce), vtag, lm, user_meta, links, indexes, deleted)| Content {
                    value,
                    meta: Metadata {
                        content_type: ct,
                        charset: cs,
                        content_encoding: ce,
                        vtag,
                        last_modified_us: lm,
                        user_meta,
                        links: links
                            .into_iter()
                            .map(|(bucket, key, tag)| Link { bucket, key, tag })
                            .collect(),
                        indexes,
                        deleted,
                    },
                },
            )
    }

    fn object() -> impl Strategy<Value = RiakObject> {
        let vv = proptest::collection::vec((any::<u64>(), 1..u64::MAX), 0..4);
        let sibs = proptest::collection::vec((any::<u64>(), any::<u64>(), content()), 0..3);
        (vv, sibs).prop_map(|(vv, sibs)| RiakObject {
            vv: VersionVector::from_entries(vv.into_iter().map(|(a, n)| (Actor(a), n))),
            siblings: sibs
                .into_iter()
                .map(|(a, n, content)| Sibling {
                    dot: Dot {
                        actor: Actor(a),
                        counter: n,
                    },
                    content,
                })
                .collect(),
        })
    }

    proptest! {
        #[test]
        fn roundtrip(obj in object()) {
            prop_assert_eq!(decode(&encode(&obj)), Ok(obj));
        }

        #[test]
        fn damaged_input_is_an_error_not_a_panic(obj in object(), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
            let bytes = encode(&obj);
            let cut = cut.index(bytes.len());
            prop_assert!(decode(&bytes[..cut]).is_err());
            let mut flipped = bytes.clone();
            let i = flip.0.index(flipped.len());
            flipped[i] ^= flip.1 | 1;
            let _ = decode(&flipped);
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
            let mut prefixed = vec![0xE0, 0x0B, 1];
            prefixed.extend(bytes);
            let _ = decode(&prefixed);
        }
    }

    #[test]
    fn rejects_unknown_version_and_trailing_bytes() {
        let mut bytes = encode(&RiakObject::default());
        bytes.push(0);
        assert_eq!(decode(&bytes), Err(DecodeError::Trailing));
        assert_eq!(
            decode(&[0xE0, 0x0B, 9]),
            Err(DecodeError::UnknownVersion(9))
        );
        assert_eq!(decode(b"xx"), Err(DecodeError::BadMagic));
    }
}
