//! The handshake that opens every connection (docs/formats/transport.md).
//!
//! The dialer sends a [`Hello`]: magic, the protocol versions it speaks, the
//! lane, the cluster name, its own node name and the name of the node it
//! means to reach. The listener answers with a [`Welcome`]: the version both
//! speak, or a refusal with a reason. Nothing else is sent before it.
//!
//! Invariants: every string is at most [`NAME_BYTES_MAX`] bytes, so a peer
//! cannot make either side allocate more than that per field; decoding
//! never panics.

use bytes::{Buf, BufMut};
use eddy_ring::NodeName;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::Lane;

/// The first bytes of both handshake messages.
pub const MAGIC: [u8; 8] = *b"EDDY-NET";
/// Longest cluster name, node name or refusal reason, in bytes.
pub const NAME_BYTES_MAX: usize = 1024;
/// The protocol versions this build speaks.
pub const PROTOCOL_VERSIONS: Versions = Versions { min: 1, max: 1 };

const HELLO_FIXED_BYTES: usize = MAGIC.len() + 2 + 2 + 1;
const WELCOME_FIXED_BYTES: usize = MAGIC.len() + 1;

/// A range of protocol versions, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    /// Oldest version spoken.
    pub min: u16,
    /// Newest version spoken.
    pub max: u16,
}

impl Versions {
    /// The newest version both ranges contain, if any.
    pub fn negotiate(self, other: Versions) -> Option<u16> {
        let version = self.max.min(other.max);
        (version >= self.min.max(other.min)).then_some(version)
    }
}

/// The dialer's opening message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Versions the dialer speaks.
    pub versions: Versions,
    /// The lane this connection carries.
    pub lane: Lane,
    /// The dialer's cluster name; the listener refuses another.
    pub cluster: String,
    /// The dialer's node name.
    pub from: NodeName,
    /// The node the dialer means to reach; the listener refuses if it is not.
    pub to: NodeName,
}

/// The listener's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Welcome {
    /// The connection is open at this version.
    Accepted {
        /// The negotiated protocol version.
        version: u16,
    },
    /// The connection is refused and will be closed.
    Refused {
        /// Why, for both sides' logs and the dialer's callers.
        reason: String,
    },
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The bytes do not start with [`MAGIC`]: not an Eddy node.
    #[error("not an eddy node-to-node connection (bad magic)")]
    BadMagic,
    /// A field holds a value no version defines.
    #[error("malformed handshake: {0}")]
    Malformed(&'static str),
    /// The message ended early.
    #[error("handshake truncated")]
    Truncated,
    /// Reading or writing the socket failed.
    #[error("handshake i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl Hello {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HELLO_FIXED_BYTES + 64);
        out.extend_from_slice(&MAGIC);
        out.put_u16(self.versions.min);
        out.put_u16(self.versions.max);
        out.put_u8(self.lane.code());
        for s in [&self.cluster, &self.from.0, &self.to.0] {
            put_str(&mut out, s);
        }
        out
    }

    /// Reads a whole message.
    pub fn decode(mut buf: &[u8]) -> Result<Hello, HandshakeError> {
        take_magic(&mut buf)?;
        let min = take_u16(&mut buf)?;
        let max = take_u16(&mut buf)?;
        let lane = Lane::from_code(take_u8(&mut buf)?).ok_or(HandshakeError::Malformed("lane"))?;
        let cluster = take_str(&mut buf)?;
        let from = NodeName(take_str(&mut buf)?);
        let to = NodeName(take_str(&mut buf)?);
        if !buf.is_empty() {
            return Err(HandshakeError::Malformed("trailing bytes"));
        }
        Ok(Hello {
            versions: Versions { min, max },
            lane,
            cluster,
            from,
            to,
        })
    }

    /// Reads a message from a socket, field by field.
    pub async fn read<R: AsyncRead + Unpin>(r: &mut R) -> Result<Hello, HandshakeError> {
        let mut buf = vec![0; HELLO_FIXED_BYTES];
        r.read_exact(&mut buf).await?;
        if buf.get(..MAGIC.len()) != Some(&MAGIC[..]) {
            return Err(HandshakeError::BadMagic);
        }
        for _ in 0..3 {
            read_str(r, &mut buf).await?;
        }
        Hello::decode(&buf)
    }
}

