//! The frame codec: what travels on a connection after the handshake.
//!
//! A frame is a 13-byte header — `u32` body length, `u8` kind, `u64`
//! request id, all big-endian — followed by the body (docs/formats/transport.md).
//!
//! Invariants: [`decode`] never allocates more than the announced length
//! after checking it against the maximum, never panics on any input, and
//! hands the body out as a slice of the read buffer (no copy).

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Bytes in a frame header.
pub const FRAME_HEADER_BYTES: usize = 13;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// A call: the peer answers with a reply or an error of the same id.
    Request,
    /// The answer to a request.
    Reply,
    /// A message that gets no answer; its id is 0.
    OneWay,
    /// A request that failed at the peer: the body is an [`ErrorCode`] byte
    /// and a UTF-8 reason.
    Error,
}

impl FrameKind {
    /// The kind's byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            FrameKind::Request => 1,
            FrameKind::Reply => 2,
            FrameKind::OneWay => 3,
            FrameKind::Error => 4,
        }
    }

    /// The kind of a wire byte, if it names one.
    pub fn from_code(code: u8) -> Option<FrameKind> {
        match code {
            1 => Some(FrameKind::Request),
            2 => Some(FrameKind::Reply),
            3 => Some(FrameKind::OneWay),
            4 => Some(FrameKind::Error),
            _ => None,
        }
    }
}

/// Why a request failed at the peer, the first byte of an error frame's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The handler dropped the request without answering.
    NoReply,
    /// The peer has no handler registered yet.
    NoHandler,
    /// The reply was larger than the frame limit.
    TooLarge,
    /// The handler refused the request because it is overloaded.
    Overloaded,
}

impl ErrorCode {
    /// The code's byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            ErrorCode::NoReply => 1,
            ErrorCode::NoHandler => 2,
            ErrorCode::TooLarge => 3,
            ErrorCode::Overloaded => 4,
        }
    }

    /// The code of a wire byte; an unknown code reads as `NoReply`, so a
    /// newer peer's reasons still fail the call cleanly.
    pub fn from_code(code: u8) -> ErrorCode {
        match code {
            2 => ErrorCode::NoHandler,
            3 => ErrorCode::TooLarge,
            4 => ErrorCode::Overloaded,
            _ => ErrorCode::NoReply,
        }
    }
}

/// One decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// What the frame carries.
    pub kind: FrameKind,
    /// Matches a reply or error to its request; 0 for one-way frames.
    pub request_id: u64,
    /// The payload, opaque to the transport.
    pub body: Bytes,
}

/// Why bytes from a peer are not a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The kind byte names no frame kind.
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// The announced body is larger than this side accepts.
    #[error("frame body of {size} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Announced body length.
        size: u64,
        /// The configured maximum.
        max: usize,
    },
    /// The input ended inside a frame.
    #[error("input ends inside a frame ({0} bytes left over)")]
    Truncated(usize),
}

/// Appends a frame header for a body of `body_len` bytes.
pub fn encode_header(kind: FrameKind, request_id: u64, body_len: usize, out: &mut BytesMut) {
    let len = u32::try_from(body_len).unwrap_or(u32::MAX);
    out.reserve(FRAME_HEADER_BYTES);
    out.put_u32(len);
    out.put_u8(kind.code());
    out.put_u64(request_id);
}

/// Appends a whole frame, header and body.
pub fn encode(frame: &Frame, out: &mut BytesMut) {
    encode_header(frame.kind, frame.request_id, frame.body.len(), out);
    out.extend_from_slice(&frame.body);
}

/// The body of an error frame.
pub fn error_body(code: ErrorCode, reason: &str) -> Bytes {
    let mut out = BytesMut::with_capacity(1 + reason.len());
    out.put_u8(code.code());
    out.extend_from_slice(reason.as_bytes());
    out.freeze()
}

/// Reads an error frame's body; a reason that is not UTF-8 is shown lossily.
pub fn parse_error_body(body: &[u8]) -> (ErrorCode, String) {
    match body.split_first() {
        Some((&code, reason)) => (
            ErrorCode::from_code(code),
            String::from_utf8_lossy(reason).into_owned(),
        ),
        None => (ErrorCode::NoReply, String::new()),
    }
}

/// Takes one whole frame off the front of `buf`, if it holds one.
///
/// `Ok(None)` means more bytes are needed; the return says how many more at
/// least through [`bytes_needed`]. The body shares `buf`'s allocation.
pub fn decode(buf: &mut BytesMut, max_body: usize) -> Result<Option<Frame>, FrameError> {
    let Some((kind, request_id, body_len)) = peek_header(buf, max_body)? else {
        return Ok(None);
    };
    if buf.len() < FRAME_HEADER_BYTES + body_len {
        return Ok(None);
    }
    buf.advance(FRAME_HEADER_BYTES);
    let body = buf.split_to(body_len).freeze();
    Ok(Some(Frame {
        kind,
        request_id,
        body,
    }))
}

/// How many bytes the frame at the front of `buf` needs in all, once its
/// header is there and checked.
pub fn bytes_needed(buf: &[u8], max_body: usize) -> Result<Option<usize>, FrameError> {
    Ok(peek_header(buf, max_body)?.map(|(_, _, len)| FRAME_HEADER_BYTES + len))
}

