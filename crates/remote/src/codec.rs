//! The one byte codec of node-to-node messages: the vnode messages
//! ([`crate::wire`]), handoff's messages and its checkpoint files
//! ([`crate::handoff::wire`]) are written and read with it. Big-endian
//! integers, flag bytes, `u16`-prefixed short strings and texts,
//! `u32`-prefixed blobs and `u32`-counted lists.
//!
//! Each format keeps its own error type, which takes a [`CodecError`]
//! (`From`), and its own tags and layout; byte for byte, both formats are
//! what they were when each had its own reader and writer (the vnode
//! messages' fixtures pin it).
//!
//! Invariants: a read never panics and never reserves more than the frame
//! holds (every length is checked against what remains, and against its
//! own limit, before anything is taken; a list's count is not trusted for
//! an allocation); a blob is a zero-copy slice of the frame.

use bytes::{BufMut, Bytes, BytesMut};

/// Longest blob (an encoded object or version vector): twice the storage
/// layer's value limit, room for any object's metadata too; the
/// transport's frame limit is usually far lower.
pub const BLOB_BYTES_MAX: usize = 2 * eddy_storage::limits::VALUE_BYTES_MAX;

/// Why bytes did not read as the fields asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The message ended inside a field.
    #[error("message truncated")]
    Truncated,
    /// A byte that must be one of a few values is not.
    #[error("bad {what} byte {value}")]
    BadByte { what: &'static str, value: u8 },
    /// A length above its limit.
    #[error("{what} of {len} bytes exceeds the limit of {max}")]
    TooLong {
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// A count that does not fit this machine's `usize`.
    #[error("count out of range")]
    BadCount,
    /// A text that is not UTF-8.
    #[error("{0} is not UTF-8")]
    BadUtf8(&'static str),
    /// Bytes follow the message.
    #[error("{0} trailing bytes")]
    Trailing(usize),
}

/// Builds one message.
pub(crate) struct Writer {
    pub(crate) buf: BytesMut,
}

impl Writer {
    pub(crate) fn with_capacity(capacity: usize) -> Writer {
        Writer {
            buf: BytesMut::with_capacity(capacity),
        }
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.buf.put_u8(v);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.buf.put_u16(v);
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.buf.put_u32(v);
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.buf.put_u64(v);
    }

    pub(crate) fn flag(&mut self, v: bool) {
        self.buf.put_u8(u8::from(v));
    }

    /// Room for `additional` more bytes (a message whose size is known).
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// A `u16` length and the bytes, refused above `max` (every such
    /// limit is below `u16::MAX`).
    pub(crate) fn short(
        &mut self,
        what: &'static str,
        b: &[u8],
        max: usize,
    ) -> Result<(), CodecError> {
        check_len(what, b.len(), max.min(usize::from(u16::MAX)))?;
        self.u16(b.len() as u16);
        self.buf.put_slice(b);
        Ok(())
    }

    /// A `u32` length and the bytes, refused above [`BLOB_BYTES_MAX`].
    pub(crate) fn blob(&mut self, what: &'static str, b: &[u8]) -> Result<(), CodecError> {
        check_len(what, b.len(), BLOB_BYTES_MAX)?;
        self.bytes(b);
        Ok(())
    }

    /// A `u32` length and the bytes, for a caller whose bytes are bounded
    /// already (handoff's keys and objects, which came out of a backend).
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.buf.put_slice(b);
    }

    /// A text of at most `max` bytes: longer text is cut at a character
    /// boundary (texts are error messages, for logs and clients).
    pub(crate) fn text(&mut self, s: &str, max: usize) {
        let max = max.min(usize::from(u16::MAX));
        let mut end = s.len().min(max);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.u16(end as u16);
        self.buf.put_slice(&s.as_bytes()[..end]);
    }

    pub(crate) fn finish(self) -> Bytes {
        self.buf.freeze()
    }
}

/// Reads one message from its frame.
pub(crate) struct Reader<'a> {
    frame: &'a Bytes,
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(frame: &'a Bytes) -> Reader<'a> {
        Reader { frame, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.frame.len() - self.pos
    }

    /// The next byte, without reading it.
    pub(crate) fn peek_u8(&self) -> Result<u8, CodecError> {
        self.frame
            .get(self.pos)
            .copied()
            .ok_or(CodecError::Truncated)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.remaining() {
            return Err(CodecError::Truncated);
        }
        let start = self.pos;
        self.pos += n;
        Ok(&self.frame[start..self.pos])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, CodecError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// A `u64` that must fit a `usize`.
    pub(crate) fn count(&mut self) -> Result<usize, CodecError> {
        usize::try_from(self.u64()?).map_err(|_| CodecError::BadCount)
    }

    pub(crate) fn flag(&mut self) -> Result<bool, CodecError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(CodecError::BadByte {
                what: "flag",
                value: v,
            }),
        }
    }

    /// A `u16`-prefixed byte string of at most `max` bytes, copied.
    pub(crate) fn short(&mut self, what: &'static str, max: usize) -> Result<Vec<u8>, CodecError> {
        let len = usize::from(self.u16()?);
        check_len(what, len, max)?;
        Ok(self.take(len)?.to_vec())
    }

    /// A `u32`-prefixed blob, as a slice of the frame (no copy).
    pub(crate) fn blob(&mut self, what: &'static str) -> Result<Bytes, CodecError> {
        let len = self.u32()? as usize;
        check_len(what, len, BLOB_BYTES_MAX)?;
        self.take_slice(len)
    }

    /// A `u32`-prefixed byte string bounded only by the frame, as a slice
    /// of it (no copy).
    pub(crate) fn bytes(&mut self) -> Result<Bytes, CodecError> {
        let len = self.u32()? as usize;
        self.take_slice(len)
    }

    fn take_slice(&mut self, len: usize) -> Result<Bytes, CodecError> {
        if len > self.remaining() {
            return Err(CodecError::Truncated);
        }
        let start = self.pos;
        self.pos += len;
        Ok(self.frame.slice(start..self.pos))
    }

    /// A `u32` count, then that many elements. The count is not trusted
    /// for an allocation: elements are pushed as they decode.
    pub(crate) fn list<T, E: From<CodecError>>(
        &mut self,
        mut one: impl FnMut(&mut Reader<'a>) -> Result<T, E>,
    ) -> Result<Vec<T>, E> {
        let n = self.u32()?;
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(one(self)?);
        }
        Ok(out)
    }

    /// A text of at most `max` bytes.
    pub(crate) fn text(&mut self, what: &'static str, max: usize) -> Result<String, CodecError> {
        String::from_utf8(self.short(what, max)?).map_err(|_| CodecError::BadUtf8(what))
    }

    /// Ends the message: nothing may follow.
    pub(crate) fn end(&self) -> Result<(), CodecError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(CodecError::Trailing(n)),
        }
    }
}

fn check_len(what: &'static str, len: usize, max: usize) -> Result<(), CodecError> {
    if len > max {
        return Err(CodecError::TooLong { what, len, max });
    }
    Ok(())
}