impl Welcome {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(WELCOME_FIXED_BYTES + 2);
        out.extend_from_slice(&MAGIC);
        match self {
            Welcome::Accepted { version } => {
                out.put_u8(0);
                out.put_u16(*version);
            }
            Welcome::Refused { reason } => {
                out.put_u8(1);
                put_str(&mut out, reason);
            }
        }
        out
    }

    /// Reads a whole message.
    pub fn decode(mut buf: &[u8]) -> Result<Welcome, HandshakeError> {
        take_magic(&mut buf)?;
        let welcome = match take_u8(&mut buf)? {
            0 => Welcome::Accepted {
                version: take_u16(&mut buf)?,
            },
            1 => Welcome::Refused {
                reason: take_str(&mut buf)?,
            },
            _ => return Err(HandshakeError::Malformed("status")),
        };
        if !buf.is_empty() {
            return Err(HandshakeError::Malformed("trailing bytes"));
        }
        Ok(welcome)
    }

    /// Reads a message from a socket.
    pub async fn read<R: AsyncRead + Unpin>(r: &mut R) -> Result<Welcome, HandshakeError> {
        let mut buf = vec![0; WELCOME_FIXED_BYTES];
        r.read_exact(&mut buf).await?;
        if buf.get(..MAGIC.len()) != Some(&MAGIC[..]) {
            return Err(HandshakeError::BadMagic);
        }
        match buf.last() {
            Some(0) => {
                let at = buf.len();
                buf.resize(at + 2, 0);
                r.read_exact(&mut buf[at..]).await?;
            }
            Some(1) => read_str(r, &mut buf).await?,
            _ => return Err(HandshakeError::Malformed("status")),
        }
        Welcome::decode(&buf)
    }
}

/// Names longer than the limit are cut at a character boundary; the
/// transport checks its own names at start, so only reasons are ever cut.
fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(NAME_BYTES_MAX);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.put_u16(end as u16);
    out.extend_from_slice(&s.as_bytes()[..end]);
}

async fn read_str<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
) -> Result<(), HandshakeError> {
    let len = usize::from(r.read_u16().await?);
    if len > NAME_BYTES_MAX {
        return Err(HandshakeError::Malformed("string too long"));
    }
    let at = buf.len();
    buf.put_u16(len as u16);
    buf.resize(at + 2 + len, 0);
    r.read_exact(&mut buf[at + 2..]).await?;
    Ok(())
}

fn take_magic(buf: &mut &[u8]) -> Result<(), HandshakeError> {
    let magic = buf.get(..MAGIC.len()).ok_or(HandshakeError::Truncated)?;
    if magic != MAGIC {
        return Err(HandshakeError::BadMagic);
    }
    buf.advance(MAGIC.len());
    Ok(())
}

fn take_u8(buf: &mut &[u8]) -> Result<u8, HandshakeError> {
    buf.try_get_u8().map_err(|_| HandshakeError::Truncated)
}

fn take_u16(buf: &mut &[u8]) -> Result<u16, HandshakeError> {
    buf.try_get_u16().map_err(|_| HandshakeError::Truncated)
}

fn take_str(buf: &mut &[u8]) -> Result<String, HandshakeError> {
    let len = usize::from(take_u16(buf)?);
    if len > NAME_BYTES_MAX {
        return Err(HandshakeError::Malformed("string too long"));
    }
    let bytes = buf.get(..len).ok_or(HandshakeError::Truncated)?;
    let s = std::str::from_utf8(bytes)
        .map_err(|_| HandshakeError::Malformed("string is not UTF-8"))?
        .to_owned();
    buf.advance(len);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hello() -> impl Strategy<Value = Hello> {
        (
            any::<u16>(),
            any::<u16>(),
            any::<bool>(),
            "[a-z]{0,20}",
            ".{0,30}",
            ".{0,30}",
        )
            .prop_map(|(min, max, bulk, cluster, from, to)| Hello {
                versions: Versions { min, max },
                lane: if bulk { Lane::Bulk } else { Lane::Control },
                cluster,
                from: NodeName(from),
                to: NodeName(to),
            })
    }

    proptest! {
        #[test]
        fn hellos_round_trip(h in hello()) {
            prop_assert_eq!(Hello::decode(&h.encode()).unwrap(), h);
        }

        #[test]
        fn truncated_hellos_are_errors(h in hello(), cut in any::<prop::sample::Index>()) {
            let bytes = h.encode();
            let cut = cut.index(bytes.len());
            prop_assert!(Hello::decode(&bytes[..cut]).is_err());
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Hello::decode(&bytes);
            let _ = Welcome::decode(&bytes);
        }

        #[test]
        fn negotiation_picks_the_newest_common_version(a in (0u16..8, 0u16..8), b in (0u16..8, 0u16..8)) {
            let (x, y) = (Versions { min: a.0, max: a.1 }, Versions { min: b.0, max: b.1 });
            let common = (0u16..8).filter(|v| (x.min..=x.max).contains(v) && (y.min..=y.max).contains(v)).max();
            prop_assert_eq!(x.negotiate(y), common);
        }
    }

    #[tokio::test]
    async fn socket_reads_match_whole_decodes() {
        let h = Hello {
            versions: PROTOCOL_VERSIONS,
            lane: Lane::Bulk,
            cluster: "default".into(),
            from: NodeName("dev1@127.0.0.1".into()),
            to: NodeName("dev2@127.0.0.1".into()),
        };
        assert_eq!(Hello::read(&mut &h.encode()[..]).await.unwrap(), h);
        for w in [
            Welcome::Accepted { version: 3 },
            Welcome::Refused {
                reason: "no".into(),
            },
        ] {
            assert_eq!(Welcome::read(&mut &w.encode()[..]).await.unwrap(), w);
        }
    }
}
