//! The binary format of vnode messages between nodes, version 1
//! (docs/formats/vnode-messages.md has it byte by byte).
//!
//! Every message is one transport frame body: a 15-byte header (service
//! byte `K`, version, kind, request id, partition), then a request
//! ([`VnodeRequest`]) or a reply ([`VnodeReply`]), or a batch of requests
//! for vnodes of one node and its replies (`batch`, design note 016). The
//! header's layout is the same in every version, so a node can always
//! tell whose message it is and which request it answers.
//!
//! Invariants:
//! - an object's encoded bytes travel as one length-prefixed blob, copied
//!   into the message once and decoded as a slice of the received frame:
//!   never re-encoded, never copied on the way in;
//! - decoding never panics: every length is checked against its limit and
//!   against the bytes that remain, and a bad message is a [`WireError`];
//! - whatever decodes re-encodes to the same bytes.

mod batch;
mod dt_update;
mod error;
mod props;
mod reply;
mod request;

use bytes::Bytes;
use eddy_ring::Partition;

use crate::codec::{CodecError, Reader, Writer};
pub use batch::{BatchAnswer, BatchReply, reply_allowed};
use eddy_model::error::KvError;
use eddy_vnode::msg::{BatchItem, VnodeReply, VnodeRequest};
pub use error::{OTHER_ENGINE, STORAGE_ENGINE};

/// The first byte of every kv vnode message: a node's transport handler
/// can tell them from other services' messages by it.
pub const SERVICE: u8 = b'K';
/// The format version this code writes and reads.
pub const VERSION: u8 = 1;
/// Bytes of the header.
pub const HEADER_BYTES: usize = 15;
pub use crate::codec::BLOB_BYTES_MAX;
/// Longest text in an error (longer ones are cut when encoded).
pub const TEXT_BYTES_MAX: usize = 4096;
pub use eddy_model::limits::BATCH_ITEMS_MAX;

const KIND_REQUEST: u8 = 1;
const KIND_REPLY: u8 = 2;

/// Why bytes are not a vnode message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The message ended inside a field.
    #[error("vnode message truncated")]
    Truncated,
    /// The first byte is not [`SERVICE`]: another service's message.
    #[error("not a vnode message (service byte {0:#04x})")]
    NotVnodeMessage(u8),
    /// A version this node does not speak.
    #[error("unknown vnode message version {0}")]
    UnknownVersion(u8),
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
    /// An embedded object or version vector does not decode.
    #[error("{what}: {source}")]
    BadObject {
        what: &'static str,
        source: eddy_object::DecodeError,
    },
    /// A data type update does not decode.
    #[error("data type update: {0}")]
    BadDatatype(eddy_dt::DecodeError),
    /// A structure the format does not allow.
    #[error("malformed vnode message: {0}")]
    Malformed(&'static str),
    /// A filtered key listing's key filter does not parse on this node.
    #[error("bad key filter: {0}")]
    BadKeyFilter(String),
    /// A reply with request id 0 (ids of replies are never 0).
    #[error("reply to request id 0")]
    ZeroReplyId,
    /// Bytes left after the message.
    #[error("{0} trailing bytes after the vnode message")]
    Trailing(usize),
}

impl From<CodecError> for WireError {
    fn from(e: CodecError) -> WireError {
        match e {
            CodecError::Truncated => WireError::Truncated,
            CodecError::BadByte { what, value } => WireError::BadByte { what, value },
            CodecError::TooLong { what, len, max } => WireError::TooLong { what, len, max },
            CodecError::BadCount => WireError::BadCount,
            CodecError::BadUtf8(what) => WireError::BadUtf8(what),
            CodecError::Trailing(n) => WireError::Trailing(n),
        }
    }
}

/// A request, with its id and target partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestEnvelope {
    /// The id replies name; 0 when the sender wants no reply.
    pub request_id: u64,
    pub partition: Partition,
    pub request: VnodeRequest,
}

/// A reply, with the id of the request it answers and the partition of
/// the vnode that sent it.
#[derive(Debug)]
pub struct ReplyEnvelope {
    pub request_id: u64,
    pub partition: Partition,
    pub reply: VnodeReply,
}

