//! Batches over the network (design note 016).
//!
//! Sending: one message, each item's slot registered under the batch's
//! one request id; a batch above the frame limit is sent as two halves,
//! each a batch of its own. Receiving: each item gets a `ReplyTo` whose
//! route hands its reply to the batch's [`Collector`], which sends the
//! gathered replies back to the batch's coordinator in batch replies: one
//! as soon as the gathered replies pass [`BATCH_REPLY_BYTES`] (or
//! [`wire::BATCH_ITEMS_MAX`] items), and one with the rest once every item
//! answered.
//!
//! Invariant: every item's reply is sent exactly once (each item is
//! answered exactly once by its vnode or the router), so the node holds at
//! most one batch reply's worth of a batch's replies at a time, plus the
//! item being answered.

use std::fmt;
use std::sync::Arc;

use eddy_net::{Lane, NodeName};
use parking_lot::Mutex;

use super::pending::{Entry, Slot};
use super::{BATCH_REPLY_BYTES, NetRemote, send_error, too_large, wire};
use eddy_model::error::KvError;
use eddy_vnode::msg::{BatchItem, VnodeReply};
use eddy_vnode::reply::{Reply, ReplyRoute, ReplyTo};

impl NetRemote {
    /// Sends one batch (split in halves while above the frame limit),
    /// registering its items' slots under one request id.
    pub(super) fn send_one_batch(
        &self,
        node: &NodeName,
        items: Vec<BatchItem>,
        mut slots: Vec<Slot>,
    ) {
        let id = self.pending.next_id();
        let body = match wire::encode_batch(id, &items) {
            Ok(body) => body,
            Err(e) => {
                let e = too_large(e);
                return slots.into_iter().for_each(|s| s.fail(wire::copy_error(&e)));
            }
        };
        if body.len() > self.transport.config().frame_body_bytes_max && items.len() > 1 {
            let mut items = items;
            let (rest_items, rest_slots) = (
                items.split_off(items.len() / 2),
                slots.split_off(slots.len() / 2),
            );
            self.send_one_batch(node, items, slots);
            return self.send_one_batch(node, rest_items, rest_slots);
        }
        match self.pending.insert(id, Entry::batch(node.clone(), slots)) {
            Ok(aged) => aged.into_iter().for_each(|e| e.fail(KvError::Timeout)),
            Err(full) => {
                let why = format!("{node} (too many requests in flight)");
                return full.0.fail(KvError::Unreachable(why));
            }
        }
        let sent = {
            let _entered = self.enter_runtime();
            self.transport.try_send(node, Lane::Control, body)
        };
        if let Err(e) = sent {
            tracing::debug!(to = %node, items = items.len(), "batch not sent: {e}");
            if let Some(entry) = self.pending.remove(id) {
                entry.fail(send_error(e, node));
            }
        }
    }

    /// Sends replies to some items of batch `request_id` from `to`'s
    /// request, as [`NetRemote::send_reply`] sends one: halves above the
    /// frame limit go as replies of their own; an item's reply that cannot
    /// be sent is replaced by a `TooLarge` error of the same kind.
    pub(super) fn send_batch_replies(
        &self,
        to: &NodeName,
        request_id: u64,
        mut replies: Vec<wire::BatchReply>,
    ) {
        let _entered = self.enter_runtime();
        let frame_max = self.transport.config().frame_body_bytes_max;
        let sent = match wire::encode_batch_replies(request_id, &replies) {
            Ok(body) if body.len() > frame_max && replies.len() > 1 => {
                let rest = replies.split_off(replies.len() / 2);
                self.send_batch_replies(to, request_id, replies);
                return self.send_batch_replies(to, request_id, rest);
            }
            Ok(body) => self.try_send_reply(to, body),
            Err(e) => Err(too_large(e)),
        };
        let Err(e) = sent else { return };
        let refusals: Vec<wire::BatchReply> = replies
            .into_iter()
            .map(|r| wire::BatchReply {
                reply: match r.reply {
                    VnodeReply::Get(_) => VnodeReply::Get(Err(wire::copy_error(&e))),
                    _ => VnodeReply::Put(Err(wire::copy_error(&e))),
                },
                ..r
            })
            .collect();
        if let Ok(body) = wire::encode_batch_replies(request_id, &refusals) {
            let _ = self.try_send_reply(to, body);
        }
    }
}

/// The replies of one batch, gathered until a batch reply's worth.
pub(super) struct Collector {
    remote: Arc<NetRemote>,
    to: NodeName,
    request_id: u64,
    gathered: Mutex<Gathered>,
}

struct Gathered {
    replies: Vec<wire::BatchReply>,
    bytes: usize,
    /// Items not answered yet.
    left: usize,
}

impl Collector {
    /// Where each of the `items` items' replies of batch `request_id`
    /// from `to` go, in the batch's order.
    pub(super) fn reply_tos(
        remote: &Arc<NetRemote>,
        to: NodeName,
        request_id: u64,
        items: usize,
    ) -> Vec<ReplyTo> {
        let collector = Arc::new(Collector {
            remote: remote.clone(),
            to: to.clone(),
            request_id,
            gathered: Mutex::new(Gathered {
                replies: Vec::new(),
                bytes: 0,
                left: items,
            }),
        });
        (0..items)
            .map(|index| ReplyTo::Remote {
                node: to.clone(),
                request_id,
                route: Arc::new(ItemRoute {
                    collector: collector.clone(),
                    index: index as u32,
                }),
            })
            .collect()
    }

    fn add(&self, index: u32, reply: Reply) {
        let size = 12 + wire::reply_size_hint(&reply.reply);
        let mut g = self.gathered.lock();
        g.replies.push(wire::BatchReply {
            index,
            partition: reply.partition,
            reply: reply.reply,
        });
        g.bytes += size;
        g.left = g.left.saturating_sub(1);
        let full = g.bytes >= BATCH_REPLY_BYTES || g.replies.len() >= wire::BATCH_ITEMS_MAX;
        if g.left > 0 && !full {
            return;
        }
        let replies = std::mem::take(&mut g.replies);
        g.bytes = 0;
        drop(g);
        self.remote
            .send_batch_replies(&self.to, self.request_id, replies);
    }
}

/// One item's route back: its place in the batch.
struct ItemRoute {
    collector: Arc<Collector>,
    index: u32,
}

impl ReplyRoute for ItemRoute {
    fn reply(&self, _node: &NodeName, _request_id: u64, reply: Reply) {
        self.collector.add(self.index, reply);
    }
}

impl fmt::Debug for ItemRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemRoute")
            .field("to", &self.collector.to)
            .field("request_id", &self.collector.request_id)
            .field("index", &self.index)
            .finish()
    }
}
