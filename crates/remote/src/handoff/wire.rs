//! What a handoff sender and receiver say to each other on the bulk lane:
//! plain data, encoded by hand into a versioned byte format.
//!
//! Every message starts with [`WIRE_VERSION`] and a tag byte; integers are
//! big-endian, byte strings carry a `u32` length. An object travels as its
//! stored encoding, untouched. The format is documented in
//! docs/design/010-cluster.md ("Handoff, as built").
//!
//! Invariant: `decode(encode(m)) == m` for every message (property-tested),
//! and a body that is cut, extended or of another version is refused, never
//! misread.

use bytes::Bytes;

use crate::codec::{CodecError, Reader, Writer};

/// The version of this format; a receiver refuses any other.
pub const WIRE_VERSION: u8 = 1;

/// Why a transfer runs (Riak's handoff types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The ring's next owner takes the partition.
    Ownership,
    /// A fallback gives the owner back what it took for it.
    Hinted,
}

impl Kind {
    /// Riak's word for it (`ownership_handoff_…`, `hinted_handoff_…`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ownership => "ownership",
            Kind::Hinted => "hinted",
        }
    }
}

/// Which transfer a message belongs to. The sending node is the message's
/// sender (the transport names it), so a transfer is identified by the
/// sending node, the partition and the sending vnode's incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransferKey {
    pub partition: u32,
    pub kind: Kind,
    /// The sending vnode's incarnation: another incarnation's data is
    /// another transfer.
    pub sender_incarnation: u64,
}

/// How far along the partition's key order a transfer's fold has come.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Position {
    /// Nothing sent yet.
    Start,
    /// Every key up to and including this `(bucket, key)` was sent.
    After(Vec<u8>, Vec<u8>),
    /// The fold is done: every key was sent once.
    Folded,
}

impl Position {
    /// True when `(bucket, key)` lies at or before this position.
    pub fn covers(&self, bucket: &[u8], key: &[u8]) -> bool {
        match self {
            Position::Start => false,
            Position::After(b, k) => (bucket, key) <= (b.as_slice(), k.as_slice()),
            Position::Folded => true,
        }
    }
}

/// One object of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub bucket: Bytes,
    pub key: Bytes,
    /// The object as the sender stores it.
    pub encoded: Bytes,
}

impl Item {
    /// The bytes this item takes in a batch: three length-prefixed fields.
    pub(crate) fn wire_bytes(&self) -> usize {
        12 + self.bucket.len() + self.key.len() + self.encoded.len()
    }
}

/// One key's version vector, for the catch-up after a sender restart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digest {
    pub bucket: Bytes,
    pub key: Bytes,
    /// `eddy_object::codec::encode_vv` of the sender's object.
    pub vv: Bytes,
}

/// What a receiver has made durable of a transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The sender session that sent the last acknowledged batch.
    pub session: u64,
    /// The last acknowledged batch.
    pub seq: u64,
    /// The fold position after it.
    pub position: Position,
}

/// A sender's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Opens (or reopens) a transfer; `session` is new for each run of the
    /// sender's process.
    Start { transfer: TransferKey, session: u64 },
    /// Objects to merge; `position` is the fold's position after them.
    Batch {
        transfer: TransferKey,
        session: u64,
        seq: u64,
        position: Position,
        items: Vec<Item>,
    },
    /// Version vectors of keys the receiver may lack: it answers with
    /// those whose objects it does not already descend from.
    Digests {
        transfer: TransferKey,
        session: u64,
        digests: Vec<Digest>,
    },
    /// Everything was sent: make it all durable and record the transfer done.
    Finish {
        transfer: TransferKey,
        session: u64,
        seq: u64,
    },
}

/// A receiver's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The transfer is open; what was made durable of it before, if any.
    Started { resume: Option<Progress> },
    /// The receiver runs as many inbound transfers as its limit allows.
    Busy,
    /// The batch `seq` is durable.
    Acked { seq: u64 },
    /// The digests' indices whose objects the receiver wants.
    Wanted { indices: Vec<u32> },
    /// Everything is durable; the transfer is recorded done.
    Finished,
    /// The request cannot be served; the sender starts over with `Start`.
    Refused(String),
}