/// A batch of requests for vnodes of the receiving node, with its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchEnvelope {
    /// The id its replies name; 0 when the sender wants no reply.
    pub request_id: u64,
    pub items: Vec<BatchItem>,
}

/// A reply to a batch: some of its items' replies, or its refusal.
#[derive(Debug)]
pub struct BatchReplyEnvelope {
    pub request_id: u64,
    pub answer: BatchAnswer,
}

/// One decoded message.
#[derive(Debug)]
pub enum Message {
    Request(RequestEnvelope),
    Reply(ReplyEnvelope),
    Batch(BatchEnvelope),
    BatchReply(BatchReplyEnvelope),
}

/// What a request expects back: the header and its operation, readable
/// from a request whose body does not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHead {
    pub request_id: u64,
    pub partition: Partition,
    /// The operation byte, if the message reaches it.
    pub op: Option<u8>,
}

/// Encodes a request to `partition`; `request_id` 0 asks for no reply.
/// Fails only for a field above its limit.
pub fn encode_request(
    request_id: u64,
    partition: Partition,
    req: &VnodeRequest,
) -> Result<Bytes, WireError> {
    let mut w = Writer::with_capacity(HEADER_BYTES + request::size_hint(req));
    header(&mut w, KIND_REQUEST, request_id, partition);
    request::encode(&mut w, req)?;
    Ok(w.finish())
}

/// Encodes a reply from the vnode of `partition` to request `request_id`
/// (not 0). Fails only for a field above its limit.
pub fn encode_reply(
    request_id: u64,
    partition: Partition,
    reply: &VnodeReply,
) -> Result<Bytes, WireError> {
    if request_id == 0 {
        return Err(WireError::ZeroReplyId);
    }
    let mut w = Writer::with_capacity(HEADER_BYTES + reply::size_hint(reply));
    header(&mut w, KIND_REPLY, request_id, partition);
    reply::encode(&mut w, reply)?;
    Ok(w.finish())
}

/// Encodes a batch of requests for vnodes of one node; `request_id` 0
/// asks for no reply. Fails for a field above its limit, more than
/// [`BATCH_ITEMS_MAX`] items, or an item a batch may not carry
/// ([`BatchItem::allowed`]).
pub fn encode_batch(request_id: u64, items: &[BatchItem]) -> Result<Bytes, WireError> {
    let mut w = Writer::with_capacity(HEADER_BYTES + batch::size_hint(items));
    header(&mut w, KIND_REQUEST, request_id, Partition(0));
    batch::encode(&mut w, items)?;
    Ok(w.finish())
}

/// Encodes replies to some items of batch `request_id` (not 0). Fails for
/// a field above its limit, more than [`BATCH_ITEMS_MAX`] replies, or a
/// reply that does not answer a batch item ([`reply_allowed`]).
pub fn encode_batch_replies(request_id: u64, replies: &[BatchReply]) -> Result<Bytes, WireError> {
    if request_id == 0 {
        return Err(WireError::ZeroReplyId);
    }
    let size = HEADER_BYTES + batch::replies_size_hint(replies);
    let mut w = Writer::with_capacity(size);
    header(&mut w, KIND_REPLY, request_id, Partition(0));
    batch::encode_replies(&mut w, replies)?;
    Ok(w.finish())
}

/// Encodes the refusal of a whole batch `request_id` (not 0).
pub fn encode_batch_refusal(request_id: u64, e: &KvError) -> Result<Bytes, WireError> {
    if request_id == 0 {
        return Err(WireError::ZeroReplyId);
    }
    let mut w = Writer::with_capacity(HEADER_BYTES + 64);
    header(&mut w, KIND_REPLY, request_id, Partition(0));
    batch::encode_refusal(&mut w, e);
    Ok(w.finish())
}

/// Roughly a reply's encoded size.
pub fn reply_size_hint(reply: &VnodeReply) -> usize {
    reply::size_hint(reply)
}

