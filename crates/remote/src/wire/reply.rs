//! Replies from a vnode: the coordinated object, a put's outcome, a get's
//! outcome.

use super::{WireError, error};
use crate::codec::{Reader, Writer};
use bytes::Bytes;

use eddy_vnode::msg::{FoldChunk, PutAck, VnodeReply};

const OP_COORDINATED: u8 = 1;
const OP_PUT_OK: u8 = 2;
const OP_PUT_ERROR: u8 = 3;
const OP_GET_FOUND: u8 = 4;
const OP_GET_NOT_FOUND: u8 = 5;
const OP_GET_ERROR: u8 = 6;
const OP_FOLD_CHUNK: u8 = 7;
const OP_FOLD_ERROR: u8 = 8;
const OP_COORDINATED_DELTA: u8 = 11;
/// Most items in one fold chunk.
const FOLD_ITEMS_MAX: usize = 65_536;

/// Roughly the encoded size, to allocate once.
pub(super) fn size_hint(reply: &VnodeReply) -> usize {
    match reply {
        VnodeReply::Coordinated { encoded, delta, .. } => {
            13 + encoded.len()
                + delta
                    .as_ref()
                    .map_or(0, |d| 32 + d.object.len() + d.delta.len())
        }
        VnodeReply::Get(Ok(Some(encoded))) => 5 + encoded.len(),
        VnodeReply::Fold(Ok(chunk)) => 16 + chunk.items.iter().map(|i| 2 + i.len()).sum::<usize>(),
        _ => 64,
    }
}

pub(super) fn encode(w: &mut Writer, reply: &VnodeReply) -> Result<(), WireError> {
    match reply {
        VnodeReply::Coordinated {
            encoded,
            siblings,
            delta: None,
        } => {
            w.u8(OP_COORDINATED);
            w.u64(*siblings as u64);
            w.blob("coordinated object", encoded)?;
        }
        VnodeReply::Coordinated {
            siblings,
            delta: Some(delta),
            ..
        } => {
            w.u8(OP_COORDINATED_DELTA);
            w.u64(*siblings as u64);
            super::request::dt_delta(w, delta)?;
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
        VnodeReply::Fold(Ok(chunk)) => fold_chunk(w, chunk)?,
        VnodeReply::Fold(Err(e)) => {
            w.u8(OP_FOLD_ERROR);
            error::encode(w, e);
        }
    }
    Ok(())
}

/// The longest item a fold lists.
fn item_max() -> usize {
    eddy_vnode::fold::FOLD_ITEM_BYTES_MAX
}

fn fold_chunk(w: &mut Writer, chunk: &FoldChunk) -> Result<(), WireError> {
    w.u8(OP_FOLD_CHUNK);
    w.u32(chunk.seq);
    w.flag(chunk.last);
    if chunk.items.len() > FOLD_ITEMS_MAX {
        return Err(WireError::TooLong {
            what: "fold chunk",
            len: chunk.items.len(),
            max: FOLD_ITEMS_MAX,
        });
    }
    w.u32(chunk.items.len() as u32);
    for item in &chunk.items {
        w.short("fold item", item, item_max())?;
    }
    Ok(())
}

fn read_fold_chunk(r: &mut Reader<'_>) -> Result<FoldChunk, WireError> {
    let seq = r.u32()?;
    let last = r.flag()?;
    let n = r.u32()? as usize;
    if n > FOLD_ITEMS_MAX {
        return Err(WireError::TooLong {
            what: "fold chunk",
            len: n,
            max: FOLD_ITEMS_MAX,
        });
    }
    let items = (0..n)
        .map(|_| r.short("fold item", item_max()))
        .collect::<Result<_, _>>()?;
    Ok(FoldChunk { seq, last, items })
}

pub(super) fn decode(r: &mut Reader<'_>) -> Result<VnodeReply, WireError> {
    Ok(match r.u8()? {
        OP_COORDINATED => VnodeReply::Coordinated {
            siblings: r.count()?,
            encoded: r.blob("coordinated object")?,
            delta: None,
        },
        OP_COORDINATED_DELTA => VnodeReply::Coordinated {
            siblings: r.count()?,
            encoded: Bytes::new(),
            delta: Some(Box::new(super::request::read_dt_delta(r)?)),
        },
        OP_PUT_OK => VnodeReply::Put(Ok(PutAck { durable: r.flag()? })),
        OP_PUT_ERROR => VnodeReply::Put(Err(error::decode(r)?)),
        OP_GET_FOUND => VnodeReply::Get(Ok(Some(r.blob("stored object")?))),
        OP_GET_NOT_FOUND => VnodeReply::Get(Ok(None)),
        OP_GET_ERROR => VnodeReply::Get(Err(error::decode(r)?)),
        OP_FOLD_CHUNK => VnodeReply::Fold(Ok(read_fold_chunk(r)?)),
        OP_FOLD_ERROR => VnodeReply::Fold(Err(error::decode(r)?)),
        value => {
            return Err(WireError::BadByte {
                what: "reply op",
                value,
            });
        }
    })
}
