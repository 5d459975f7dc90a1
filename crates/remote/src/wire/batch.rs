//! Batches: the gets and replicated puts of many keys for vnodes of one
//! node in one request (op 8), answered by one or more replies that each
//! carry some of the items' replies (op 9), or by one refusal of the
//! whole batch (op 10). Design note 016.
//!
//! An item is a partition and a request in the format of a single one
//! (ops 2, 3 and 7 only: each answered by exactly one reply); an item's
//! reply names the item by its place in the request (its index) and is a
//! single reply's format (put ok or error, get found, not found or
//! error). Nothing else may appear in a batch.

use super::{WireError, error, reply, request};
use crate::codec::{Reader, Writer};

use eddy_model::error::KvError;
use eddy_ring::Partition;
use eddy_vnode::msg::{BatchItem, VnodeReply};

/// The op of a batch request.
pub(super) const OP_BATCH: u8 = 8;
/// The op of a reply carrying items' replies.
pub(super) const OP_BATCH_REPLIES: u8 = 9;
/// The op of a reply refusing a whole batch.
pub(super) const OP_BATCH_REFUSED: u8 = 10;

/// One item's reply in a batch reply.
#[derive(Debug)]
pub struct BatchReply {
    /// The item's place in its batch, from 0.
    pub index: u32,
    /// The answering vnode's partition.
    pub partition: Partition,
    pub reply: VnodeReply,
}

/// What a batch reply says.
#[derive(Debug)]
pub enum BatchAnswer {
    /// Some of the items' replies (each item is answered once, by one of
    /// the batch's replies).
    Replies(Vec<BatchReply>),
    /// The batch was not taken: every item not yet answered fails with
    /// this error.
    Refused(KvError),
}

/// Whether `reply` may answer a batch item: a put's or a get's outcome.
pub fn reply_allowed(reply: &VnodeReply) -> bool {
    matches!(reply, VnodeReply::Put(_) | VnodeReply::Get(_))
}

pub(super) fn size_hint(items: &[BatchItem]) -> usize {
    5 + items
        .iter()
        .map(|i| 4 + request::size_hint(&i.request))
        .sum::<usize>()
}

pub(super) fn replies_size_hint(replies: &[BatchReply]) -> usize {
    5 + replies
        .iter()
        .map(|r| 8 + reply::size_hint(&r.reply))
        .sum::<usize>()
}

fn check_count(n: usize) -> Result<(), WireError> {
    match n <= super::BATCH_ITEMS_MAX {
        true => Ok(()),
        false => Err(WireError::TooLong {
            what: "batch",
            len: n,
            max: super::BATCH_ITEMS_MAX,
        }),
    }
}

pub(super) fn encode(w: &mut Writer, items: &[BatchItem]) -> Result<(), WireError> {
    check_count(items.len())?;
    w.u8(OP_BATCH);
    w.u32(items.len() as u32);
    for item in items {
        if !BatchItem::allowed(&item.request) {
            return Err(WireError::Malformed(
                "a batch carries gets and replicated puts only",
            ));
        }
        w.u32(item.partition.0);
        request::encode(w, &item.request)?;
    }
    Ok(())
}

/// Reads a batch whose op byte was read already.
pub(super) fn decode(r: &mut Reader<'_>) -> Result<Vec<BatchItem>, WireError> {
    let n = r.u32()? as usize;
    check_count(n)?;
    let mut items = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        let partition = Partition(r.u32()?);
        let request = request::decode(r)?;
        if !BatchItem::allowed(&request) {
            return Err(WireError::Malformed(
                "a batch carries gets and replicated puts only",
            ));
        }
        items.push(BatchItem { partition, request });
    }
    Ok(items)
}

pub(super) fn encode_replies(w: &mut Writer, replies: &[BatchReply]) -> Result<(), WireError> {
    check_count(replies.len())?;
    w.u8(OP_BATCH_REPLIES);
    w.u32(replies.len() as u32);
    for r in replies {
        if !reply_allowed(&r.reply) {
            return Err(WireError::Malformed(
                "a batch item is answered by a put's or a get's reply",
            ));
        }
        w.u32(r.index);
        w.u32(r.partition.0);
        reply::encode(w, &r.reply)?;
    }
    Ok(())
}

pub(super) fn encode_refusal(w: &mut Writer, e: &KvError) {
    w.u8(OP_BATCH_REFUSED);
    error::encode(w, e);
}

/// Reads a batch reply whose op byte (`op`) was read already.
pub(super) fn decode_answer(r: &mut Reader<'_>, op: u8) -> Result<BatchAnswer, WireError> {
    if op == OP_BATCH_REFUSED {
        return Ok(BatchAnswer::Refused(error::decode(r)?));
    }
    let n = r.u32()? as usize;
    check_count(n)?;
    let mut replies = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        let index = r.u32()?;
        let partition = Partition(r.u32()?);
        let reply = reply::decode(r)?;
        if !reply_allowed(&reply) {
            return Err(WireError::Malformed(
                "a batch item is answered by a put's or a get's reply",
            ));
        }
        replies.push(BatchReply {
            index,
            partition,
            reply,
        });
    }
    Ok(BatchAnswer::Replies(replies))
}
