//! The primitives of the vnode message format: big-endian integers,
//! flag bytes, length-prefixed strings and blobs.
//!
//! Invariants: a read never panics and never reserves more than the frame
//! holds (every length is checked against what remains, and against its
//! own limit, before anything is taken); a blob is a zero-copy slice of
//! the frame.

use bytes::{BufMut, Bytes, BytesMut};

use super::WireError;

/// Builds one message.
pub(super) struct Writer {
    pub(super) buf: BytesMut,
}

impl Writer {
    pub(super) fn with_capacity(capacity: usize) -> Writer {
        Writer {
            buf: BytesMut::with_capacity(capacity),
        }
    }

    pub(super) fn u8(&mut self, v: u8) {
        self.buf.put_u8(v);
    }

    pub(super) fn u16(&mut self, v: u16) {
        self.buf.put_u16(v);
    }

    pub(super) fn u32(&mut self, v: u32) {
        self.buf.put_u32(v);
    }

    pub(super) fn u64(&mut self, v: u64) {
        self.buf.put_u64(v);
    }

    pub(super) fn flag(&mut self, v: bool) {
        self.buf.put_u8(u8::from(v));
    }

    /// A `u16` length and the bytes, refused above `max` (every such
    /// limit is below `u16::MAX`).
    pub(super) fn short(
        &mut self,
        what: &'static str,
        b: &[u8],
        max: usize,
    ) -> Result<(), WireError> {
        check_len(what, b.len(), max.min(usize::from(u16::MAX)))?;
        self.u16(b.len() as u16);
        self.buf.put_slice(b);
        Ok(())
    }

    /// A `u32` length and the bytes, refused above
    /// [`super::BLOB_BYTES_MAX`].
    pub(super) fn blob(&mut self, what: &'static str, b: &[u8]) -> Result<(), WireError> {
        check_len(what, b.len(), super::BLOB_BYTES_MAX)?;
        self.u32(b.len() as u32);
        self.buf.put_slice(b);
        Ok(())
    }

    /// A text of at most `max` bytes: longer text is cut at a character
    /// boundary (texts are error messages, for logs and clients).
    pub(super) fn text(&mut self, s: &str, max: usize) {
        let max = max.min(usize::from(u16::MAX));
        let mut end = s.len().min(max);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.u16(end as u16);
        self.buf.put_slice(&s.as_bytes()[..end]);
    }

    pub(super) fn finish(self) -> Bytes {
        self.buf.freeze()
    }
}

/// Reads one message from its frame.
pub(super) struct Reader<'a> {
    frame: &'a Bytes,
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(frame: &'a Bytes) -> Reader<'a> {
        Reader { frame, pos: 0 }
    }

    pub(super) fn remaining(&self) -> usize {
        self.frame.len() - self.pos
    }

    /// The next byte, without reading it.
    pub(super) fn peek_u8(&self) -> Result<u8, WireError> {
        self.frame
            .get(self.pos)
            .copied()
            .ok_or(WireError::Truncated)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated);
        }
        let start = self.pos;
        self.pos += n;
        Ok(&self.frame[start..self.pos])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(super) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub(super) fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// A `u64` that must fit a `usize`.
    pub(super) fn count(&mut self) -> Result<usize, WireError> {
        usize::try_from(self.u64()?).map_err(|_| WireError::BadCount)
    }

    pub(super) fn flag(&mut self) -> Result<bool, WireError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(WireError::BadByte {
                what: "flag",
                value: v,
            }),
        }
    }

    /// A `u16`-prefixed byte string of at most `max` bytes, copied.
    pub(super) fn short(&mut self, what: &'static str, max: usize) -> Result<Vec<u8>, WireError> {
        let len = usize::from(self.u16()?);
        check_len(what, len, max)?;
        Ok(self.take(len)?.to_vec())
    }

    /// A `u32`-prefixed blob, as a slice of the frame (no copy).
    pub(super) fn blob(&mut self, what: &'static str) -> Result<Bytes, WireError> {
        let len = self.u32()? as usize;
        check_len(what, len, super::BLOB_BYTES_MAX)?;
        if len > self.remaining() {
            return Err(WireError::Truncated);
        }
        let start = self.pos;
        self.pos += len;
        Ok(self.frame.slice(start..self.pos))
    }

    /// A text of at most `max` bytes.
    pub(super) fn text(&mut self, what: &'static str, max: usize) -> Result<String, WireError> {
        String::from_utf8(self.short(what, max)?).map_err(|_| WireError::BadUtf8(what))
    }

    /// Ends the message: nothing may follow.
    pub(super) fn end(self) -> Result<(), WireError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(WireError::Trailing(n)),
        }
    }
}

fn check_len(what: &'static str, len: usize, max: usize) -> Result<(), WireError> {
    if len > max {
        return Err(WireError::TooLong { what, len, max });
    }
    Ok(())
}
