//! Replies from a vnode: the coordinated object, a put's outcome, a get's
//! outcome.

use super::buf::{Reader, Writer};
use super::{WireError, error};
use crate::vnode::msg::{PutAck, VnodeReply};

const OP_COORDINATED: u8 = 1;
const OP_PUT_OK: u8 = 2;
const OP_PUT_ERROR: u8 = 3;
const OP_GET_FOUND: u8 = 4;
const OP_GET_NOT_FOUND: u8 = 5;
const OP_GET_ERROR: u8 = 6;

/// Roughly the encoded size, to allocate once.
pub(super) fn size_hint(reply: &VnodeReply) -> usize {
    match reply {
        VnodeReply::Coordinated { encoded, .. } => 13 + encoded.len(),
        VnodeReply::Get(Ok(Some(encoded))) => 5 + encoded.len(),
        _ => 64,
    }
}

pub(super) fn encode(w: &mut Writer, reply: &VnodeReply) -> Result<(), WireError> {
    match reply {
        VnodeReply::Coordinated { encoded, siblings } => {
            w.u8(OP_COORDINATED);
            w.u64(*siblings as u64);
            w.blob("coordinated object", encoded)?;
        }
        VnodeReply::Put(Ok(ack)) => {
            w.u8(OP_PUT_OK);
            w.flag(ack.durable);
        }
        VnodeReply::Put(Err(e)) => {
            w.u8(OP_PUT_ERROR);
            error::encode(w, e);
        }
        VnodeReply::Get(Ok(Some(encoded))) => {
            w.u8(OP_GET_FOUND);
            w.blob("stored object", encoded)?;
        }
        VnodeReply::Get(Ok(None)) => w.u8(OP_GET_NOT_FOUND),
        VnodeReply::Get(Err(e)) => {
            w.u8(OP_GET_ERROR);
            error::encode(w, e);
        }
    }
    Ok(())
}

pub(super) fn decode(r: &mut Reader<'_>) -> Result<VnodeReply, WireError> {
    Ok(match r.u8()? {
        OP_COORDINATED => VnodeReply::Coordinated {
            siblings: r.count()?,
            encoded: r.blob("coordinated object")?,
        },
        OP_PUT_OK => VnodeReply::Put(Ok(PutAck { durable: r.flag()? })),
        OP_PUT_ERROR => VnodeReply::Put(Err(error::decode(r)?)),
        OP_GET_FOUND => VnodeReply::Get(Ok(Some(r.blob("stored object")?))),
        OP_GET_NOT_FOUND => VnodeReply::Get(Ok(None)),
        OP_GET_ERROR => VnodeReply::Get(Err(error::decode(r)?)),
        value => {
            return Err(WireError::BadByte {
                what: "reply op",
                value,
            });
        }
    })
}