/// A copy of `e` as another node would receive it ([`KvError`] is not
/// `Clone`): an error failing every item of a batch is given to each.
pub fn copy_error(e: &KvError) -> KvError {
    let mut w = Writer::with_capacity(64);
    error::encode(&mut w, e);
    let bytes = w.finish();
    let mut r = Reader::new(&bytes);
    error::decode(&mut r).unwrap_or_else(|_| KvError::Unreachable(e.to_string()))
}

/// A batch's header names no vnode: its partition is 0.
fn batch_partition(p: Partition) -> Result<(), WireError> {
    match p.0 {
        0 => Ok(()),
        _ => Err(WireError::Malformed("a batch's header names partition 0")),
    }
}

fn is_batch_reply_op(op: u8) -> bool {
    op == batch::OP_BATCH_REPLIES || op == batch::OP_BATCH_REFUSED
}

/// Decodes a message. Objects' bytes in it are slices of `frame`.
pub fn decode(frame: &Bytes) -> Result<Message, WireError> {
    let mut r = Reader::new(frame);
    let (kind, request_id, partition) = read_header(&mut r)?;
    let message = match kind {
        KIND_REQUEST if r.peek_u8()? == batch::OP_BATCH => {
            batch_partition(partition)?;
            r.u8()?;
            Message::Batch(BatchEnvelope {
                request_id,
                items: batch::decode(&mut r)?,
            })
        }
        KIND_REQUEST => Message::Request(RequestEnvelope {
            request_id,
            partition,
            request: request::decode(&mut r)?,
        }),
        KIND_REPLY if request_id == 0 => return Err(WireError::ZeroReplyId),
        KIND_REPLY if is_batch_reply_op(r.peek_u8()?) => {
            batch_partition(partition)?;
            let op = r.u8()?;
            Message::BatchReply(BatchReplyEnvelope {
                request_id,
                answer: batch::decode_answer(&mut r, op)?,
            })
        }
        KIND_REPLY => Message::Reply(ReplyEnvelope {
            request_id,
            partition,
            reply: reply::decode(&mut r)?,
        }),
        value => {
            return Err(WireError::BadByte {
                what: "kind",
                value,
            });
        }
    };
    r.end()?;
    Ok(message)
}

/// The head of a request that may not decode as a whole, so that its
/// sender can still be answered; `None` unless it is a request of a
/// known version.
pub fn request_head(frame: &Bytes) -> Option<RequestHead> {
    let mut r = Reader::new(frame);
    let (kind, request_id, partition) = read_header(&mut r).ok()?;
    (kind == KIND_REQUEST).then(|| RequestHead {
        request_id,
        partition,
        op: r.u8().ok(),
    })
}

/// The operation byte of a put (coordinate or replicate), for
/// [`RequestHead::op`].
pub fn is_put_op(op: u8) -> bool {
    request::is_put_op(op)
}

/// The operation byte of a get, for [`RequestHead::op`].
pub fn is_get_op(op: u8) -> bool {
    request::is_get_op(op)
}

/// True for a request op whose replies are fold chunks.
pub fn is_fold_op(op: u8) -> bool {
    request::is_fold_op(op)
}

/// True for the op of a batch, which is answered by a batch reply.
pub fn is_batch_op(op: u8) -> bool {
    op == batch::OP_BATCH
}

fn header(w: &mut Writer, kind: u8, request_id: u64, partition: Partition) {
    w.u8(SERVICE);
    w.u8(VERSION);
    w.u8(kind);
    w.u64(request_id);
    w.u32(partition.0);
}

fn read_header(r: &mut Reader<'_>) -> Result<(u8, u64, Partition), WireError> {
    match r.u8()? {
        SERVICE => {}
        other => return Err(WireError::NotVnodeMessage(other)),
    }
    match r.u8()? {
        VERSION => {}
        other => return Err(WireError::UnknownVersion(other)),
    }
    let kind = r.u8()?;
    let request_id = r.u64()?;
    let partition = Partition(r.u32()?);
    Ok((kind, request_id, partition))
}