/// Why a body could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The body is of another format version.
    #[error("handoff wire version {0}, expected {WIRE_VERSION}")]
    Version(u8),
    /// The body ended inside a field.
    #[error("handoff message cut short")]
    Truncated,
    /// A tag byte names nothing.
    #[error("handoff message: unknown {what} tag {tag}")]
    Tag { what: &'static str, tag: u8 },
    /// Bytes follow the message.
    #[error("handoff message: {0} trailing bytes")]
    Trailing(usize),
    /// A field the codec refused.
    #[error("handoff message: {0}")]
    Field(CodecError),
}

impl From<CodecError> for WireError {
    fn from(e: CodecError) -> WireError {
        match e {
            CodecError::Truncated => WireError::Truncated,
            CodecError::Trailing(n) => WireError::Trailing(n),
            e => WireError::Field(e),
        }
    }
}

const START: u8 = 1;
const BATCH: u8 = 2;
const DIGESTS: u8 = 3;
const FINISH: u8 = 4;

const STARTED: u8 = 1;
const BUSY: u8 = 2;
const ACKED: u8 = 3;
const WANTED: u8 = 4;
const FINISHED: u8 = 5;
const REFUSED: u8 = 6;

impl Request {
    /// The body to send.
    pub fn encode(&self) -> Bytes {
        let mut w = writer();
        match self {
            Request::Start { transfer, session } => {
                w.u8(START);
                w.transfer(transfer);
                w.u64(*session);
            }
            Request::Batch {
                transfer,
                session,
                seq,
                position,
                items,
            } => {
                // Sized once: a batch is up to a megabyte of objects.
                let bytes: usize = items.iter().map(Item::wire_bytes).sum();
                w.reserve(bytes + 128);
                w.u8(BATCH);
                w.transfer(transfer);
                w.u64(*session);
                w.u64(*seq);
                w.position(position);
                w.u32(items.len() as u32);
                for i in items {
                    w.bytes(&i.bucket);
                    w.bytes(&i.key);
                    w.bytes(&i.encoded);
                }
            }
            Request::Digests {
                transfer,
                session,
                digests,
            } => {
                w.u8(DIGESTS);
                w.transfer(transfer);
                w.u64(*session);
                w.u32(digests.len() as u32);
                for d in digests {
                    w.bytes(&d.bucket);
                    w.bytes(&d.key);
                    w.bytes(&d.vv);
                }
            }
            Request::Finish {
                transfer,
                session,
                seq,
            } => {
                w.u8(FINISH);
                w.transfer(transfer);
                w.u64(*session);
                w.u64(*seq);
            }
        }
        w.finish()
    }

    /// Decodes a body; byte strings share `body`'s buffer.
    pub fn decode(body: &Bytes) -> Result<Request, WireError> {
        let mut r = reader(body)?;
        let request = match r.u8()? {
            START => Request::Start {
                transfer: r.transfer()?,
                session: r.u64()?,
            },
            BATCH => {
                let (transfer, session, seq) = (r.transfer()?, r.u64()?, r.u64()?);
                let position = r.position()?;
                let items = r.list(|r| {
                    Ok::<_, CodecError>(Item {
                        bucket: r.bytes()?,
                        key: r.bytes()?,
                        encoded: r.bytes()?,
                    })
                })?;
                Request::Batch {
                    transfer,
                    session,
                    seq,
                    position,
                    items,
                }
            }
            DIGESTS => Request::Digests {
                transfer: r.transfer()?,
                session: r.u64()?,
                digests: r.list(|r| {
                    Ok::<_, CodecError>(Digest {
                        bucket: r.bytes()?,
                        key: r.bytes()?,
                        vv: r.bytes()?,
                    })
                })?,
            },
            FINISH => Request::Finish {
                transfer: r.transfer()?,
                session: r.u64()?,
                seq: r.u64()?,
            },
            tag => {
                return Err(WireError::Tag {
                    what: "request",
                    tag,
                });
            }
        };
        r.end()?;
        Ok(request)
    }
}

