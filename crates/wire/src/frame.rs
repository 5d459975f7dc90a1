//! Riak's PB framing: `length: u32 BE ‖ code: u8 ‖ message`, where `length`
//! counts the code byte and the message (so it is at least 1; a bare
//! acknowledgement is `00 00 00 01 code`).
//!
//! Reading enforces the frame limit before reading the body, and grows the
//! body buffer only as bytes arrive, so a header promising a large frame
//! costs nothing until the bytes are really sent. Which limit applies is the
//! reader's business: the server's is its configured request size, the
//! client's is larger than any answer a server may send.

use std::time::Duration;

use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes of the length prefix.
pub const LENGTH_BYTES: usize = 4;

/// One frame: a message code and the encoded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The message code (see [`crate::codes`]).
    pub code: u8,
    /// The encoded protobuf message; empty for bare acknowledgements.
    pub body: Vec<u8>,
}

/// Why no frame could be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// The peer closed the connection inside a frame.
    #[error("connection closed inside a frame")]
    Truncated,
    /// The length prefix is zero: there is not even a message code.
    #[error("empty frame")]
    Empty,
    /// The length prefix exceeds the reader's limit.
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// The length the prefix promised.
        len: usize,
        /// The reader's limit.
        max: usize,
    },
    /// The peer sent nothing for the read timeout.
    #[error("read timed out")]
    Timeout,
    /// The socket failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl FrameError {
    /// Whether the peer broke the framing rules (rather than going away or
    /// going silent), so it should be told before the connection is closed.
    pub fn is_protocol_error(&self) -> bool {
        matches!(self, FrameError::Empty | FrameError::TooLarge { .. })
    }
}

/// Reads one frame of at most `frame_bytes_max` bytes (code included). Each
/// socket read waits at most `timeout`, when one is given.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    frame_bytes_max: usize,
    timeout: Option<Duration>,
) -> Result<Frame, FrameError> {
    let len = read_length(reader, frame_bytes_max, timeout).await?;
    read_body(reader, len, timeout).await
}

/// Reads a frame's length prefix and checks it against `frame_bytes_max`.
pub async fn read_length<R: AsyncRead + Unpin>(
    reader: &mut R,
    frame_bytes_max: usize,
    timeout: Option<Duration>,
) -> Result<usize, FrameError> {
    let mut header = [0u8; LENGTH_BYTES];
    let got = with_timeout(timeout, read_full(reader, &mut header)).await??;
    match got {
        0 => return Err(FrameError::Closed),
        LENGTH_BYTES => {}
        _ => return Err(FrameError::Truncated),
    }
    let len = u32::from_be_bytes(header) as usize;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > frame_bytes_max {
        return Err(FrameError::TooLarge {
            len,
            max: frame_bytes_max,
        });
    }
    Ok(len)
}

/// Reads the `len` bytes (code and message) after a length prefix.
pub async fn read_body<R: AsyncRead + Unpin>(
    reader: &mut R,
    len: usize,
    timeout: Option<Duration>,
) -> Result<Frame, FrameError> {
    let mut bytes = Vec::with_capacity(len.min(64 * 1024));
    let mut limited = reader.take(len as u64);
    loop {
        let n = with_timeout(timeout, limited.read_buf(&mut bytes)).await??;
        if bytes.len() == len {
            break;
        }
        if n == 0 {
            return Err(FrameError::Truncated);
        }
    }
    let body = bytes.split_off(1);
    Ok(Frame {
        code: bytes[0],
        body,
    })
}

/// Reads until `buf` is full or the peer closes; returns the bytes read.
async fn read_full<R: AsyncRead + Unpin>(reader: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]).await? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

async fn with_timeout<T>(
    timeout: Option<Duration>,
    fut: impl Future<Output = std::io::Result<T>>,
) -> Result<std::io::Result<T>, FrameError> {
    match timeout {
        Some(t) => tokio::time::timeout(t, fut)
            .await
            .map_err(|_| FrameError::Timeout),
        None => Ok(fut.await),
    }
}

/// Appends the frame of `message` under `code` to `out`.
pub fn encode_frame(code: u8, message: &impl Message, out: &mut Vec<u8>) {
    let len = 1 + message.encoded_len();
    out.reserve(LENGTH_BYTES + len);
    out.extend_from_slice(&(len as u32).to_be_bytes());
    out.push(code);
    // Encoding into a Vec cannot run out of space.
    let _ = message.encode(out);
}

/// Appends a frame with a code and no message (Riak's bare acknowledgements).
pub fn encode_empty(code: u8, out: &mut Vec<u8>) {
    out.extend_from_slice(&1u32.to_be_bytes());
    out.push(code);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::RpbErrorResp;

    async fn read(bytes: &[u8], max: usize) -> Result<Frame, FrameError> {
        let mut r = bytes;
        read_frame(&mut r, max, None).await
    }

    #[tokio::test]
    async fn frames_roundtrip() {
        let msg = RpbErrorResp {
            errmsg: b"x".to_vec(),
            errcode: 0,
        };
        let mut out = Vec::new();
        encode_frame(0, &msg, &mut out);
        encode_empty(2, &mut out);
        let mut r = out.as_slice();
        let f = read_frame(&mut r, 100, None).await.unwrap();
        assert_eq!(f.code, 0);
        assert_eq!(RpbErrorResp::decode(f.body.as_slice()).unwrap(), msg);
        let f = read_frame(&mut r, 100, None).await.unwrap();
        assert_eq!((f.code, f.body.len()), (2, 0));
        assert!(matches!(
            read_frame(&mut r, 100, None).await,
            Err(FrameError::Closed)
        ));
    }

    #[tokio::test]
    async fn bad_frames_are_refused() {
        assert!(matches!(
            read(&[0, 0], 10).await,
            Err(FrameError::Truncated)
        ));
        assert!(matches!(
            read(&[0, 0, 0, 5, 1], 10).await,
            Err(FrameError::Truncated)
        ));
        assert!(matches!(
            read(&[0, 0, 0, 0], 10).await,
            Err(FrameError::Empty)
        ));
        assert!(matches!(
            read(&[0, 0, 0, 11], 10).await,
            Err(FrameError::TooLarge { len: 11, max: 10 })
        ));
    }

    #[test]
    fn frames_are_riaks_bytes() {
        let msg = RpbErrorResp {
            errmsg: b"no".to_vec(),
            errcode: 0,
        };
        let mut out = Vec::new();
        encode_frame(crate::codes::ERROR_RESP, &msg, &mut out);
        encode_empty(crate::codes::PING_RESP, &mut out);
        // length 7 = code + field 1 (tag 0x0a, len 2, "no") + field 2 (tag 0x10, 0).
        let expected = [0, 0, 0, 7, 0, 0x0a, 2, b'n', b'o', 0x10, 0, 0, 0, 0, 1, 2];
        assert_eq!(out, expected);
    }
}