/// Decodes a buffer that must hold whole frames and nothing else.
pub fn decode_all(bytes: &[u8], max_body: usize) -> Result<Vec<Frame>, FrameError> {
    let mut buf = BytesMut::from(bytes);
    let mut frames = Vec::new();
    while let Some(frame) = decode(&mut buf, max_body)? {
        frames.push(frame);
    }
    if buf.is_empty() {
        Ok(frames)
    } else {
        Err(FrameError::Truncated(buf.len()))
    }
}

fn peek_header(buf: &[u8], max_body: usize) -> Result<Option<(FrameKind, u64, usize)>, FrameError> {
    let Some(mut header) = buf.get(..FRAME_HEADER_BYTES) else {
        return Ok(None);
    };
    let len = header.get_u32();
    let kind_code = header.get_u8();
    let request_id = header.get_u64();
    let kind = FrameKind::from_code(kind_code).ok_or(FrameError::UnknownKind(kind_code))?;
    let body_len = usize::try_from(len).unwrap_or(usize::MAX);
    if body_len > max_body {
        return Err(FrameError::TooLarge {
            size: u64::from(len),
            max: max_body,
        });
    }
    Ok(Some((kind, request_id, body_len)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAX: usize = 1 << 20;

    fn kind() -> impl Strategy<Value = FrameKind> {
        prop_oneof![
            Just(FrameKind::Request),
            Just(FrameKind::Reply),
            Just(FrameKind::OneWay),
            Just(FrameKind::Error),
        ]
    }

    fn frame() -> impl Strategy<Value = Frame> {
        (
            kind(),
            any::<u64>(),
            proptest::collection::vec(any::<u8>(), 0..2048),
        )
            .prop_map(|(kind, request_id, body)| Frame {
                kind,
                request_id,
                body: Bytes::from(body),
            })
    }

    fn encode_all(frames: &[Frame]) -> BytesMut {
        let mut out = BytesMut::new();
        for f in frames {
            encode(f, &mut out);
        }
        out
    }

    proptest! {
        #[test]
        fn frames_round_trip(frames in proptest::collection::vec(frame(), 0..8)) {
            let bytes = encode_all(&frames);
            prop_assert_eq!(decode_all(&bytes, MAX).unwrap(), frames);
        }

        #[test]
        fn any_truncation_is_an_error(frames in proptest::collection::vec(frame(), 1..4), cut in any::<prop::sample::Index>()) {
            let bytes = encode_all(&frames);
            let cut = cut.index(bytes.len());
            let decoded = decode_all(&bytes[..cut], MAX);
            let whole_frames = frames.iter().scan(0, |end, f| {
                *end += FRAME_HEADER_BYTES + f.body.len();
                Some(*end)
            }).take_while(|end| *end <= cut).count();
            if frames.iter().take(whole_frames).map(|f| FRAME_HEADER_BYTES + f.body.len()).sum::<usize>() == cut {
                prop_assert_eq!(decoded.unwrap(), frames[..whole_frames].to_vec());
            } else {
                let truncated = matches!(decoded, Err(FrameError::Truncated(_)));
                prop_assert!(truncated);
            }
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512), max in 0usize..1024) {
            // Whatever comes back, each frame obeys the limit and the kinds.
            if let Ok(frames) = decode_all(&bytes, max) {
                prop_assert!(frames.iter().all(|f| f.body.len() <= max));
            }
        }

        #[test]
        fn oversized_bodies_are_refused_from_the_header(len in (MAX as u32 + 1)..=u32::MAX) {
            let mut buf = BytesMut::new();
            buf.put_u32(len);
            buf.put_u8(FrameKind::Request.code());
            buf.put_u64(7);
            let too_large = matches!(decode(&mut buf, MAX), Err(FrameError::TooLarge { .. }));
            prop_assert!(too_large);
        }

        #[test]
        fn error_bodies_round_trip(code in prop_oneof![Just(ErrorCode::NoReply), Just(ErrorCode::NoHandler), Just(ErrorCode::TooLarge), Just(ErrorCode::Overloaded)], reason in ".{0,40}") {
            prop_assert_eq!(parse_error_body(&error_body(code, &reason)), (code, reason));
        }
    }

    #[test]
    fn a_body_is_a_slice_of_the_read_buffer() {
        let mut buf = encode_all(&[Frame {
            kind: FrameKind::Reply,
            request_id: 1,
            body: Bytes::from_static(b"hello"),
        }]);
        let start = buf.as_ptr() as usize;
        let frame = decode(&mut buf, MAX).unwrap().unwrap();
        assert_eq!(frame.body.as_ptr() as usize, start + FRAME_HEADER_BYTES);
    }

    #[test]
    fn unknown_kinds_are_refused() {
        let mut buf = BytesMut::new();
        encode_header(FrameKind::Reply, 1, 0, &mut buf);
        buf[4] = 9;
        assert_eq!(decode(&mut buf, MAX), Err(FrameError::UnknownKind(9)));
    }
}