impl Reply {
    /// The body to send.
    pub fn encode(&self) -> Bytes {
        let mut w = writer();
        match self {
            Reply::Started { resume: None } => {
                w.u8(STARTED);
                w.u8(0);
            }
            Reply::Started {
                resume: Some(progress),
            } => {
                w.u8(STARTED);
                w.u8(1);
                w.u64(progress.session);
                w.u64(progress.seq);
                w.position(&progress.position);
            }
            Reply::Busy => {
                w.u8(BUSY);
            }
            Reply::Acked { seq } => {
                w.u8(ACKED);
                w.u64(*seq);
            }
            Reply::Wanted { indices } => {
                w.u8(WANTED);
                w.u32(indices.len() as u32);
                for i in indices {
                    w.u32(*i);
                }
            }
            Reply::Finished => {
                w.u8(FINISHED);
            }
            Reply::Refused(reason) => {
                w.u8(REFUSED);
                w.bytes(reason.as_bytes());
            }
        }
        w.finish()
    }

    /// Decodes a body.
    pub fn decode(body: &Bytes) -> Result<Reply, WireError> {
        let mut r = reader(body)?;
        let reply = match r.u8()? {
            STARTED => match r.u8()? {
                0 => Reply::Started { resume: None },
                1 => Reply::Started {
                    resume: Some(Progress {
                        session: r.u64()?,
                        seq: r.u64()?,
                        position: r.position()?,
                    }),
                },
                tag => {
                    return Err(WireError::Tag {
                        what: "resume",
                        tag,
                    });
                }
            },
            BUSY => Reply::Busy,
            ACKED => Reply::Acked { seq: r.u64()? },
            WANTED => Reply::Wanted {
                indices: r.list(Reader::u32)?,
            },
            FINISHED => Reply::Finished,
            REFUSED => Reply::Refused(String::from_utf8_lossy(&r.bytes()?).into_owned()),
            tag => return Err(WireError::Tag { what: "reply", tag }),
        };
        r.end()?;
        Ok(reply)
    }
}

/// A body's writer: the one codec's, after the version byte.
pub(crate) fn writer() -> Writer {
    let mut w = Writer::with_capacity(64);
    w.u8(WIRE_VERSION);
    w
}

/// A body's reader, after the version byte, which must be
/// [`WIRE_VERSION`].
pub(crate) fn reader(body: &Bytes) -> Result<Reader<'_>, WireError> {
    let mut r = Reader::new(body);
    match r.u8()? {
        WIRE_VERSION => Ok(r),
        v => Err(WireError::Version(v)),
    }
}

/// Handoff's own fields, written with the one codec.
pub(crate) trait WriteFields {
    fn transfer(&mut self, t: &TransferKey);
    fn position(&mut self, p: &Position);
}

impl WriteFields for Writer {
    fn transfer(&mut self, t: &TransferKey) {
        let kind = match t.kind {
            Kind::Ownership => 0,
            Kind::Hinted => 1,
        };
        self.u32(t.partition);
        self.u8(kind);
        self.u64(t.sender_incarnation);
    }

    fn position(&mut self, p: &Position) {
        match p {
            Position::Start => self.u8(0),
            Position::After(b, k) => {
                self.u8(1);
                self.bytes(b);
                self.bytes(k);
            }
            Position::Folded => self.u8(2),
        }
    }
}

/// Handoff's own fields, read with the one codec.
pub(crate) trait ReadFields {
    fn transfer(&mut self) -> Result<TransferKey, WireError>;
    fn position(&mut self) -> Result<Position, WireError>;
}

