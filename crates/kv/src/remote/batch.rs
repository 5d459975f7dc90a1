//! A batch from another node, on the receiving side: each item gets a
//! `ReplyTo` whose route hands its reply to the batch's [`Collector`],
//! which sends the gathered replies back to the batch's coordinator in
//! batch replies: one as soon as the gathered replies pass
//! [`BATCH_REPLY_BYTES`] (or [`wire::BATCH_ITEMS_MAX`] items), and one with
//! the rest once every item answered.
//!
//! Invariant: every item's reply is sent exactly once (each item is
//! answered exactly once by its vnode or the router), so the node holds at
//! most one batch reply's worth of a batch's replies at a time, plus the
//! item being answered.

use std::fmt;
use std::sync::Arc;

use eddy_net::NodeName;
use parking_lot::Mutex;

use super::{BATCH_REPLY_BYTES, NetRemote, wire};
use crate::vnode::reply::{Reply, ReplyRoute, ReplyTo};

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