impl ReadFields for Reader<'_> {
    fn transfer(&mut self) -> Result<TransferKey, WireError> {
        let partition = self.u32()?;
        let kind = match self.u8()? {
            0 => Kind::Ownership,
            1 => Kind::Hinted,
            tag => return Err(WireError::Tag { what: "kind", tag }),
        };
        Ok(TransferKey {
            partition,
            kind,
            sender_incarnation: self.u64()?,
        })
    }

    fn position(&mut self) -> Result<Position, WireError> {
        match self.u8()? {
            0 => Ok(Position::Start),
            1 => Ok(Position::After(
                self.bytes()?.to_vec(),
                self.bytes()?.to_vec(),
            )),
            2 => Ok(Position::Folded),
            tag => Err(WireError::Tag {
                what: "position",
                tag,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes() -> impl Strategy<Value = Bytes> {
        prop::collection::vec(any::<u8>(), 0..12).prop_map(Bytes::from)
    }

    fn position() -> impl Strategy<Value = Position> {
        prop_oneof![
            Just(Position::Start),
            Just(Position::Folded),
            (bytes(), bytes()).prop_map(|(b, k)| Position::After(b.to_vec(), k.to_vec())),
        ]
    }

    fn transfer() -> impl Strategy<Value = TransferKey> {
        (any::<u32>(), any::<bool>(), any::<u64>()).prop_map(|(partition, hinted, inc)| {
            TransferKey {
                partition,
                kind: if hinted {
                    Kind::Hinted
                } else {
                    Kind::Ownership
                },
                sender_incarnation: inc,
            }
        })
    }

    fn request() -> impl Strategy<Value = Request> {
        let item = (bytes(), bytes(), bytes()).prop_map(|(bucket, key, encoded)| Item {
            bucket,
            key,
            encoded,
        });
        let digest =
            (bytes(), bytes(), bytes()).prop_map(|(bucket, key, vv)| Digest { bucket, key, vv });
        prop_oneof![
            (transfer(), any::<u64>())
                .prop_map(|(transfer, session)| Request::Start { transfer, session }),
            (
                transfer(),
                any::<u64>(),
                any::<u64>(),
                position(),
                prop::collection::vec(item, 0..4)
            )
                .prop_map(|(transfer, session, seq, position, items)| {
                    Request::Batch {
                        transfer,
                        session,
                        seq,
                        position,
                        items,
                    }
                }),
            (
                transfer(),
                any::<u64>(),
                prop::collection::vec(digest, 0..4)
            )
                .prop_map(|(transfer, session, digests)| Request::Digests {
                    transfer,
                    session,
                    digests,
                }),
            (transfer(), any::<u64>(), any::<u64>()).prop_map(|(transfer, session, seq)| {
                Request::Finish {
                    transfer,
                    session,
                    seq,
                }
            }),
        ]
    }

    fn reply() -> impl Strategy<Value = Reply> {
        let progress =
            (any::<u64>(), any::<u64>(), position()).prop_map(|(session, seq, position)| {
                Progress {
                    session,
                    seq,
                    position,
                }
            });
        prop_oneof![
            prop::option::of(progress).prop_map(|resume| Reply::Started { resume }),
            Just(Reply::Busy),
            any::<u64>().prop_map(|seq| Reply::Acked { seq }),
            prop::collection::vec(any::<u32>(), 0..5).prop_map(|indices| Reply::Wanted { indices }),
            Just(Reply::Finished),
            "[a-z ]{0,20}".prop_map(Reply::Refused),
        ]
    }

    proptest! {
        #[test]
        fn requests_round_trip_and_damage_is_refused(r in request(), cut in any::<prop::sample::Index>()) {
            let body = r.encode();
            prop_assert_eq!(Request::decode(&body), Ok(r));
            let short = body.slice(..cut.index(body.len()));
            prop_assert!(Request::decode(&short).is_err());
            let mut long = body.to_vec();
            long.push(0);
            prop_assert_eq!(Request::decode(&Bytes::from(long)), Err(WireError::Trailing(1)));
        }

        #[test]
        fn replies_round_trip_and_damage_is_refused(r in reply(), cut in any::<prop::sample::Index>()) {
            let body = r.encode();
            prop_assert_eq!(Reply::decode(&body), Ok(r));
            let short = body.slice(..cut.index(body.len()));
            prop_assert!(Reply::decode(&short).is_err());
            let mut other = body.to_vec();
            other[0] = WIRE_VERSION + 1;
            prop_assert_eq!(Reply::decode(&Bytes::from(other)), Err(WireError::Version(WIRE_VERSION + 1)));
        }
    }
}
